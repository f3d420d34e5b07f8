// @ts-check
"use strict";
// Renders the gateway's projection and submits typed commands; keeps no reducer. The types are
// the gateway's, generated from its JSON Schemas (`cargo xtask schema`); `tsc` checks this file
// against them (crates/heartwood-web/tests/types.rs).
/** @typedef {import("../../../docs/schema/heartwood").SessionProjection} SessionProjection */
/** @typedef {import("../../../docs/schema/heartwood").Review} Review */
/** @typedef {import("../../../docs/schema/heartwood").ToolOutput} ToolOutput */
/** @typedef {import("../../../docs/schema/heartwood").WorkflowView} WorkflowView */
/** @typedef {import("../../../docs/schema/heartwood").Snapshot} Snapshot */
/** @typedef {import("../../../docs/schema/heartwood").ActionSet} ActionSet */
/** @typedef {import("../../../docs/schema/heartwood").StartupPlan} StartupPlan */
/** @typedef {import("../../../docs/schema/heartwood").SessionRow} SessionRow */
/** @typedef {import("../../../docs/schema/heartwood").CatalogEntry} CatalogEntry */
/** @typedef {import("../../../docs/schema/heartwood").Preview} Preview */
/** @typedef {import("../../../docs/schema/heartwood").Block} Block */
/** @typedef {import("../../../docs/schema/heartwood").HttpApi} HttpApi */
/** What route `R` answers, from the server's own route table. @template {keyof HttpApi} R @typedef {HttpApi[R]["answer"]} Answer */
const base = /** @type {HTMLMetaElement} */ (document.querySelector('meta[name="heartwood-base"]')).content;
const api = (path) => base + "api/" + path;
/** One of the page's elements by id; the page knows which kind each id is. @type {(id: string) => any} */
const $ = (id) => document.getElementById(id);
let session = null, source = null, projection = null, refreshing = false, again = false, latest = null;
// A running action shows how long it has run: draw again each second while one runs.
setInterval(() => {
  if (latest && latest.projection.actions.some(a => a.state === "running")) render(latest.projection, latest.streaming, latest.review, latest.output);
}, 1000);

// Every request: a network failure (the server stopped) is an answer with status 0 and words
// that say what to do, never an unhandled rejection. The answer's JSON is typed where it is
// used: each route answers its own type.
/** @returns {Promise<{status: number, data: any}>} */
async function call(path, body) {
  const init = body === undefined ? {} : {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  let response;
  try { response = await fetch(api(path), {credentials: "same-origin", ...init}); }
  catch (_) { return {status: 0, data: "The Heartwood server is not answering. Is `heartwood serve` still running in the project? Start it again and reload this page: it keeps its address."}; }
  const text = await response.text();
  let data = text; try { data = JSON.parse(text); } catch (_) {}
  return {status: response.status, data};
}
function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; }

async function loadStartup() {
  const {status: code, data} = await call("status");
  if (code !== 200) { $("startup").textContent = String(data); return; }
  /** @type {StartupPlan} */ const plan = data;
  const automation = plan.route ? " Low-risk automation " + (plan.route.low_risk_automation.allowed ? "allowed: " : "off: ") + plan.route.low_risk_automation.reason + "." : "";
  const sentence = (t) => /[.!?]$/.test(t) ? t : t + ".";
  $("startup").textContent = (plan.phase === "ready" ? "" : sentence(plan.explanation) + " Next: " + sentence(plan.next_action) + " ") + plan.platform.headline + "." + automation;
  // The top of the screen says only what needs doing; the platform's details live with the
  // project's setup in the side column.
  $("startup-next").textContent = plan.phase === "ready" ? "" : sentence(plan.explanation) + " Next: " + sentence(plan.next_action);
}
// ChatGPT sign-in: the gateway holds the device code's handle; the page shows the code and the
// page to open, and polls the gateway until the sign-in is done.
async function loadSignIn() {
  const {status, data: raw} = await call("signin");
  if (status !== 200) return;
  /** @type {Answer<"GET /api/signin">} */ const data = raw;
  if (data.signed_in) $("signin-status").textContent = "Signed in" + (data.signed_in.email ? " as " + data.signed_in.email : "") + ".";
}
async function signIn() {
  const {status, data: raw} = await call("signin", {});
  if (status !== 200) { $("signin-status").textContent = String(raw); return; }
  /** @type {Answer<"POST /api/signin">} */ const data = raw;
  const link = el("a", data.verification_url); link.href = data.verification_url; link.target = "_blank"; link.rel = "noopener";
  $("signin-status").replaceChildren("Open ", link, " and enter the code ", el("strong", data.user_code, "user-code"), " (it expires in " + Math.round(data.expires_in_secs / 60) + " minutes). Waiting for your approval…");
  setTimeout(pollSignIn, 1000);
}
async function pollSignIn() {
  const {status, data: raw} = await call("signin/poll", {});
  if (status !== 200) { $("signin-status").textContent = String(raw); return; }
  /** @type {Answer<"POST /api/signin/poll">} */ const data = raw;
  if (data.state === "waiting") { setTimeout(pollSignIn, data.retry_in_secs * 1000); return; }
  if (data.state === "expired") { $("signin-status").textContent = "The code expired before it was approved; sign in again."; return; }
  $("signin-status").textContent = "Signed in" + (data.email ? " as " + data.email : "") + ".";
  loadStartup();
}
async function loadSessions() {
  const {status, data} = await call("sessions");
  const list = $("sessions"); list.replaceChildren();
  if (status !== 200) { list.append(el("p", String(data), "empty")); return; }
  /** @type {SessionRow[]} */ const rows = data;
  if (!rows.length) list.append(el("p", "No sessions in this project yet. New session starts one; so does a workflow run.", "empty"));
  for (const s of rows) {
    const b = el("button");
    b.dataset.session = s.session;
    if (s.session === session) b.setAttribute("aria-current", "true");
    b.append(el("strong", s.title || "(no task yet)"), el("div", s.session + " — " + s.status_line, "muted"));
    if (s.waits_for) b.dataset.waits = s.waits_for;
    b.onclick = () => openSession(s.session); list.append(b);
  }
}
function markCurrent() {
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("#sessions button"))) {
    if (b.dataset.session === session) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
  }
}
function openSession(id) {
  session = id; projection = null; markCurrent();
  // The session's own address, to bookmark or share (the page opens it on load).
  if (location.pathname !== base + "s/" + id) history.replaceState(null, "", base + "s/" + id);
  if (source) source.close();
  source = new EventSource(api("sessions/" + id + "/events?since=0"), {withCredentials: true});
  source.onmessage = () => refresh();
  source.onerror = () => {};
  refresh();
}
async function refresh() {
  if (!session) return;
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    const {status, data} = await call("sessions/" + session + "/snapshot?since=18446744073709551615");
    /** @type {Snapshot} */ const snapshot = data;
    if (status === 200 || status === 202) { latest = snapshot; render(snapshot.projection, snapshot.streaming, snapshot.review, snapshot.output); }
    else render(null, "", null, null);
  } finally {
    refreshing = false;
    if (again) { again = false; refresh(); }
  }
}
// Draws the gateway's Markdown blocks as elements; text is set as text, never as markup.
function inlines(parent, spans) {
  for (const s of spans) {
    let node = document.createTextNode(s.text);
    if (s.code) { const c = el("code"); c.append(node); node = c; }
    if (s.emphasis) { const e = el("em"); e.append(node); node = e; }
    if (s.strong) { const b = el("strong"); b.append(node); node = b; }
    parent.append(node);
  }
  return parent;
}
/** @param {Block[]} blocks */
function markdown(blocks) {
  const box = el("div", undefined, "md");
  for (const b of blocks) {
    if (b.block === "heading") box.append(inlines(el(b.level <= 2 ? "h3" : "h4"), b.spans));
    else if (b.block === "paragraph") box.append(inlines(el("p"), b.spans));
    else if (b.block === "quote") box.append(inlines(el("blockquote"), b.spans));
    else if (b.block === "list") {
      const list = el(b.start != null ? "ol" : "ul");
      if (b.start != null) list.start = b.start;
      for (const item of b.items) list.append(inlines(el("li"), item));
      box.append(list);
    } else if (b.block === "code") {
      const pre = el("pre");
      if (b.language) pre.append(el("span", b.language, "lang"));
      pre.append(el("code", b.text)); box.append(pre);
    } else if (b.block === "rule") box.append(el("hr"));
  }
  return box;
}
// Draws one member's preview exactly as the gateway computed it (text only, never markup).
/** @param {Preview} pv */
function preview(pv) {
  const box = el("div", undefined, "preview");
  const line = (text, cls) => box.append(el("span", text + "\n", cls));
  const omitted = (n) => { if (n > 0) line("… " + n + " more lines not shown (heartwood sessions show prints them all)", "file"); };
  if (pv.kind === "command") {
    line(pv.context, "file");
    for (const l of pv.command.split("\n")) line((pv.input ? "> " : "$ ") + l);
  } else if (pv.kind === "create") {
    line("new file " + pv.path + " (" + pv.lines + " lines)", "file");
    for (const l of pv.content.replace(/\n$/, "").split("\n")) line("+ " + l, "add");
    omitted(pv.omitted_lines);
  } else if (pv.kind === "diff") {
    if (!pv.unified) { line(pv.path + ": goes back to the agent's copy from before its last edit", "file"); return box; }
    line(pv.path + "  +" + pv.added + " −" + pv.removed, "file");
    for (const l of pv.unified.replace(/\n$/, "").split("\n")) {
      const cls = l.startsWith("+++") || l.startsWith("---") ? "file" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : undefined;
      line(l, cls);
    }
    omitted(pv.omitted_lines);
  } else if (pv.kind === "read") {
    line("reads " + pv.path + (pv.range ? " lines " + pv.range.join("–") : "") + "; changes nothing", "file");
  } else if (pv.kind === "plan") {
    line("the task plan becomes:", "file");
    for (const t of pv.tasks) line("○ " + t.title);
  } else if (pv.kind === "note") {
    line(pv.text);
  } else if (pv.kind === "would_fail") {
    line("would fail: " + pv.reason, "would-fail");
  }
  return box;
}
let listedLifecycle = null;
/**
 * @param {SessionProjection | null} p
 * @param {string} streaming
 * @param {Review | null} reviewed
 * @param {ToolOutput | null} output
 */
function render(p, streaming, reviewed, output) {
  projection = p;
  // The list's rows carry each session's status: refresh them when this one's changes.
  const listed = p ? p.lifecycle + (p.waits_for ? ":" + p.waits_for.kind : "") : "";
  if (p && listed !== listedLifecycle) { listedLifecycle = listed; loadSessions(); }
  const status = $("status");
  status.textContent = p ? p.status_line : session ? "Ready for a task." : "Choose a session or start a new one.";
  // The projection says what waits for the researcher (a decision, a stage's acceptance, ...).
  status.className = p && p.waits_for ? "waiting" : (p && (p.lifecycle === "failed" || p.lifecycle === "stuck") ? "failed" : "");
  const conv = $("conversation"); conv.replaceChildren();
  if (p) {
    const items = p.conversation.map(m => ({seq: m.seq, node: (() => { const d = el("div", undefined, "msg"); d.append(el("span", m.speaker || m.role, "who")); d.append(m.blocks && m.blocks.length ? markdown(m.blocks) : document.createTextNode(m.text)); return d; })()}))
      .concat(p.actions.map(a => ({seq: a.proposed_seq, node: (() => {
        const d = el("div", undefined, "action");
        if (a.thought) d.append(el("div", "agent: " + a.thought, "msg"));
        d.append(el("div", "#" + a.action_id + " " + a.headline + " [" + a.state + "]"));
        if (a.state === "running") {
          const since = a.started_at ? Math.max(0, Math.round((Date.now() - Date.parse(a.started_at)) / 1000)) : 0;
          d.append(el("div", "running for " + since + " s — Stop now kills it", "muted running-for"));
          if (output && output.action_id === a.action_id) d.append(el("pre", output.text.split("\n").slice(-12).join("\n"), "running-output"));
        }
        if (a.detail) { const det = el("details"); det.append(el("summary", a.detail.split("\n")[0]), el("pre", a.detail)); d.append(det); }
        return d; })()})));
    items.sort((x, y) => x.seq - y.seq).forEach(i => conv.append(i.node));
  }
  if (!conv.childElementCount && !streaming) conv.append(el("p", !session
    ? "Nothing open. Choose a session on the left, or press New session and describe a task: the agent's messages and every set of actions it proposes appear here, and nothing runs until you decide."
    : "No messages yet. Describe a task below; the agent's plan and the actions it proposes appear here.", "empty"));
  if (streaming) conv.append(el("div", "agent: " + streaming, "msg streaming"));
  conv.scrollTop = conv.scrollHeight;
  const review = $("review"), set = p && p.pending;
  review.hidden = !set;
  if (set) {
    $("review-title").textContent = set.members.length + " proposed action" + (set.members.length === 1 ? "" : "s") + " — review what each would do";
    $("review-set").textContent = "set " + set.set_id + " · revision " + set.revision;
    const ol = $("review-members"); ol.replaceChildren();
    const members = reviewed && reviewed.revision === set.revision ? reviewed.members : [];
    if (!members.length) ol.append(el("li", "The review is being prepared…", "muted"));
    for (const m of members) {
      const li = el("li"), det = el("details"), sum = el("summary");
      det.open = true;
      sum.append(el("span", "#" + m.action_id + " ", "muted"), el("span", m.headline, "headline"), el("span", m.risk + " risk", "risk " + m.risk));
      if (m.predicted_risk) sum.append(el("span", "model predicts " + m.predicted_risk.toLowerCase(), "muted"));
      det.append(sum, preview(m.preview));
      // The end of each member: once it has been in view, the member was shown whole.
      const end = el("span"); end.dataset.action = m.action_id;
      li.append(det, end); ol.append(li); watchEnd(set, end);
    }
    // A set shown for the first time is brought into view (on a phone the reader may be far
    // below it, at the end of the conversation).
    if (shownSet !== seenKey(set)) {
      shownSet = seenKey(set);
      const top = review.getBoundingClientRect().top;
      if (top < 0 || top > window.innerHeight * 0.5) review.scrollIntoView({block: "start"});
    }
  }
  const allows = (c) => !p ? c === "submit_task" : p.available_commands.includes(c);
  $("allow").disabled = $("reject").disabled = !allows("decide");
  // Allow waits until every member was on screen, as in the terminal interface.
  showUnseen(set);
  $("pause").disabled = !allows("pause"); $("resume").disabled = !allows("resume");
  // A Provenance Run Crate maps a workflow run: the button is there for sessions that run one.
  $("export-crate").hidden = !(p && p.workflow);
  $("export-crate").disabled = !p || !allows("export");
  $("interrupt").disabled = !allows("interrupt");
  $("send").disabled = !(allows("submit_task") || allows("send_guidance"));
  const asTask = !p || p.text_means === "submit_task";
  $("text-label").textContent = asTask ? "Task" : "Guidance";
  $("text").placeholder = asTask
    ? "Describe a task in your own words: check data/cohort.csv for missing values and write a readiness report"
    : "Guidance the agent reads before its next step";
  const plan = $("plan"); plan.replaceChildren();
  for (const t of (p ? p.task_plan : [])) plan.append(el("li", (t.status === "done" ? "✔ " : t.status === "in_progress" ? "▶ " : "○ ") + t.title));
  if (!plan.childElementCount) plan.append(el("li", "The agent has not written a plan yet.", "muted empty-item"));
  const sug = $("suggestions"); sug.replaceChildren();
  // Each step says how to take it: the page's own control for the command, or the shell command.
  const controls = {submit_task: "the message box", send_guidance: "the message box", decide: "Allow all once / Reject all", pause: "Pause", interrupt: "Stop now", resume: "Resume", export: null, close: null};
  for (const s of (p ? p.suggestions : [])) {
    const li = el("li", s.text), how = s.command && controls[s.command] ? controls[s.command] : s.shell;
    if (how) li.append(el("div", how, "muted"));
    sug.append(li);
  }
  renderWorkflow(p && p.workflow);
  $("usage").textContent = p ? p.usage.summary : "No model calls yet.";
}
// The workflow run, as the projection states it; its controls are submitted unchanged.
let armedControl = null, figureFor = null, previewPath = null, previewAt = null;
/** @param {WorkflowView | null} w */
function renderWorkflow(w) {
  const box = $("workflow");
  box.hidden = !w;
  if (!w) return;
  $("wf-title").textContent = w.title + (w.cancelled ? " (cancelled)" : "");
  $("wf-question").textContent = "Question: " + w.question;
  const stages = $("wf-stages"); stages.replaceChildren();
  for (const st of w.stages) {
    const li = el("li", st.title + " — " + st.status.replace(/_/g, " "), "stage " + st.status + (st.id === w.current ? " current" : ""));
    li.dataset.stage = st.id; stages.append(li);
  }
  const controls = $("wf-controls"); controls.replaceChildren();
  for (const c of w.controls) {
    // Accepting is the step the run waits for: the primary button, one click (it is bound to
    // the revision and assessment shown). Cancelling ends the run, so it asks twice.
    const asksTwice = c.command === "workflow_cancel";
    const key = c.command + "@" + c.revision;
    const armed = armedControl === key;
    const b = el("button", armed ? "Click again: " + c.label : c.label, armed ? "armed" : c.command === "workflow_accept" ? "primary" : undefined);
    b.dataset.command = c.command;
    if (c.fingerprint) b.title = "bound to run revision " + c.revision + " and assessment " + c.fingerprint;
    b.onclick = () => {
      if (asksTwice && armedControl !== key) { armedControl = key; renderWorkflow(projection.workflow); return; }
      armedControl = null; command(c.submit);
    };
    controls.append(b);
  }
  // How the review batch runs, in the gateway's words.
  const execution = $("wf-execution"); execution.replaceChildren();
  for (const line of (w.review_execution ? w.review_execution.said : [])) execution.append(el("div", line));
  const current = w.stages.find(st => st.id === w.current);
  const budget = $("wf-budget"); budget.replaceChildren();
  for (const line of (current ? current.budget_lines : [])) {
    const m = el("meter"); m.max = line.limit; m.value = line.used == null ? 0 : Math.min(line.used, line.limit);
    budget.append(el("span", line.label), m, el("span", line.text + (line.used == null ? " (not reported)" : ""), line.overrun || line.exhausted ? "over" : "muted"));
  }
  const turn = w.turn && !w.turn.open ? w.turn : null;
  $("wf-turn").textContent = !turn ? "" : turn.problem ? "Latest turn: " + turn.problem
    : "Latest turn reported " + turn.outcome.status + ": " + turn.outcome.artifacts.join(", ") + (turn.outcome.notes ? " — " + turn.outcome.notes : "");
  const r = w.reproduction;
  if (r) $("wf-turn").append(el("div", r.completed
    ? "Rerun #" + r.completed.action_id + ": exit " + r.completed.exit_code + ", wrote " + r.completed.output.path
    : "Rerun #" + r.prepared.action_id + " allowed; no completion observed"));
  const a = w.assessment, checks = $("wf-checks"); checks.replaceChildren();
  $("wf-checks-title").textContent = !a ? "Checks: not run yet" : a.eligible ? "Checks passed" : "Checks not passed";
  if (a) {
    for (const c of a.checks) {
      const d = el("div", c.check, "check " + c.status);
      for (const r of c.reasons) d.append(el("span", r, "why"));
      for (const claim of c.claims || []) d.append(el("span", "claim " + claim.text, "why"));
      checks.append(d);
    }
    for (const problem of a.problems.filter(x => !a.checks.some(c => x.startsWith(c.check)))) checks.append(el("div", problem, "muted"));
  }
  const review = w.reviews && w.reviews.length ? w.reviews[w.reviews.length - 1] : null;
  $("wf-review").hidden = !review;
  const findings = $("wf-findings"), proposed = $("wf-proposals");
  findings.replaceChildren(); proposed.replaceChildren();
  // The words are the gateway's (review.said), the same in every interface.
  if (review) {
    findings.append(el("li", review.said.headline, "muted"));
    for (const f of review.said.findings) findings.append(el("li", f));
    for (const p of review.said.proposals) proposed.append(el("li", p));
  }
  // The picture is drawn by the gateway from the bytes the checks read; an image, so nothing in it runs.
  const img = $("wf-figure"), note = $("wf-figure-note");
  // Once a stage is accepted the gateway keeps drawing the model accepted last, so the picture
  // stays while later stages run (it answers 404 when no model was judged: nothing is shown).
  const model = a && a.checks.some(c => c.check === "univariate_ols");
  const accepted = w.stages.filter(st => st.status === "accepted").length;
  const figureKey = model ? a.fingerprint : accepted ? "accepted-" + accepted : null;
  const values = $("wf-figure-values");
  if (!figureKey) { img.hidden = true; note.hidden = true; values.hidden = true; figureFor = null; }
  else if (figureFor !== figureKey) {
    figureFor = figureKey;
    img.onload = () => { img.hidden = false; note.hidden = true; };
    img.onerror = () => { img.hidden = true; note.hidden = !model; note.textContent = "No picture: the model's files changed since its checks ran, or they cannot be drawn. Check the stage again."; };
    img.src = api("sessions/" + session + "/workflow/figure.svg?assessment=" + encodeURIComponent(figureKey));
    loadFigureValues(figureKey);
  }
  const files = $("wf-files"); files.replaceChildren();
  for (const b of w.bindings) {
    const button = el("button", b.path);
    button.title = b.role + " " + b.id;
    button.onclick = () => { previewPath = b.path; previewAt = null; renderWorkflow(projection.workflow); };
    files.append(button);
  }
  // A preview is read again whenever the run moves, so a changed file never passes as judged.
  if (previewPath && previewAt !== w.revision) { previewAt = w.revision; loadPreview(previewPath); }
}
// The figures beside the picture: labels and values are the gateway's (the check's own
// recomputation), written as text so they stay legible where the picture is small.
async function loadFigureValues(key) {
  const {status, data: raw} = await call("sessions/" + session + "/workflow/figure");
  /** @type {Answer<"GET /api/sessions/{session}/workflow/figure">} */ const data = raw;
  const values = $("wf-figure-values");
  if (figureFor !== key) return;
  values.replaceChildren();
  if (status !== 200) { values.hidden = true; return; }
  for (const v of data.values) values.append(el("dt", v.label), el("dd", v.value));
  values.hidden = data.values.length === 0;
}
async function loadPreview(path) {
  const {status, data: raw} = await call("sessions/" + session + "/workflow/preview?path=" + encodeURIComponent(path));
  /** @type {Answer<"GET /api/sessions/{session}/workflow/preview">} */ const data = raw;
  const head = $("wf-preview-head"), pre = $("wf-preview");
  head.replaceChildren();
  if (status !== 200) { head.textContent = String(raw); pre.hidden = true; return; }
  const words = {judged: "the bytes the latest checks judged", changed: "changed since the latest checks: check the stage again", not_judged: "not read by the latest checks"};
  head.append(el("strong", data.text.path + " "), el("span", words[data.evidence], "evidence " + data.evidence));
  pre.hidden = false;
  pre.textContent = data.text.content + (data.text.truncated ? "\n… (the rest is not shown: " + data.text.size + " bytes in all)" : "");
}
async function command(body, path = "commands") {
  const {status, data} = await call("sessions/" + session + "/" + path, body);
  const refusal = Array.isArray(data) ? data[data.length - 1] : data;
  $("notice").textContent = status === 200 ? "" : (refusal && refusal.outcome ? refusal.outcome.reason : String(data));
  // A new session has no event stream until its first task exists; (re)open it then.
  if (!source || source.readyState === EventSource.CLOSED) { openSession(session); loadSessions(); } else refresh();
}
$("signin").onclick = signIn;
// The session being minted: a task sent before its id arrives waits for it instead of being
// dropped (Send pressed right after New session, on a slow machine).
let minting = null;
$("new-session").onclick = () => {
  minting = (async () => {
    const {data} = await call("sessions", {});
    session = data.session; projection = null;
    if (source) { source.close(); source = null; }
    latest = null; render(null, "", null, null); $("text").focus();
  })();
  return minting;
};
// Enter sends, Shift+Enter starts a new line, as in the terminal interface's message line.
$("text").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
  else if (e.key === "Escape") $("text").blur();
});
$("reason").addEventListener("keydown", (e) => {
  if (e.key === "Enter") { e.preventDefault(); if (!$("reject").disabled) $("reject").click(); }
  else if (e.key === "Escape") { $("reason").value = ""; $("reason").blur(); }
});
$("composer").onsubmit = async (e) => {
  e.preventDefault();
  if (minting) { await minting; minting = null; }
  const text = $("text").value.trim(); if (!text || !session) return;
  // What the text means now (task, guidance, or guidance and resuming) is the gateway's rule.
  $("text").value = ""; command({text}, "say");
};
$("pause").onclick = () => command({type: "pause"});
$("interrupt").onclick = () => command({type: "interrupt"});
$("resume").onclick = () => command({type: "resume"});
// The same export as `heartwood sessions export --format ro-crate`, into exports/ in the
// project; the notice says where it went (or the gateway's refusal).
$("export-crate").onclick = async () => {
  const to = "exports/" + session + "-ro-crate-" + new Date().toISOString().replace(/[:.]/g, "-");
  const {status, data} = await call("sessions/" + session + "/commands", {type: "export", format: "ro_crate", destination: to});
  const r = Array.isArray(data) ? data[data.length - 1] : data;
  const done = status === 200 && r && r.outcome && r.outcome.result;
  $("notice").textContent = done ? "Exported as an RO-Crate to " + (r.outcome.result.destination || to) + " (verify_crate.py inside checks it without Heartwood)."
    : (r && r.outcome ? r.outcome.reason : String(data));
};
// The set last brought into view (by set and revision).
let shownSet = null;
// Which members of each set (by set and revision) have been on screen to their end.
const seenMembers = new Map();
const seenKey = (set) => set.set_id + "@" + set.revision;
/** @param {ActionSet} set */
function unseenOf(set) {
  const seen = seenMembers.get(seenKey(set)) || new Set();
  const review = latest && latest.review, reviewedNow = review && review.revision === set.revision;
  return set.members.map(m => m.action_id).filter(id => !reviewedNow || !seen.has(id));
}
const endObserver = new IntersectionObserver((entries) => {
  for (const e of entries) {
    if (!e.isIntersecting) continue;
    const end = /** @type {HTMLElement} */ (e.target);
    const key = end.dataset.key, id = Number(end.dataset.action);
    if (!seenMembers.has(key)) seenMembers.set(key, new Set());
    seenMembers.get(key).add(id);
    endObserver.unobserve(e.target);
    const set = projection && projection.pending;
    if (set && seenKey(set) === key) showUnseen(set);
  }
});
// Allow is enabled only when the gateway takes a decision and every member was on screen.
/** @param {ActionSet | null} set */
function showUnseen(set) {
  const unseen = set ? unseenOf(set) : [];
  $("allow").disabled = !(projection && projection.available_commands.includes("decide")) || unseen.length > 0;
  $("unseen").textContent = unseen.length ? unseen.length + " of " + set.members.length + " not shown yet: scroll on to read " + unseen.map(i => "#" + i).join(", ") + " before allowing" : "";
}
function watchEnd(set, end) { end.dataset.key = seenKey(set); endObserver.observe(end); }
$("allow").onclick = () => { const s = projection.pending; command({type: "decide", set_id: s.set_id, revision: s.revision, decision: "allow_once"}); };
$("reject").onclick = () => { const s = projection.pending; const reason = $("reason").value.trim(); $("reason").value = ""; command({type: "decide", set_id: s.set_id, revision: s.revision, decision: "reject_all", ...(reason ? {reason} : {})}); };
async function loadWorkflows() {
  const {status, data} = await call("workflows");
  const select = $("workflow-definition"); select.replaceChildren();
  /** @type {CatalogEntry[]} */ const catalog = status === 200 ? data : [];
  for (const d of catalog.filter(d => d.supported)) {
    const option = el("option", d.title); option.value = d.id; select.append(option);
  }
  // Source, digest and each stage's budget come from the catalog's own fields (one rule).
  const about = () => {
    const d = catalog.find(d => d.id === select.value); const box = $("workflow-about"); box.replaceChildren();
    if (!d) return;
    box.append(el("div", d.source_summary));
    const stages = el("ol");
    for (const s of d.stages) stages.append(el("li", s.title + ": " + s.budget_summary));
    box.append(stages);
    for (const u of catalog.filter(u => !u.supported)) {
      box.append(el("div", u.id + ": not supported here (" + (u.problems && u.problems.length ? "not a valid definition" : "the check registry lacks " + u.missing_checks.join(", ")) + ")"));
    }
  };
  select.onchange = about; about();
}
// A run starts in a new session; its inputs are the definition's (the command line and the
// notebook bind others).
$("workflow-form").onsubmit = async (e) => {
  e.preventDefault();
  const question = $("workflow-question").value.trim(), definition = $("workflow-definition").value;
  if (!question || !definition) return;
  const {data} = await call("sessions", {});
  session = data.session; projection = null;
  if (source) { source.close(); source = null; }
  $("workflow-question").value = "";
  await command({type: "workflow_start", definition, question, inputs: {}});
};
// Skills: the gateway's catalog as it stands; a decision names the exact tree shown.
async function loadSkills() {
  const {status, data: raw} = await call("skills");
  /** @type {Answer<"GET /api/skills">} */ const data = raw;
  const list = $("skills"); list.replaceChildren();
  if (status !== 200) { list.append(el("p", String(raw), "muted")); return; }
  for (const s of data.skills) {
    const b = el("button");
    b.dataset.skill = s.name;
    b.append(el("strong", s.name), el("div", s.source + " — " + s.status, "muted"));
    b.onclick = () => showSkill(s.name, s.source); list.append(b);
  }
}
let shownSkill = null;
async function showSkill(name, skillSource) {
  const {status, data: raw} = await call("skills/show?name=" + encodeURIComponent(name) + "&source=" + encodeURIComponent(skillSource));
  /** @type {Answer<"GET /api/skills/show">} */ const data = raw;
  $("skill-detail").hidden = false;
  if (status !== 200) { $("skill-notice").textContent = String(raw); return; }
  const v = data.view; shownSkill = v;
  $("skill-name").textContent = v.name;
  $("skill-status").textContent = v.status;
  $("skill-source").textContent = v.source + " (" + v.review + ")";
  $("skill-digest").textContent = v.digest || "";
  const files = $("skill-files"); files.replaceChildren();
  for (const f of v.files) files.append(el("li", f.directory ? f.path + "/" : f.path + " — " + f.size + " bytes" + (f.executable ? ", executable" : "")));
  $("skill-md").textContent = data.skill_md;
  $("skill-approve").hidden = v.approved || !v.digest || !!v.revoked;
  $("skill-activate").hidden = !v.approved || v.active || !!v.revoked;
  $("skill-deactivate").hidden = !v.active;
  $("skill-notice").textContent = "";
}
async function decideSkill(decision) {
  const v = shownSkill; if (!v) return;
  const {status, data} = await call("skills/" + decision, {name: v.name, source: v.source, ...(decision === "approve" ? {digest: v.digest} : {})});
  if (status !== 200) { $("skill-notice").textContent = String(data); return; }
  await loadSkills(); await showSkill(v.name, v.source);
}
$("skill-approve").onclick = () => decideSkill("approve");
$("skill-activate").onclick = () => decideSkill("activate");
$("skill-deactivate").onclick = () => decideSkill("deactivate");
// Local models: the gateway's lines for each model and transfer (any process's), polled
// while a transfer moves.
let wasMoving = false;
async function loadModels() {
  const {status, data: raw} = await call("models");
  /** @type {Answer<"GET /api/models">} */ const data = raw;
  const list = $("models"); list.replaceChildren();
  const transfers = $("transfers"); transfers.replaceChildren();
  if (status !== 200) { list.append(el("li", String(raw), "muted")); return; }
  $("models-runtime").textContent = data.runtime || "no local model runtime is running";
  if (!data.models.length) list.append(el("li", "no local models (heartwood model download or import)", "muted"));
  for (const m of data.models) { const li = el("li", m.label); li.dataset.model = m.name; li.dataset.validation = m.validation; list.append(li); }
  for (const t of data.transfers) {
    const row = el("div", "", "transfer");
    if (t.fraction !== null) { const bar = document.createElement("progress"); bar.max = 1; bar.value = t.fraction; row.append(bar); }
    row.append(el("span", " " + t.label));
    if (t.running && t.handle) {
      const stop = el("button", "Cancel"); stop.setAttribute("aria-label", "Cancel " + t.subject);
      stop.onclick = async () => {
        const {status, data} = await call("models/cancel", {handle: t.handle});
        $("model-notice").textContent = status === 200 ? "Cancelling " + t.subject + ": nothing is published." : String(data);
        loadModels();
      };
      row.append(stop);
    }
    transfers.append(row);
  }
  const moving = data.transfers.some(t => t.running);
  if (moving) setTimeout(loadModels, 1000);
  else if (wasMoving) loadCatalog();
  wasMoving = moving;
}
// The trusted catalog: review an entry's exact manifest, accept its license by that manifest's
// SHA-256, and the gateway downloads it; its progress is the transfer record above (which a
// reload reads back).
let reviewedModel = null;
async function loadCatalog() {
  const {status, data: raw} = await call("models/catalog");
  /** @type {Answer<"GET /api/models/catalog">} */ const data = raw;
  const list = $("model-catalog"); list.replaceChildren();
  if (status !== 200) { list.append(el("li", String(raw), "muted")); return; }
  if (data.note) list.append(el("li", data.note, "muted"));
  for (const entry of data.entries) {
    const li = el("li", entry.label); li.dataset.catalog = entry.id;
    if (!entry.stored && !entry.does_not_fit) {
      const b = el("button", "Review " + entry.id); b.onclick = () => reviewModel(entry.id); li.append(b);
    }
    list.append(li);
  }
}
// A catalog entry or a repository inspected at a revision: either way the review shows the
// exact manifest, and the download binds the license to that manifest's SHA-256.
async function reviewModel(id) { return reviewSource({catalog: id}); }
$("repo-inspect").onsubmit = (e) => {
  e.preventDefault();
  reviewSource({repository: $("repo-name").value.trim(), revision: $("repo-revision").value.trim()});
};
async function reviewSource(source) {
  const {status, data: raw} = await call("models/review", source);
  /** @type {Answer<"POST /api/models/review">} */ const data = raw;
  $("model-notice").textContent = status === 200 ? "" : String(raw);
  if (status !== 200) { $("model-review").hidden = true; return; }
  reviewedModel = {source, sha: data.manifest_sha256};
  const m = data.manifest;
  $("model-review").hidden = false;
  $("model-review-name").textContent = m.name + " (" + data.validation + ")";
  const detail = $("model-review-detail"); detail.replaceChildren();
  detail.append(el("li", "license: " + m.license));
  for (const f of m.files) detail.append(el("li", f.path + " — " + f.size + " bytes, sha256 " + f.sha256.slice(0, 12) + "…"));
  if (data.does_not_fit) detail.append(el("li", data.does_not_fit, "over"));
  $("model-review-sha").textContent = "manifest " + data.manifest_sha256;
  $("model-accept").textContent = "Accept the " + m.license + " license and download";
  $("model-accept").disabled = !!data.does_not_fit;
}
$("model-accept").onclick = async () => {
  if (!reviewedModel) return;
  const {status, data} = await call("models/download", {...reviewedModel.source, accept_license: reviewedModel.sha});
  $("model-notice").textContent = status === 202 ? "Downloading " + data.name + ": the progress is above, and stays there if you reload." : String(data);
  if (status === 202) { $("model-review").hidden = true; reviewedModel = null; }
  await loadModels(); loadCatalog();
};
$("models-panel").addEventListener("toggle", () => { if ($("models-panel").open) { loadModels(); loadCatalog(); } });
// Changed files: the gateway's workspace view (Git's changes, or without Git the open
// session's own edits), and one file's diff as the gateway words it.
async function loadFiles() {
  const {status, data: raw} = await call("workspace/changes" + (session ? "?session=" + encodeURIComponent(session) : ""));
  /** @type {Answer<"GET /api/workspace/changes">} */ const data = raw;
  const list = $("files"); list.replaceChildren();
  if (status !== 200) { $("files-summary").textContent = String(raw); return; }
  $("files-summary").textContent = data.summary;
  if (!data.changes.length) list.append(el("li", "nothing changed yet", "muted"));
  for (const c of data.changes) {
    const b = el("button", c.kind + " " + c.path); b.dataset.path = c.path;
    b.onclick = () => showDiff(c.path); const li = el("li"); li.append(b); list.append(li);
  }
}
async function showDiff(path) {
  const q = "?path=" + encodeURIComponent(path) + (session ? "&session=" + encodeURIComponent(session) : "");
  const {status, data: raw} = await call("workspace/change_diff" + q);
  /** @type {Answer<"GET /api/workspace/change_diff">} */ const data = raw;
  const pre = $("file-diff"); pre.hidden = false; pre.replaceChildren();
  if (status !== 200) { pre.textContent = String(raw); return; }
  for (const line of data.text.split("\n")) {
    const span = el("span", line || " ", line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "");
    span.style.display = "block"; pre.append(span);
  }
}
$("files-panel").addEventListener("toggle", () => { if ($("files-panel").open) loadFiles(); });
// The colour theme: the system's unless chosen here (kept in this browser).
const themes = ["system", "light", "dark"];
function applyTheme(theme) {
  if (theme === "system") delete document.documentElement.dataset.theme; else document.documentElement.dataset.theme = theme;
  $("theme").textContent = "Theme: " + theme;
}
let theme = localStorage.getItem("heartwood-theme") || "system";
applyTheme(theme);
$("theme").onclick = () => {
  theme = themes[(themes.indexOf(theme) + 1) % themes.length];
  localStorage.setItem("heartwood-theme", theme); applyTheme(theme);
};
$("shortcuts-open").onclick = () => $("shortcuts").showModal();
// The terminal interface's keys, wherever the researcher is not typing. `a` only moves to
// Allow: Enter (or a click) decides, as the terminal's a-then-Enter does.
function typing(target) { return target.closest && target.closest("input, textarea, select, [contenteditable]"); }
document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || $("shortcuts").open) return;
  const open = (id) => { const d = $(id); d.open = true; d.querySelector("summary").focus(); d.scrollIntoView({block: "nearest"}); };
  const keys = {
    "?": () => $("shortcuts").showModal(),
    "a": () => {
      if (!projection || !projection.pending) { $("notice").textContent = "No set is waiting for a decision."; return; }
      $("allow").focus();
      if ($("allow").disabled) $("notice").textContent = $("unseen").textContent || "The set cannot be decided now.";
    },
    "r": () => { if (projection && projection.pending) $("reason").focus(); },
    "Escape": () => { if (projection && projection.available_commands.includes("interrupt")) command({type: "interrupt"}); },
    "n": () => $("new-session").click(),
    "/": () => $("text").focus(),
    "f": () => open("files-panel"),
    "w": () => open("new-workflow"),
  };
  const act = keys[e.key];
  if (act) { e.preventDefault(); act(); return; }
  // While a set waits, Page Down, Page Up, End and Home scroll the review's list (its own
  // scroll box), so a keyboard reader reaches every member, and with them Allow.
  const list = $("review-members"), paging = {PageDown: 1, PageUp: -1, End: "end", Home: "home"}[e.key];
  if (paging && projection && projection.pending && list.scrollHeight > list.clientHeight) {
    e.preventDefault();
    // The list on screen first; a page is what of it the window shows (on a phone, less
    // than its box), so no member's end is jumped over unseen.
    list.scrollIntoView({block: "nearest"});
    const box = list.getBoundingClientRect();
    const shown = Math.max(40, Math.min(box.bottom, window.innerHeight) - Math.max(box.top, 0));
    if (paging === "end") list.scrollTop = list.scrollHeight;
    else if (paging === "home") list.scrollTop = 0;
    else list.scrollBy({top: paging * shown * 0.9});
  }
});
render(null, "", null, null);
loadStartup(); loadSessions(); loadWorkflows(); loadSkills(); loadSignIn(); loadModels();
// A session's own address (s/<id>) opens that session.
{ const named = location.pathname.slice(base.length).match(/^s\/([A-Za-z0-9_-]+)$/); if (named) openSession(named[1]); }
