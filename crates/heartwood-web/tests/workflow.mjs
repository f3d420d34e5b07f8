// Drives a workflow run's stages in the page in headless Chromium, for tests/browser.rs:
// run each stage (the set is allowed in the review), check it, accept it with two clicks,
// and at the model stage look at the judged model's picture and a bound file's preview.
// Usage: node workflow.mjs URL QUESTION SCREENSHOT   (NODE_PATH must reach playwright-core)
import { allowSet, scenario, step } from "./chromium.mjs";

const [url, question, screenshot] = process.argv.slice(2);
await scenario({ width: 1280, height: 800 }, screenshot, async (page) => {
  const stageStatus = (id) => page.getAttribute(`#wf-stages li[data-stage="${id}"]`, "class");
  const waitStage = (id, status) => page.waitForFunction(([id, status]) =>
    (document.querySelector(`#wf-stages li[data-stage="${id}"]`)?.className || "").includes(status), [id, status], { timeout: 20000 });
  await page.goto(url);
  // The run starts from the page: a definition from the catalog and the question.
  await page.click("#new-workflow summary");
  await page.waitForSelector('#workflow-definition option[value="tabular-ols"]', { state: "attached", timeout: 20000 });
  await page.selectOption("#workflow-definition", "tabular-ols");
  await page.fill("#workflow-question", question);
  await page.click("#workflow-start");
  await page.waitForSelector("#workflow:not([hidden])", { timeout: 20000 });
  await page.waitForFunction((q) => document.querySelector("#sessions button strong")?.textContent === q, question, { timeout: 20000 });
  console.log("session: " + await page.evaluate(() => document.querySelector("#sessions button").dataset.session));
  step("panel shown: " + await page.textContent("#wf-title"));
  for (const stage of ["readiness", "plan", "split", "model"]) {
    await page.click('#wf-controls button[data-command="workflow_run"]');
    await page.waitForSelector("#review:not([hidden]) #review-members .preview", { timeout: 20000 });
    if (stage === "readiness") {
      // Above the stage's long prompt and the run's panel, the set and its decision are on
      // screen at 1280×800 without scrolling.
      await page.evaluate(() => window.scrollTo(0, 0));
      const offScreen = await page.evaluate(() => ["#review-members .preview", "#allow", "#reject"].filter(s => {
        const r = document.querySelector(s).getBoundingClientRect();
        return !(r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth);
      }));
      if (offScreen.length) throw new Error("off screen at 1280×800 without scrolling: " + offScreen.join(", "));
      step("the set and its decision are on screen at 1280×800");
    }
    await allowSet(page);
    await page.waitForSelector('#wf-controls button[data-command="workflow_evaluate"]', { timeout: 20000 });
    step(stage + ": turn says " + await page.textContent("#wf-turn"));
    await page.click('#wf-controls button[data-command="workflow_evaluate"]');
    if (stage === "split") {
      // No acceptance asked: eligible checks advance the run.
      await waitStage("split", "accepted");
      step("split accepted by its checks");
      continue;
    }
    await page.waitForSelector('#wf-controls button[data-command="workflow_accept"]', { timeout: 20000 });
    step(stage + ": " + await page.textContent("#wf-checks-title"));
    if (stage === "model") {
      await page.waitForFunction(() => { const i = document.querySelector("#wf-figure"); return i && !i.hidden && i.naturalWidth > 0; }, null, { timeout: 20000 });
      step("figure drawn, " + await page.evaluate(() => document.querySelector("#wf-figure").naturalWidth) + " px wide");
      // Its figures are written beside it, as text; on a phone the picture scrolls sideways
      // rather than shrinking its labels out of legibility.
      await page.waitForSelector("#wf-figure-values:not([hidden]) dd", { timeout: 20000 });
      const values = await page.evaluate(() => [...document.querySelectorAll("#wf-figure-values dt")].map(dt => dt.textContent + " " + dt.nextElementSibling.textContent));
      if (!values.some(v => /^slope \(training rows\) -?\d/.test(v)) || !values.some(v => /^held-out RMSE \d/.test(v))) throw new Error("figures beside the picture: " + JSON.stringify(values));
      step("figures beside the picture: " + values.join("; "));
      await page.setViewportSize({ width: 390, height: 844 });
      const phone = await page.evaluate(() => {
        const img = document.querySelector("#wf-figure"), dd = document.querySelector("#wf-figure-values dd");
        return { scale: img.getBoundingClientRect().width / img.naturalWidth, text: parseFloat(getComputedStyle(dd).fontSize), page: document.documentElement.scrollWidth };
      });
      // 13 px labels drawn at no less than 0.85 of their size, the figures at the body's size,
      // and the page itself no wider than the phone (only the picture's frame scrolls).
      if (phone.scale < 0.85 || phone.text < 14 || phone.page > 390) throw new Error("at 390 px: " + JSON.stringify(phone));
      step("at 390 px: picture at " + phone.scale.toFixed(2) + "× with its figures in " + phone.text + " px text");
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.click('#wf-files button:text-is("outputs/model.json")');
      await page.waitForSelector("#wf-preview-head .evidence", { timeout: 20000 });
      step("preview: " + await page.textContent("#wf-preview-head"));
      const budget = await page.textContent("#wf-budget");
      step("budget: " + budget.replace(/\s+/g, " "));
      // A review: the reviewer's claims are shown apart from what Heartwood verified.
      await page.click('#wf-controls button[data-command="workflow_review"]');
      await page.waitForSelector("#review:not([hidden]) #review-members .preview", { timeout: 20000 });
      await allowSet(page);
      await page.waitForFunction(() => [...document.querySelectorAll("#wf-proposals li")].some(li => li.textContent.includes("not observed")), null, { timeout: 20000 });
      step("findings: " + await page.textContent("#wf-findings"));
      step("proposals: " + await page.textContent("#wf-proposals"));
      await page.waitForSelector('#wf-controls button[data-command="workflow_accept"]', { timeout: 20000 });
      await page.screenshot({ path: screenshot, fullPage: true });
    }
    // Accepting is the primary button and takes one click (bound to what is shown).
    const accept = '#wf-controls button[data-command="workflow_accept"]';
    const classes = (await page.getAttribute(accept, "class")) || "";
    if (!classes.includes("primary")) throw new Error("Accept is not the primary button: " + classes);
    await page.click(accept);
    await waitStage(stage, "accepted");
    step(stage + " accepted");
    if (stage === "readiness") {
      // Issue 57: the run exports as a Provenance Run RO-Crate from the page.
      await page.click("#export-crate");
      await page.waitForFunction(() => document.querySelector("#notice").textContent.length > 0, null, { timeout: 20000 });
      step("exported: " + await page.textContent("#notice"));
    }
    if (stage === "model") {
      // The accepted model stays in the picture while the next stages run.
      await page.waitForFunction(() => { const i = document.querySelector("#wf-figure"); return i && !i.hidden && i.naturalWidth > 0; }, null, { timeout: 20000 });
      step("figure kept after the model stage");
    }
  }
});
