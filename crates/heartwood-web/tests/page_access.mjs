// Drives the page as a researcher coming back to a session, for tests/page_access.rs.
// Usage: node page_access.mjs BASE SECRET SESSION SHOTS (NODE_PATH must reach playwright-core).
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const [base, secret, session, shots] = process.argv.slice(2);
const patience = Number(process.env.PATIENCE_MS || 20000);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const say = (at, what) => console.log(at + ": " + what);
const sessionUrl = base + "s/" + session;
let failed = false;
for (const width of [390, 800, 1440]) {
  for (const scheme of ["light", "dark"]) {
    const at = width + " px " + scheme;
    // A fresh browser each time: no cookie, nothing seen.
    const context = await browser.newContext({ viewport: { width, height: width === 390 ? 844 : 900 }, colorScheme: scheme });
    const page = await context.newPage();
    try {
      const first = await page.goto(sessionUrl);
      if (first.status() === 401 && await page.isVisible("#token")) say(at, "bookmark asks for the token: " + first.status());
      await page.fill("#token", secret);
      await Promise.all([page.waitForURL(u => u.pathname === "/s/" + session, { timeout: patience }), page.click("button[type=submit]")]);
      if (!page.url().includes("token=")) say(at, "the token form lands on the session");
      await page.waitForSelector("#review:not([hidden]) #review-members .preview", { timeout: patience });
      const top = await page.evaluate(() => document.querySelector("#review").getBoundingClientRect().top);
      const height = await page.evaluate(() => window.innerHeight);
      if (top >= 0 && top < height) say(at, "the set is in view");
      else say(at, "the set is out of view: top " + top + " of " + height);
      const header = await page.textContent("header");
      if (!/platform|sandbox|seccomp|bubblewrap/i.test(header)) say(at, "no platform details at the top");
      else say(at, "the header says: " + header);
      // Allow waits for every member; while it does, it must look disabled.
      if (await page.isDisabled("#allow")) {
        const look = await page.evaluate(() => {
          const s = getComputedStyle(document.querySelector("#allow"));
          const accent = getComputedStyle(document.documentElement).getPropertyValue("--accent").trim();
          const probe = document.createElement("div"); probe.style.color = accent; document.body.append(probe);
          const accentRgb = getComputedStyle(probe).color; probe.remove();
          return { background: s.backgroundColor, border: s.borderStyle, accent: accentRgb, opacity: s.opacity };
        });
        if (look.background !== look.accent && look.border === "dashed") say(at, "disabled Allow looks disabled");
        else say(at, "disabled Allow looks like: " + JSON.stringify(look));
      }
      await page.screenshot({ path: shots + "/page-bookmark-" + width + "-" + scheme + ".png" });
      // The keyboard alone: End scrolls the review's list to its last member; Allow can then
      // be reached (it is enabled once every member was on screen).
      await page.evaluate(() => { if (document.activeElement) document.activeElement.blur(); });
      for (let i = 0; i < 12 && await page.isDisabled("#allow"); i++) {
        await page.keyboard.press("PageDown");
        await page.waitForTimeout(100);
      }
      await page.keyboard.press("End");
      await page.waitForSelector("#allow:not([disabled])", { timeout: patience });
      say(at, "End reached Allow");
      // A launch link to the session's own address lands on it, not on the start page.
      const fresh = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: scheme });
      const other = await fresh.newPage();
      await other.goto(sessionUrl + "?token=" + secret);
      if (new URL(other.url()).pathname === "/s/" + session && !other.url().includes("token=")) say(at, "the launch link lands on the session");
      else say(at, "the launch link landed on " + other.url().replace(secret, "…"));
      await fresh.close();
    } catch (error) {
      failed = true;
      console.error(at + ": " + String(error));
      await page.screenshot({ path: shots + "/page-bookmark-failed.png", fullPage: true }).catch(() => {});
    }
    await context.close();
  }
}
await browser.close();
if (failed) process.exit(1);
