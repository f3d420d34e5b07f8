// Drives the page in headless Chromium (Debian's), for tests/browser.rs.
// Usage: node browser.mjs URL SCREENSHOT   (NODE_PATH must reach playwright-core; PATIENCE_MS
// is how long a step may take, 20 s unless set: the OpenHands engine starts a server first)
import { allowSet, scenario, step } from "./chromium.mjs";

const [url, screenshot] = process.argv.slice(2);
const patience = Number(process.env.PATIENCE_MS || 20000);
await scenario({ width: 1280, height: 800 }, screenshot, async (page) => {
  await page.goto(url);
  step("opened " + page.url());
  if (page.url().includes("token=")) throw new Error("the token stayed in the URL");
  // The startup line shows the gateway's platform headline and its automation decision.
  await page.waitForFunction(() => document.querySelector("#startup").textContent.includes("Platform: generic"), null, { timeout: patience });
  step("startup: " + await page.textContent("#startup"));
  if (!(await page.textContent("#startup")).includes("Low-risk automation allowed")) throw new Error("the route's automation decision is not shown");
  await page.click("#new-session");
  await page.fill("#text", "write ran.txt");
  await page.click("#send");
  await page.waitForSelector("#review:not([hidden])", { timeout: patience });
  const first = await page.locator("#review-members li").count();
  step("first set has " + first + " members");
  if (first !== 2) throw new Error("expected a two-member set, saw " + first);
  await page.fill("#reason", "append to notes.txt instead");
  // The next set arrives while the review is out of view (a short window, scrolled to the
  // top, Reject pressed without scrolling to it): Allow waits until each member was on
  // screen, and says which are not yet.
  await page.setViewportSize({ width: 1280, height: 160 });
  await page.evaluate(() => { window.scrollTo(0, 0); document.querySelector("#reject").click(); });
  await page.waitForFunction(() => document.querySelector("#review-set").textContent.includes("set") &&
      !document.querySelector("#review").hidden &&
      [...document.querySelectorAll("#review-members li")].some(li => li.textContent.includes("B1")), null, { timeout: patience });
  step("the agent continued with a second set");
  // The edit is reviewed as a diff, with its headline from the model's summary.
  await page.waitForSelector("#review-members .preview .add", { timeout: patience });
  const removed = await page.textContent("#review-members .preview .del");
  const added = await page.textContent("#review-members .preview .add");
  step("diff shown: " + removed.trim() + " " + added.trim());
  if (!(await page.textContent("#review-members")).includes("mark the notes final")) throw new Error("the model's summary is not the headline");
  if (!(await page.isDisabled("#allow"))) throw new Error("Allow was enabled with members never on screen");
  const unseen = await page.textContent("#unseen");
  step("before reading: " + unseen);
  if (!unseen.includes("2 of 2 not shown yet")) throw new Error("the page did not say the members were unseen: " + unseen);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: screenshot.replace(/\.png$/, "-review.png"), fullPage: true });
  await allowSet(page);
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Finished"), null, { timeout: patience });
  step("finished: " + await page.textContent("#status"));
  // The agent's Markdown is formatted, not shown as markup.
  const bold = await page.textContent("#conversation .md strong");
  if (bold !== "Wrote") throw new Error("no bold text in the agent's message: " + bold);
  if ((await page.locator("#conversation .md li code").count()) !== 1) throw new Error("no list with inline code");
  const shown = await page.evaluate(() => [...document.querySelectorAll("#conversation .msg, #conversation .action > div:not(.msg)")].map(e => e.textContent).join("\n"));
  if (shown.includes("**")) throw new Error("raw markup shown: " + shown);
  await page.screenshot({ path: screenshot, fullPage: true });
  const session = await page.evaluate(() => [...document.querySelectorAll("#sessions button")].map(b => b.dataset.session)[0]);
  const title = await page.textContent("#sessions button strong");
  if (title !== "write ran.txt") throw new Error("the session list shows no title: " + title);
  // The changed files: without Git, the session's own edits, and the edit as a diff.
  await page.click("#files-panel summary");
  await page.waitForSelector("#files button", { timeout: patience });
  const files = await page.textContent("#files");
  step("files: " + (await page.textContent("#files-summary")) + " | " + files);
  if (!files.includes("notes.txt")) throw new Error("the edited file is not listed: " + files);
  await page.click('#files button[data-path="notes.txt"]');
  await page.waitForSelector("#file-diff .add", { timeout: patience });
  step("diff: " + (await page.textContent("#file-diff")).replace(/\s+/g, " ").slice(0, 160));
  // The session has its own address; a reload (or a bookmark) opens it again.
  if (!page.url().endsWith("/s/" + session)) throw new Error("the session's address is not the page's: " + page.url());
  await page.reload();
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Finished"), null, { timeout: patience });
  step("reloaded at " + page.url() + ": " + await page.textContent("#status"));
  console.log("session: " + session);
});
