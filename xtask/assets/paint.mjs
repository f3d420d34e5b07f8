// `cargo xtask bench page`: loads the page RUNS times in a fresh headless Chromium page each and
// prints each load's first contentful paint and DOMContentLoaded, in milliseconds, one JSON line.
// Usage: node paint.mjs URL RUNS   (NODE_PATH must reach playwright-core)
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const [url, runs] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
const paints = [], loaded = [];
for (let i = 0; i < Number(runs); i++) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => performance.getEntriesByName("first-contentful-paint").length > 0);
  const [paint, ready] = await page.evaluate(() => [
    performance.getEntriesByName("first-contentful-paint")[0].startTime,
    performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd,
  ]);
  paints.push(paint); loaded.push(ready);
  await page.close();
}
await browser.close();
console.log(JSON.stringify({ paints, loaded }));
