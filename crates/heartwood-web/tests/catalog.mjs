// The trusted model catalog on the page in headless Chromium, for tests/model_catalog.rs: the
// entries with the gateway's lines, a review of one entry's exact manifest, a refused download
// (a licence decision for another manifest), the accepted download's progress to its end, and
// the same record after a reload.
// Usage: node catalog.mjs URL SCREENSHOT   (NODE_PATH must reach playwright-core)
import { scenario, step } from "./chromium.mjs";

const [url, screenshot] = process.argv.slice(2);
const patience = Number(process.env.PATIENCE_MS || 20000);
await scenario({ width: 1280, height: 900 }, screenshot, async (page) => {
  await page.goto(url);
  await page.click("#models-panel summary");
  await page.waitForSelector('#model-catalog li[data-catalog="tiny"] button', { timeout: patience });
  step("tiny: " + (await page.textContent('#model-catalog li[data-catalog="tiny"]')));
  step("huge: " + (await page.textContent('#model-catalog li[data-catalog="huge"]')));
  if (await page.locator('#model-catalog li[data-catalog="huge"] button').count()) throw new Error("a model that does not fit is offered for review");
  await page.click('#model-catalog li[data-catalog="tiny"] button');
  await page.waitForSelector("#model-review:not([hidden])", { timeout: patience });
  step("review: " + (await page.textContent("#model-review")).replace(/\s+/g, " "));
  // A decision for any other manifest starts nothing.
  const refused = await page.evaluate(async (base) => {
    const r = await fetch(base + "api/models/download", { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ catalog: "tiny", accept_license: "0".repeat(64) }) });
    return r.status + " " + (await r.text());
  }, new URL(url).origin + "/");
  step("refused: " + refused.trim());
  await page.click("#model-accept");
  await page.waitForFunction(() => document.querySelector("#model-notice").textContent.startsWith("Downloading"), null, { timeout: patience });
  step("notice: " + await page.textContent("#model-notice"));
  await page.waitForFunction(() => [...document.querySelectorAll("#transfers .transfer")].some(r => r.textContent.includes("download tiny: done")), null, { timeout: patience });
  await page.waitForSelector('#models li[data-model="tiny"]', { timeout: patience });
  step("stored: " + await page.textContent('#models li[data-model="tiny"]'));
  await page.screenshot({ path: screenshot, fullPage: true });
  await page.reload();
  await page.click("#models-panel summary");
  await page.waitForFunction(() => [...document.querySelectorAll("#transfers .transfer")].some(r => r.textContent.includes("download tiny: done")), null, { timeout: patience });
  await page.waitForFunction(() => (document.querySelector('#model-catalog li[data-catalog="tiny"]')?.textContent || "").includes("stored"), null, { timeout: patience });
  step("after a reload: " + (await page.textContent("#transfers")).trim() + " | " + await page.textContent('#model-catalog li[data-catalog="tiny"]'));
  // A repository inspected at a revision (issue 56 item 3: not only catalog entries): the same
  // review of its exact manifest, the licence accepted by that manifest's SHA-256, the download.
  await page.fill("#repo-name", "heartwood-tests/other-GGUF");
  await page.fill("#repo-revision", "main");
  await page.click('#repo-inspect button[type="submit"]');
  await page.waitForFunction(() => (document.querySelector("#model-review-name")?.textContent || "").includes("other-gguf"), null, { timeout: patience });
  step("repository review: " + (await page.textContent("#model-review")).replace(/\s+/g, " "));
  await page.click("#model-accept");
  await page.waitForSelector('#models li[data-model="other-gguf"]', { timeout: patience });
  step("repository stored: " + await page.textContent('#models li[data-model="other-gguf"]'));
});
