// The page's core loop at a phone, a small laptop and a desktop width, for tests/browser.rs:
// at each width a task runs to a pending set, nothing on the page is wider than the window, the
// set's decision is on screen without scrolling, axe-core finds no serious or critical
// violation (light and dark), a screenshot is saved, and the set is allowed to the end.
// Usage: node layout.mjs URL SCREENSHOT_DIR   (NODE_PATH must reach playwright-core and axe-core)
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { scenario, step } from "./chromium.mjs";

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const [url, dir] = process.argv.slice(2);
const patience = Number(process.env.PATIENCE_MS || 20000);

// Elements whose right edge passes the window's, and whether the document scrolls sideways.
async function overflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll("body *")].filter(e => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && r.right > width + 1 && getComputedStyle(e).position !== "fixed";
    }).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + String(e.className).split(" ")[0] : ""));
    return { scrolls: document.documentElement.scrollWidth > width, wide: wide.slice(0, 8) };
  });
}

// axe-core's serious and critical violations, one line each.
async function accessibility(page) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations);
  return violations.filter(v => v.impact === "serious" || v.impact === "critical")
    .map(v => v.id + " (" + v.impact + "): " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", "));
}

// Whether the element is wholly inside the window as it stands (nothing scrolled).
const inView = (page, selector) => page.$eval(selector, e => {
  const r = e.getBoundingClientRect();
  return r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;
});

for (const [width, height] of [[390, 844], [800, 800], [1440, 900]]) {
  await scenario({ width, height }, `${dir}/page-${width}-failed.png`, async (page) => {
    await page.goto(url);
    await page.waitForFunction(() => !document.querySelector("#startup").textContent.startsWith("Reading"), null, { timeout: patience });
    const empty = await page.textContent("#conversation");
    if (!empty.includes("Choose a session")) throw new Error("no empty state before a session: " + empty);
    await page.click("#new-session");
    await page.fill("#text", "write ran.txt at " + width + " px");
    // Enter sends, as in the terminal interface.
    await page.press("#text", "Enter");
    await page.waitForSelector("#review:not([hidden]) #review-members .preview", { timeout: patience });
    await page.evaluate(() => window.scrollTo(0, 0));
    const { scrolls, wide } = await overflow(page);
    step(width + " px: scrolls sideways " + scrolls + ", wider than the window: " + JSON.stringify(wide));
    if (scrolls || wide.length) throw new Error("the page is wider than the window at " + width + " px: " + wide.join(", "));
    if (width >= 800) {
      for (const selector of ["#review-members .preview", "#allow", "#reject"]) {
        if (!(await inView(page, selector))) throw new Error(selector + " is off screen at " + width + "×" + height);
      }
      step(width + " px: the set's first preview, Allow and Reject are on screen without scrolling");
    }
    const light = await accessibility(page);
    step(width + " px: axe serious or critical (light): " + light.length);
    if (light.length) throw new Error("accessibility: " + light.join(" | "));
    await page.screenshot({ path: `${dir}/page-${width}.png` });
    await page.emulateMedia({ colorScheme: "dark" });
    const dark = await accessibility(page);
    step(width + " px: axe serious or critical (dark): " + dark.length);
    if (dark.length) throw new Error("accessibility (dark): " + dark.join(" | "));
    await page.screenshot({ path: `${dir}/page-${width}-dark.png` });
    await page.emulateMedia({ colorScheme: "light" });
    // The keys match the terminal's: `a` moves to Allow, Enter decides (once every member
    // was on screen).
    for (const end of await page.locator("#review-members li > span:last-child").all()) await end.scrollIntoViewIfNeeded();
    await page.waitForSelector("#allow:not([disabled])", { timeout: patience });
    await page.locator("body").focus();
    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    await page.keyboard.press("a");
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
    if (focused !== "allow") throw new Error("`a` did not move to Allow: " + focused);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Finished"), null, { timeout: patience });
    step(width + " px: " + await page.textContent("#status"));
    const after = await overflow(page);
    if (after.scrolls || after.wide.length) throw new Error("wider than the window after the run at " + width + " px: " + after.wide.join(", "));
  });
}
