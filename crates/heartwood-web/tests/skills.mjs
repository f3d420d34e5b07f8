// Reviews, approves and activates a skill on the page in headless Chromium, for
// tests/browser.rs. Usage: node skills.mjs URL SCREENSHOT (NODE_PATH must reach playwright-core)
import { scenario, step } from "./chromium.mjs";

const [url, screenshot] = process.argv.slice(2);
await scenario({ width: 1280, height: 900 }, screenshot, async (page) => {
  const patience = 20000;
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
});
