//! One session in a notebook: give a task, wait for it to settle, look at the pending set,
//! decide it, guide, pause, resume, interrupt, verify.
//!
//! A decision is bound to the set and revision the researcher was shown (by `pending`, or by
//! `run`/`wait` returning with a set waiting): a set shown again since is refused as stale,
//! with the current one in the exception, exactly as every other interface refuses it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use heartwood_events::{
    ActionPolicy, ActionSetId, Change, Command, CommandKind, Decision, Outcome, Receipt, SessionId,
    Snapshot, Update,
};
use heartwood_gateway::{GatewayError, ProjectContext, SessionFollow, SessionGateway};
use pyo3::exceptions::{PyTimeoutError, PyValueError};
use pyo3::prelude::*;

use crate::view::{Pending, Projection};
use crate::{HeartwoodError, convert, failed, html};

/// How often a wait looks for a kernel interrupt.
const WAIT_STEP: Duration = Duration::from_millis(100);

/// How long a wait goes without an update before it looks at the session again (one served
/// elsewhere that went quiet is still seen).
const QUIET_LOOK: Duration = Duration::from_secs(1);

/// A session followed from Python: the gateway's follower, driven a step at a time with the
/// GIL released.
struct Following {
    follow: SessionFollow,
    runtime: &'static tokio::runtime::Runtime,
    quiet_since: Instant,
}

impl Following {
    /// The updates that come within `step`, and where the session stopped if it settled
    /// meanwhile (every event up to there among the updates).
    fn step(
        &mut self,
        py: Python<'_>,
        step: Duration,
    ) -> PyResult<(Vec<Update>, Option<Snapshot>)> {
        if self.quiet_since.elapsed() >= QUIET_LOOK {
            self.follow.look_again();
            self.quiet_since = Instant::now();
        }
        let (follow, runtime) = (&mut self.follow, self.runtime);
        let (updates, settled) = py
            .detach(move || {
                runtime.block_on(async {
                    let until = tokio::time::Instant::now() + step;
                    let mut updates = Vec::new();
                    loop {
                        if let Some(settled) = follow.settled().await? {
                            return Ok((updates, Some(settled)));
                        }
                        match tokio::time::timeout_at(until, follow.next()).await {
                            Ok(Some(update)) => updates.push(update),
                            Ok(None) => {
                                return Err(GatewayError::Closed(follow.session().clone()));
                            }
                            Err(_) => return Ok((updates, None)),
                        }
                    }
                })
            })
            .map_err(failed)?;
        if !updates.is_empty() {
            self.quiet_since = Instant::now();
        }
        Ok((updates, settled))
    }

    /// The session as it stands now.
    fn look(&mut self, py: Python<'_>) -> PyResult<Snapshot> {
        let (follow, runtime) = (&mut self.follow, self.runtime);
        py.detach(move || runtime.block_on(follow.look()))
            .map_err(failed)
    }
}

/// A session of the project, new or existing.
#[pyclass(module = "heartwood", frozen)]
pub struct Session {
    gateway: Arc<SessionGateway>,
    project: ProjectContext,
    pub(crate) id: SessionId,
    /// The set (and revision) last shown here, which `allow` and `reject` answer.
    shown: Mutex<Option<(ActionSetId, u64)>>,
    /// The workflow run revision and assessment fingerprint last shown here, which
    /// `accept_stage` answers.
    workflow_shown: Mutex<Option<(u64, Option<String>)>>,
}

impl Session {
    pub(crate) fn new(
        gateway: Arc<SessionGateway>,
        project: ProjectContext,
        id: SessionId,
    ) -> Self {
        Session {
            gateway,
            project,
            id,
            shown: Mutex::new(None),
            workflow_shown: Mutex::new(None),
        }
    }

    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        let (gateway, id) = (Arc::clone(&self.gateway), self.id.clone());
        py.detach(move || gateway.snapshot(&id, u64::MAX))
            .map_err(failed)
    }

    /// Remembers the set `snapshot` shows waiting (if any) as the one shown to the researcher.
    fn show(&self, snapshot: &Snapshot) {
        let shown = snapshot
            .projection
            .pending
            .as_ref()
            .map(|set| (set.set_id.clone(), set.revision));
        *self.shown.lock().unwrap_or_else(|e| e.into_inner()) = shown;
    }

    /// Submits one command, raising the gateway's refusal as an exception.
    fn submit(&self, py: Python<'_>, kind: CommandKind) -> PyResult<Receipt> {
        let command = Command::new(SessionGateway::new_command_id(), self.id.clone(), kind);
        let gateway = Arc::clone(&self.gateway);
        let receipt = py
            .detach(move || gateway.submit_blocking(command))
            .map_err(failed)?;
        match &receipt.outcome {
            Outcome::Applied { .. } => Ok(receipt),
            Outcome::Refused(refusal) => Err(crate::refused(py, refusal)),
        }
    }

    /// Waits until the run settles (finished, failed, paused, or waiting for a decision), with
    /// the GIL released; a kernel interrupt pauses the run and raises `KeyboardInterrupt`.
    fn settle(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Snapshot> {
        let deadline = match timeout {
            Some(secs) if !(secs.is_finite() && secs >= 0.0) => {
                return Err(PyValueError::new_err("timeout is a number of seconds ≥ 0"));
            }
            Some(secs) => Some(Instant::now() + Duration::from_secs_f64(secs)),
            None => None,
        };
        let mut follow = self.follow(py, u64::MAX)?;
        loop {
            // Followed a step at a time, so an interrupt is seen between steps.
            let step = deadline.map_or(WAIT_STEP, |d| {
                d.saturating_duration_since(Instant::now()).min(WAIT_STEP)
            });
            let (_, settled) = follow.step(py, step)?;
            if let Some(snapshot) = settled {
                self.show(&snapshot);
                return Ok(snapshot);
            }
            if let Err(interrupted) = py.check_signals() {
                // As `exec` does on Ctrl-C: stop the running action and pause.
                if let Some(kind) = follow.look(py)?.projection.stop_command() {
                    let _ = self.submit(py, kind);
                }
                return Err(interrupted);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(PyTimeoutError::new_err(format!(
                    "session {} is still {} after the timeout; it goes on: call wait() to \
                     follow it, or pause() to stop it at its next step",
                    self.id,
                    follow.look(py)?.projection.activity
                )));
            }
        }
    }

    /// This session followed through the gateway's one stream, from revision `since`.
    fn follow(&self, py: Python<'_>, since: u64) -> PyResult<Following> {
        let runtime = crate::runtime()?;
        let (gateway, id) = (Arc::clone(&self.gateway), self.id.clone());
        let follow = py
            .detach(move || runtime.block_on(gateway.follow(&id, since)))
            .map_err(failed)?;
        Ok(Following {
            follow,
            runtime,
            quiet_since: Instant::now(),
        })
    }

    /// The run revision shown, refusing when no workflow run was shown here.
    fn workflow_revision(&self) -> PyResult<(u64, Option<String>)> {
        self.workflow_shown
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| {
                HeartwoodError::new_err(
                    "no workflow run has been shown here: look at `session.workflow` first",
                )
            })
    }

    /// Submits the workflow command `kind` makes of the run's revision now, and waits until
    /// the turn it starts settles.
    fn workflow_turn(
        slf: Py<Self>,
        py: Python<'_>,
        timeout: Option<f64>,
        kind: impl FnOnce(u64) -> CommandKind,
    ) -> PyResult<Py<Self>> {
        let this = slf.get();
        let revision = this
            .snapshot(py)?
            .projection
            .workflow
            .as_ref()
            .map(|w| w.revision)
            .ok_or_else(|| HeartwoodError::new_err("this session runs no workflow"))?;
        this.submit(py, kind(revision))?;
        this.settle(py, timeout)?;
        this.show_workflow(&this.snapshot(py)?);
        Ok(slf)
    }

    fn model_figure(
        &self,
        py: Python<'_>,
    ) -> PyResult<Option<heartwood_events::workflow::ModelFigure>> {
        let (gateway, id) = (Arc::clone(&self.gateway), self.id.clone());
        py.detach(move || gateway.workflow_figure(&id))
            .map_err(failed)
    }

    /// The run's panel as HTML, with the model's picture when one can be drawn now.
    fn workflow_html(
        &self,
        py: Python<'_>,
        w: &heartwood_events::workflow::WorkflowView,
    ) -> String {
        let figure = self
            .model_figure(py)
            .ok()
            .flatten()
            .map(|f| html::figure(&f));
        html::workflow(w, figure.as_deref(), &crate::rich::who(py, &self.id))
    }

    fn show_workflow(&self, snapshot: &Snapshot) {
        let shown = snapshot.projection.workflow.as_ref().map(|w| {
            let fingerprint = w
                .control(heartwood_events::CommandName::WorkflowAccept)
                .and_then(|c| c.fingerprint.clone());
            (w.revision, fingerprint)
        });
        *self
            .workflow_shown
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = shown;
    }

    fn decide(
        &self,
        py: Python<'_>,
        decision: Decision,
        reason: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let shown = self.shown.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some((set_id, revision)) = shown else {
            return Err(HeartwoodError::new_err(
                "no set has been shown here to decide: look at `session.pending` first",
            ));
        };
        let said = match decision {
            Decision::AllowOnce => format!("Allowed set {set_id} (revision {revision}) once"),
            Decision::RejectAll => format!("Rejected set {set_id} (revision {revision})"),
        };
        let kind = CommandKind::Decide {
            set_id,
            revision,
            decision,
            reason,
        };
        // A refusal raises by its kind: a set that moved on, `StaleDecision` naming the set
        // waiting now.
        let receipt = self.submit(py, kind)?;
        *self.shown.lock().unwrap_or_else(|e| e.into_inner()) = None;
        // The receipt, to show: what was decided and how to follow the run.
        let html = crate::rich::decided(&receipt, &said, &crate::rich::who(py, &self.id));
        crate::rich::shown(py, &receipt, html)
    }
}

#[pymethods]
impl Session {
    /// The session id.
    #[getter]
    fn id(&self) -> String {
        self.id.to_string()
    }

    /// Gives the agent a task and waits until the run settles (or `timeout` seconds pass).
    /// `policy` is "always-review" (every set waits for you) or "low-risk" (sets of read-only
    /// actions run without waiting). Returns the session, whose display shows where it stands.
    #[pyo3(signature = (task, policy="always-review", timeout=None))]
    fn run(
        slf: Py<Self>,
        py: Python<'_>,
        task: &str,
        policy: &str,
        timeout: Option<f64>,
    ) -> PyResult<Py<Self>> {
        let policy = match policy {
            "always-review" => ActionPolicy::AlwaysReview,
            "low-risk" => ActionPolicy::LowRiskAutomation,
            other => {
                return Err(PyValueError::new_err(format!(
                    "policy is \"always-review\" or \"low-risk\", not {other:?}"
                )));
            }
        };
        let this = slf.get();
        this.submit(
            py,
            CommandKind::SubmitTask {
                text: task.to_owned(),
                policy,
            },
        )?;
        this.settle(py, timeout)?;
        Ok(slf)
    }

    /// Waits until the run settles (or `timeout` seconds pass); returns the session.
    #[pyo3(signature = (timeout=None))]
    fn wait(slf: Py<Self>, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<Self>> {
        slf.get().settle(py, timeout)?;
        Ok(slf)
    }

    /// The set waiting for your decision, whole, with what each action would do (a diff for
    /// each edit, each command as it will run); `None` when nothing waits. Looking binds
    /// `allow()` and `reject()` to this set and revision.
    #[getter]
    fn pending(&self, py: Python<'_>) -> PyResult<Option<Pending>> {
        let snapshot = self.snapshot(py)?;
        self.show(&snapshot);
        Ok(Pending::of(&snapshot))
    }

    /// Allows every action of the set last shown, once; the run continues (call `wait()`).
    /// Returns the decision's receipt (a dict that shows what was decided).
    fn allow(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.decide(py, Decision::AllowOnce, None)
    }

    /// Rejects every action of the set last shown; the agent reads `reason`. Returns the
    /// decision's receipt.
    #[pyo3(signature = (reason=None))]
    fn reject(&self, py: Python<'_>, reason: Option<String>) -> PyResult<Py<PyAny>> {
        self.decide(py, Decision::RejectAll, reason)
    }

    /// Adds guidance the agent reads before its next step.
    fn guide(&self, py: Python<'_>, text: &str) -> PyResult<()> {
        self.submit(
            py,
            CommandKind::SendGuidance {
                text: text.to_owned(),
            },
        )
        .map(drop)
    }

    /// Pauses the agent at its next step.
    fn pause(&self, py: Python<'_>) -> PyResult<()> {
        self.submit(py, CommandKind::Pause).map(drop)
    }

    /// Resumes a paused run (call `wait()` to follow it).
    fn resume(&self, py: Python<'_>) -> PyResult<()> {
        self.submit(py, CommandKind::Resume).map(drop)
    }

    /// Stops the running action now (its process is killed) and pauses the agent.
    fn interrupt(&self, py: Python<'_>) -> PyResult<()> {
        self.submit(py, CommandKind::Interrupt).map(drop)
    }

    /// Exports the session and records the export: `"bundle"` (the default, in the session's
    /// `exports/`, copied to `destination` when given), `"markdown"` (a transcript file) or
    /// `"ro_crate"` (a Provenance Run RO-Crate directory, or one ZIP file with `zip=True`;
    /// paths in `private` are listed by digest only). A relative destination is inside the
    /// project. Returns what was written (`bundle`, `destination`, and a crate's `files`,
    /// `bytes`).
    #[pyo3(signature = (format = "bundle", destination = None, zip = false, private = Vec::new()))]
    fn export(
        &self,
        py: Python<'_>,
        format: &str,
        destination: Option<String>,
        zip: bool,
        private: Vec<String>,
    ) -> PyResult<Py<PyAny>> {
        let format = match format {
            "bundle" => heartwood_events::ExportFormat::Bundle,
            "markdown" => heartwood_events::ExportFormat::Markdown,
            "ro_crate" => heartwood_events::ExportFormat::RoCrate,
            other => {
                return Err(PyValueError::new_err(format!(
                    "no export format {other:?}; use \"bundle\", \"markdown\" or \"ro_crate\""
                )));
            }
        };
        let request = heartwood_events::ExportRequest {
            format,
            destination,
            zip,
            private,
        };
        let receipt = self.submit(py, CommandKind::Export(request))?;
        let result = match receipt.outcome {
            Outcome::Applied { result, .. } => result,
            Outcome::Refused(_) => serde_json::Value::Null,
        };
        convert::to_python(py, &result)
    }

    /// The workflow run in this session (stages, the latest checks, what can be done now), as
    /// a dict that shows as the run's panel in a notebook; `None` when none was started.
    /// Looking binds `accept_stage` to what it shows.
    #[getter]
    fn workflow(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let snapshot = self.snapshot(py)?;
        self.show_workflow(&snapshot);
        match &snapshot.projection.workflow {
            Some(w) => {
                let html = self.workflow_html(py, w);
                crate::rich::shown(py, w, html)
            }
            None => convert::to_python(py, &snapshot.projection.workflow),
        }
    }

    /// Runs the workflow's current stage as an agent turn and waits until it settles.
    #[pyo3(signature = (timeout=None))]
    fn run_stage(slf: Py<Self>, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<Self>> {
        Self::workflow_turn(slf, py, timeout, |revision| CommandKind::WorkflowRun {
            revision,
        })
    }

    /// Has the current stage's files reviewed: they are captured, a turn asks the review
    /// specialist (its set waits for your decision like any other), and once it settles
    /// Heartwood verifies the proposals itself (`session.workflow["reviews"]`).
    #[pyo3(signature = (timeout=None))]
    fn review_stage(slf: Py<Self>, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<Self>> {
        Self::workflow_turn(slf, py, timeout, |revision| CommandKind::WorkflowReview {
            revision,
        })
    }

    /// Corrects finding `finding` of the latest review to the new path `to`: before the file
    /// is written there, returns the plan; once it is, returns the recheck (`result`:
    /// `not_observed`, `observed` or `unverified`); with `apply=True`, binds the rechecked
    /// correction in place of the stage's output (checked and accepted again as usual).
    #[pyo3(signature = (to, finding=0, apply=false))]
    fn correct_finding(
        &self,
        py: Python<'_>,
        to: String,
        finding: u32,
        apply: bool,
    ) -> PyResult<Py<PyAny>> {
        let snapshot = self.snapshot(py)?;
        let workflow = snapshot
            .projection
            .workflow
            .clone()
            .ok_or_else(|| HeartwoodError::new_err("this session runs no workflow"))?;
        if apply {
            let bind = heartwood_gateway::bind_correction(&workflow, finding, to);
            let receipt = self.submit(py, bind)?;
            let result = match receipt.outcome {
                Outcome::Applied { result, .. } => result,
                Outcome::Refused(_) => serde_json::Value::Null,
            };
            return convert::to_python(py, &result);
        }
        let project = self.project.clone();
        let answer = py
            .detach(move || {
                heartwood_gateway::correction_step(&project, &workflow, finding as usize, &to)
                    .map(|step| serde_json::to_value(step).unwrap_or_default())
            })
            .map_err(failed)?;
        convert::to_python(py, &answer)
    }

    /// Runs the current stage's independent checks on the files as they are; returns the
    /// assessment (eligible, problems, each check) and shows it (binding `accept_stage`).
    fn evaluate_stage(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let snapshot = self.snapshot(py)?;
        let revision = snapshot
            .projection
            .workflow
            .as_ref()
            .map(|w| w.revision)
            .ok_or_else(|| HeartwoodError::new_err("this session runs no workflow"))?;
        let receipt = self.submit(py, CommandKind::WorkflowEvaluate { revision })?;
        let after = self.snapshot(py)?;
        self.show_workflow(&after);
        let result = match receipt.outcome {
            Outcome::Applied { result, .. } => result,
            Outcome::Refused(_) => serde_json::Value::Null,
        };
        // Shown as the run's panel now stands: the checks just run, and what comes next.
        match &after.projection.workflow {
            Some(w) => {
                let html = self.workflow_html(py, w);
                crate::rich::shown(py, &result, html)
            }
            None => convert::to_python(py, &result),
        }
    }

    /// Accepts the current stage, bound to the revision and assessment last shown here.
    fn accept_stage(&self, py: Python<'_>) -> PyResult<()> {
        let (revision, fingerprint) = self.workflow_revision()?;
        let Some(fingerprint) = fingerprint else {
            return Err(HeartwoodError::new_err(
                "the stage shown here had no acceptance to offer (its checks did not pass)",
            ));
        };
        self.submit(
            py,
            CommandKind::WorkflowAccept {
                revision,
                fingerprint,
            },
        )
        .map(drop)
    }

    /// Consents to run the waiting review batch's reviewers at once, exactly as previewed
    /// (offered only on a route an operator qualified); the batch runs once the set is allowed,
    /// and only if the preview still holds then.
    fn consent_parallel_review(&self, py: Python<'_>) -> PyResult<()> {
        let snapshot = self.snapshot(py)?;
        let control = snapshot
            .projection
            .workflow
            .as_ref()
            .and_then(|w| w.control(heartwood_events::CommandName::WorkflowReviewParallel))
            .ok_or_else(|| {
                HeartwoodError::new_err(
                    "no review batch waits to run at once (none was previewed: the route is not \
                     qualified, or the batch was decided or consented to)",
                )
            })?;
        self.submit(py, control.submit.clone()).map(drop)
    }

    /// Cancels the workflow run.
    fn cancel_workflow(&self, py: Python<'_>) -> PyResult<()> {
        let (revision, _) = self.workflow_revision()?;
        self.submit(py, CommandKind::WorkflowCancel { revision })
            .map(drop)
    }

    /// Where the session stands: the gateway's projection, as a typed object.
    #[getter]
    fn projection(&self, py: Python<'_>) -> PyResult<Projection> {
        let snapshot = self.snapshot(py)?;
        Projection::of(py, &snapshot)
    }

    /// Verifies the session's hash chain; returns what was verified, raises if it is damaged.
    fn verify(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let (project, id) = (self.project.clone(), self.id.to_string());
        let (verified, _) = py
            .detach(move || heartwood_gateway::SessionAdmin::new(&project).verify(&id, None))
            .map_err(failed)?;
        convert::to_python(
            py,
            &serde_json::json!({
                "intact": true,
                "events": verified.count,
                "terminal_hash": verified.terminal_hash.to_hex(),
            }),
        )
    }

    /// The session as a readable Markdown transcript.
    fn transcript(&self, py: Python<'_>) -> PyResult<String> {
        let (project, id) = (self.project.clone(), self.id.to_string());
        py.detach(move || heartwood_gateway::SessionAdmin::new(&project).transcript(&id))
            .map_err(failed)
    }

    /// The project's files as this session changed them, read-only.
    #[getter]
    fn workspace(&self) -> crate::Workspace {
        crate::Workspace::new(self.project.clone(), Some(self.id.to_string()))
    }

    /// One line per update while the run is active, until it settles (for notebooks without
    /// ipywidgets; `heartwood.watch(session)` uses a live widget when it can).
    #[pyo3(signature = (timeout=None))]
    fn watch(slf: Py<Self>, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<Self>> {
        let this = slf.get();
        let print = py.import("builtins")?.getattr("print")?;
        let deadline = timeout.map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        let mut follow = this.follow(py, u64::MAX)?;
        loop {
            let (updates, settled) = follow.step(py, WAIT_STEP)?;
            for update in updates {
                if let Change::Event { event } = &update.change {
                    print.call1((format!(
                        "{:>5}  {}",
                        event.seq,
                        heartwood_gateway::transcript_line(event)
                    ),))?;
                }
            }
            if let Some(snapshot) = settled {
                this.show(&snapshot);
                print.call1((snapshot.projection.status_line.clone(),))?;
                return Ok(slf);
            }
            py.check_signals()?;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(PyTimeoutError::new_err("still running after the timeout"));
            }
        }
    }

    /// The session as HTML: conversation, plan, usage, and the set waiting, if any.
    fn _repr_html_(&self, py: Python<'_>) -> PyResult<String> {
        let snapshot = self.snapshot(py)?;
        self.show(&snapshot);
        // A picture that cannot be drawn now (files changed since the checks) is left out;
        // `session.figure()` says why.
        let figure = self
            .model_figure(py)
            .ok()
            .flatten()
            .map(|f| html::figure(&f));
        Ok(html::session_with(
            &snapshot,
            figure.as_deref(),
            &crate::rich::who(py, &self.id),
        ))
    }

    /// The picture of the model the workflow run's latest checks judged, drawn by the gateway
    /// from the bytes they read: a dict with the series (`train`, `held_out`, `predictions`,
    /// `line`, `training_mean`, `group_slopes`) and `svg`. Raises, saying why, when there is
    /// none: no workflow run, no model judged yet, or the files changed since the checks.
    fn figure(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let Some(figure) = self.model_figure(py)? else {
            let snapshot = self.snapshot(py)?;
            let why = match &snapshot.projection.workflow {
                None => "this session runs no workflow".to_owned(),
                Some(w) => format!(
                    "no model has been judged in this run yet (the latest checks are {}): the \
                     picture comes with a model stage's checks",
                    w.assessment
                        .as_ref()
                        .map_or("none".to_owned(), |a| format!("of stage {}", a.stage))
                ),
            };
            return Err(HeartwoodError::new_err(format!("no model figure: {why}")));
        };
        let html = html::figure(&figure);
        crate::rich::shown(py, &figure, html)
    }

    /// The session as Markdown (where HTML is not shown).
    fn _repr_markdown_(&self, py: Python<'_>) -> PyResult<String> {
        let snapshot = self.snapshot(py)?;
        Ok(html::session_markdown(
            &snapshot,
            &crate::rich::who(py, &self.id),
        ))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let snapshot = self.snapshot(py)?;
        Ok(format!(
            "<heartwood session {}: {}>",
            self.id, snapshot.projection.status_line
        ))
    }
}
