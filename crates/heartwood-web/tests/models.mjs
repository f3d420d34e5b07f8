// Local models on the page in headless Chromium, for tests/browser.rs: the model's line (with
// its validation), a transfer's live progress, then its end.
// Usage: node models.mjs URL SCREENSHOT SEEN_FILE (NODE_PATH must reach playwright-core)
import { writeFileSync } from "node:fs";
import { scenario, step } from "./chromium.mjs";

const [url, screenshot, seenFile] = process.argv.slice(2);
await scenario({ width: 1280, height: 900 }, screenshot, async (page) => {
  const patience = 20000;
  await page.goto(url);
  await page.click("#models-panel summary");
  await page.waitForSelector('#models li[data-model="tiny"]', { timeout: patience });
  step("model: " + (await page.textContent('#models li[data-model="tiny"]')));
  const row = (text) => page.locator("#transfers .transfer", { hasText: text }).first();
  await page.waitForFunction(() => [...document.querySelectorAll("#transfers .transfer")].some(r => r.textContent.includes("40%") && r.querySelector("progress")), null, { timeout: patience });
  step("moving: " + (await row("40%").textContent()).trim());
  // Issue 56 item 3: a running transfer is cancelled from the page, whichever process runs it.
  const slow = page.locator("#transfers .transfer", { hasText: "download slow" }).first();
  await slow.locator("button", { hasText: "Cancel" }).click();
  await page.waitForFunction(() => [...document.querySelectorAll("#transfers .transfer")].some(r => r.textContent.includes("download slow: cancelled")), null, { timeout: patience });
  step("cancelled: " + (await page.locator("#transfers .transfer", { hasText: "download slow" }).first().textContent()).trim());
  writeFileSync(seenFile, "seen");
  await page.waitForFunction(() => [...document.querySelectorAll("#transfers .transfer")].some(r => r.textContent.includes("download tiny: done")), null, { timeout: patience });
  step("ended: " + (await row("download tiny: done").textContent()).trim());
  await page.screenshot({ path: screenshot, fullPage: true });
});
