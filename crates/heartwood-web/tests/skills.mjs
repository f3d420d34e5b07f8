// Reviews, approves and activates a skill on the page in headless Chromium, for
// tests/browser.rs. Usage: node skills.mjs URL SCREENSHOT (NODE_PATH must reach playwright-core)
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const [url, screenshot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const step = (what) => console.log("step: " + what);
const patience = 20000;
try {
  await page.goto(url);
  await page.click("#skills-panel summary");
  await page.waitForSelector('#skills button[data-skill="check-units"]', { timeout: patience });
  step("listed: " + (await page.textContent('#skills button[data-skill="check-units"]')));
  await page.click('#skills button[data-skill="check-units"]');
  await page.waitForSelector("#skill-detail:not([hidden])", { timeout: patience });
  await page.waitForFunction(() => document.querySelector("#skill-md").textContent.includes("UNITS-BODY"), null, { timeout: patience });
  step("files: " + [...(await page.locator("#skill-files li").allTextContents())].join(" | "));
  step("digest: " + (await page.textContent("#skill-digest")));
  step("source: " + (await page.textContent("#skill-source")));
  await page.click("#skill-approve");
  await page.waitForFunction(() => document.querySelector("#skill-status").textContent === "approved, not active", null, { timeout: patience });
  step("approved");
  await page.click("#skill-activate");
  await page.waitForFunction(() => document.querySelector("#skill-status").textContent === "active", null, { timeout: patience });
  step("active");
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (error) {
  await page.screenshot({ path: screenshot, fullPage: true }).catch(() => {});
  console.error(String(error));
  await browser.close();
  process.exit(1);
}
await browser.close();
