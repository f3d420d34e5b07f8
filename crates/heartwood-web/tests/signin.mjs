// Signs in with a ChatGPT subscription on the page in headless Chromium, for tests/browser.rs:
// the device code and its page are shown, the page polls the gateway, and the sign-in ends with
// the account named. Usage: node signin.mjs URL SCREENSHOT (NODE_PATH must reach playwright-core)
import { scenario, step } from "./chromium.mjs";

const [url, screenshot] = process.argv.slice(2);
await scenario({ width: 1280, height: 900 }, screenshot, async (page) => {
  const patience = 20000;
  await page.goto(url);
  await page.click("#signin-panel summary");
  await page.click("#signin");
  await page.waitForSelector("#signin-status .user-code", { timeout: patience });
  step("code: " + (await page.textContent("#signin-status .user-code")));
  step("link: " + (await page.getAttribute("#signin-status a", "href")));
  await page.screenshot({ path: screenshot.replace(/\.png$/, "-code.png"), fullPage: true });
  await page.waitForFunction(() => document.querySelector("#signin-status").textContent.startsWith("Signed in"), null, { timeout: patience });
  step("status: " + (await page.textContent("#signin-status")));
  await page.screenshot({ path: screenshot, fullPage: true });
});
