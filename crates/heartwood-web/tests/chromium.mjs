// Shared by the page's Chromium tests: Debian's Chromium through playwright-core (NODE_PATH must
// reach it), and one scenario run that, when a step fails, saves a screenshot, prints the error
// and exits 1.
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

export const step = (what) => console.log("step: " + what);

export async function scenario(viewport, screenshot, body) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport });
  try {
    await body(page);
  } catch (error) {
    await page.screenshot({ path: screenshot, fullPage: true }).catch(() => {});
    console.error(String(error));
    await browser.close();
    process.exit(1);
  }
  await browser.close();
}

// Allows the pending set as a researcher does: every member is scrolled into view to its end
// first (Allow stays disabled until each was on screen), then Allow is clicked. Returns how
// many members were still unseen before reading, as the page said.
export async function allowSet(page, timeout = 20000) {
  const before = (await page.textContent("#unseen")) || "";
  // The list may be drawn again while it is read (a later update of the same set): a member
  // replaced under the scroll is looked up again, as a reader's eyes would find it.
  for (const end of await page.locator("#review-members li > span:last-child").all()) {
    for (let attempt = 1; ; attempt++) {
      try {
        await end.scrollIntoViewIfNeeded({ timeout: 5000 });
        break;
      } catch (error) {
        if (attempt >= 4 || !String(error).includes("not attached")) throw error;
      }
    }
  }
  await page.waitForSelector("#allow:not([disabled])", { timeout });
  if ((await page.textContent("#unseen")) !== "") throw new Error("members still unseen after reading them all");
  await page.click("#allow");
  return before;
}
