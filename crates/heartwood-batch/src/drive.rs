//! Drives one item as far as it can go without a person, in this process: the worker every
//! engine runs (a local pool's worker, a Slurm array task).
//!
//! An item is an ordinary session in its project, moved on only by the commands a researcher
//! would give there, submitted to the project's gateway (the one door), with the ids of the
//! commands that start work fixed per item so a repeated submission acts once. After each
//! command the driver follows the run it started until the session settles, and reads the
//! session's projection: what the projection says (what it waits for, where its workflow run
//! stands, whether its last run was cut off) decides the next step. The batch record only
//! remembers what the batch saw, and that its last worker was cut off.

use std::collections::BTreeSet;
use std::time::Instant;

use heartwood_events::workflow::{StageStatus, WorkflowView};
use heartwood_events::{
    ActionPolicy, CommandKind, CommandName, Lifecycle, RefusalClass, SessionProjection, WaitKind,
};

use crate::error::{BatchError, Result};
use crate::manifest::{Item, Manifest, Work};
use crate::record::{BatchDir, Phase, Record, Worker, now};
use crate::route::{Connection, RouteConnector};
use crate::session::{ItemSession, Submitted, Taken};
use crate::shell_quote;

/// More steps than any definition has stages twice over: a loop that does not settle stops.
const MAX_STEPS: usize = 64;

/// What one step did.
enum Step {
    /// Look again: the session moved.
    Again,
    /// The item settled here, for now.
    Settle(Settled),
}

/// Where an item settled, for now.
struct Settled {
    phase: Phase,
    detail: String,
    next: Option<String>,
}

/// Drives a manifest's items in this process: one gateway per item's project, and one async
/// runtime for this process, on which every item's runs are followed.
pub struct Driver<'m> {
    manifest: &'m Manifest,
    dir: BatchDir,
    routes: &'m dyn RouteConnector,
    runtime: tokio::runtime::Runtime,
}

impl<'m> Driver<'m> {
    /// A driver for `manifest`'s items, connecting their projects with `routes`.
    pub fn new(manifest: &'m Manifest, routes: &'m dyn RouteConnector) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(BatchError::Runtime)?;
        Ok(Driver {
            manifest,
            dir: BatchDir::of(manifest),
            routes,
            runtime,
        })
    }

    /// The batch's directory.
    pub fn dir(&self) -> &BatchDir {
        &self.dir
    }

    /// Runs item `index` until it settles, and returns its record. When another worker holds
    /// the item, nothing is done and the record says so.
    pub fn drive(&self, index: usize) -> Result<Record> {
        let item = self.manifest.items.get(index).ok_or(BatchError::NoItem {
            index,
            count: self.manifest.items.len(),
        })?;
        let dir = &self.dir;
        let Some(_lock) = dir.lock(&item.name)? else {
            let mut record = dir.record(index, item)?;
            record.detail = "another worker holds this item; it was left alone".to_owned();
            return Ok(record);
        };
        let mut record = dir.record(index, item)?;
        // We hold the lock, so a record still saying "running" was left by a worker that
        // stopped.
        let cut_off = matches!(record.phase, Phase::Running | Phase::Interrupted);
        record.phase = Phase::Running;
        record.detail = "a worker is on it".to_owned();
        record.next = None;
        record.attempts += 1;
        record.worker = Some(Worker::this());
        record.updated_at = now();
        dir.save(&record)?;

        let started = Instant::now();
        let settled = self
            .run_item(item, &mut record, cut_off)
            .unwrap_or_else(|e| Settled {
                phase: Phase::Failed,
                detail: e.to_string(),
                next: None,
            });
        record.phase = settled.phase;
        record.detail = settled.detail;
        record.next = settled.next;
        record.wall_seconds += started.elapsed().as_secs_f64();
        record.updated_at = now();
        dir.save(&record)?;
        Ok(record)
    }

    fn run_item(&self, item: &Item, record: &mut Record, cut_off: bool) -> Result<Settled> {
        let project = self.dir.prepare(self.manifest, item)?;
        let log = self.dir.log_path(&item.name);
        let mut s = ItemSession::open(&self.runtime, &project, &record.session, &log)?;
        if let Some(route) = &self.manifest.route
            && !record.route_connected
        {
            match self.routes.connect(&route.connect_args, &project)? {
                Connection::Connected(said) => s.note(&said)?,
                Connection::Refused(why) => {
                    s.note(&format!("the route was not connected: {why}"))?;
                    return Ok(settle(
                        Phase::Failed,
                        &format!(
                            "the route could not be connected in {}: {why}",
                            project.display()
                        ),
                    ));
                }
            }
            record.route_connected = true;
        }
        let settled = match s.take()? {
            Taken::Elsewhere(pid) => Ok(Settled {
                phase: Phase::Waiting,
                detail: format!(
                    "open in another Heartwood process{}; the batch leaves it alone until that \
                     process lets go (then `heartwood batch resume`)",
                    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                ),
                next: None,
            }),
            Taken::Fresh | Taken::Here => self.steps(&mut s, item, record, cut_off),
        };
        s.close();
        settled
    }

    fn steps(
        &self,
        s: &mut ItemSession<'_>,
        item: &Item,
        record: &mut Record,
        mut cut_off: bool,
    ) -> Result<Settled> {
        let mut evaluated = BTreeSet::new();
        let mut first = true;
        for _ in 0..MAX_STEPS {
            let look = s.look()?;
            if let Some(p) = &look {
                note(record, p);
                // A run its process left open was recorded as interrupted when this worker
                // took the session: the next instruction continues it.
                cut_off |= std::mem::take(&mut first) && p.interrupted;
            }
            let step = match &self.manifest.work {
                Work::Task { text } => {
                    let text = item.ask.as_deref().unwrap_or(text);
                    let policy = self.manifest.policy;
                    task_step(s, look, (text, policy), record.attempts, &mut cut_off)?
                }
                Work::Workflow {
                    definition,
                    question,
                } => {
                    let question = item.ask.as_deref().unwrap_or(question);
                    let start = (definition.as_str(), question, item);
                    workflow_step(s, look, start, &mut evaluated, &mut cut_off)?
                }
            };
            if let Step::Settle(settled) = step {
                return Ok(settled);
            }
        }
        Ok(settle(
            Phase::Failed,
            &format!(
                "the item did not settle after {MAX_STEPS} steps; look at it with `heartwood \
                 workflow status` in its project"
            ),
        ))
    }
}

/// What the session's projection says that the batch shows: stage, checks, usage.
fn note(record: &mut Record, p: &SessionProjection) {
    if !p.usage.summary.is_empty() {
        record.usage = Some(p.usage.summary.clone());
    }
    if let Some(w) = &p.workflow {
        record.stage = w.current.clone().or_else(|| Some("finished".to_owned()));
        record.last_check = w.assessment.as_ref().map(|a| {
            if a.eligible {
                format!("{}: eligible", a.stage)
            } else {
                format!(
                    "{}: not eligible{}",
                    a.stage,
                    a.problems
                        .first()
                        .map(|p| format!(" ({p})"))
                        .unwrap_or_default()
                )
            }
        });
    }
}

/// Settles where the session waits for a person, as its projection says: a set waiting for a
/// decision, a stage waiting for acceptance, a run a person paused. `None`: the batch may act.
fn waits(s: &ItemSession<'_>, p: &SessionProjection, cut_off: bool) -> Option<Step> {
    let next = |command: CommandName| {
        p.waits_for
            .as_ref()
            .and_then(|w| w.steps.iter().find(|step| step.command == command))
            .map(|step| in_project(s, &step.shell))
    };
    match p.waits_for.as_ref().map(|w| (w.kind, w.stage.as_deref())) {
        Some((WaitKind::Decision, _)) => {
            let members = p.pending.as_ref().map_or(0, |set| set.members.len());
            return Some(Step::Settle(Settled {
                phase: Phase::Waiting,
                detail: format!(
                    "waiting for your decision on {members} proposed action{}",
                    if members == 1 { "" } else { "s" }
                ),
                next: next(CommandName::Decide),
            }));
        }
        Some((WaitKind::WorkflowAcceptance, stage)) => {
            return Some(Step::Settle(Settled {
                phase: Phase::Waiting,
                detail: format!(
                    "stage {} passed its checks and waits for your acceptance",
                    stage.unwrap_or_default()
                ),
                next: next(CommandName::WorkflowAccept),
            }));
        }
        _ => {}
    }
    (p.lifecycle == Lifecycle::Paused && !cut_off).then(|| {
        Step::Settle(Settled {
            phase: Phase::Waiting,
            detail: "paused by a person".to_owned(),
            next: Some(in_project(
                s,
                &format!("heartwood exec --session {} \"go on\"", p.session),
            )),
        })
    })
}

fn task_step(
    s: &mut ItemSession<'_>,
    look: Option<SessionProjection>,
    (text, policy): (&str, ActionPolicy),
    attempt: u32,
    cut_off: &mut bool,
) -> Result<Step> {
    let task_id = format!("{}-task", s.id());
    let Some(p) = look else {
        return say(s, policy, &task_id, text);
    };
    if let Some(step) = waits(s, &p, *cut_off) {
        return Ok(step);
    }
    match p.lifecycle {
        Lifecycle::Finished if !*cut_off => Ok(Step::Settle(settle(Phase::Done, "finished"))),
        // Not given yet, or given by a worker that stopped before the gateway took it: the
        // same command id makes a second submission act once.
        Lifecycle::Idle => say(s, policy, &task_id, text),
        // Cut off midway (its worker was killed, cancelled or preempted): the next instruction
        // continues it; the journal's receipts keep an action that ran from running again.
        Lifecycle::Running | Lifecycle::Failed | Lifecycle::Paused | Lifecycle::Finished
            if *cut_off || p.lifecycle == Lifecycle::Running =>
        {
            *cut_off = false;
            let id = format!("{}-continue-{attempt}", s.id());
            say(s, policy, &id, "Continue the task where it stopped.")
        }
        Lifecycle::Stuck => Ok(Step::Settle(settle(
            Phase::Failed,
            "the agent repeated itself without progress and was stopped",
        ))),
        _ => Ok(Step::Settle(settle(
            Phase::Failed,
            &format!(
                "the run failed: {}",
                p.last_error.as_deref().unwrap_or_default()
            ),
        ))),
    }
}

fn workflow_step(
    s: &mut ItemSession<'_>,
    look: Option<SessionProjection>,
    (definition, question, item): (&str, &str, &Item),
    evaluated: &mut BTreeSet<String>,
    cut_off: &mut bool,
) -> Result<Step> {
    let Some(p) = look else {
        let kind = CommandKind::WorkflowStart {
            definition: definition.to_owned(),
            question: question.to_owned(),
            inputs: item.workflow_inputs.clone(),
        };
        let id = format!("{}-start", s.id());
        return Ok(match s.submit(Some(&id), kind)? {
            Submitted::Applied => Step::Again,
            Submitted::Refused(why) => Step::Settle(settle(
                Phase::Failed,
                &format!("the workflow run could not start: {why}"),
            )),
        });
    };
    if let Some(step) = waits(s, &p, *cut_off) {
        return Ok(step);
    }
    let Some(w) = p.workflow else {
        return Ok(Step::Settle(settle(
            Phase::Failed,
            &format!("session {} in this project runs no workflow", s.id()),
        )));
    };
    // A stage turn cut off by the machine (not judged by its checks) runs again, as it was
    // running when the worker stopped; a turn that ended with its outcome is evaluated.
    let cut_turn = w
        .turn
        .as_ref()
        .is_some_and(|t| !t.open && t.problem.is_some());
    if std::mem::take(cut_off) && cut_turn && w.control(CommandName::WorkflowRun).is_some() {
        evaluated.clear();
        return run_stage(s, &w);
    }
    if w.cancelled {
        return Ok(Step::Settle(settle(Phase::Done, "the run was cancelled")));
    }
    let Some(stage) = w.current_stage() else {
        return Ok(Step::Settle(settle(Phase::Done, "every stage accepted")));
    };
    let id = stage.spec.id.clone();
    match stage.status {
        // Waiting for acceptance is what `waits` settles; the stage is left to the researcher.
        StageStatus::AwaitingResearcher => Ok(Step::Settle(settle(
            Phase::Waiting,
            &format!("stage {id} passed its checks and waits for your acceptance"),
        ))),
        StageStatus::AwaitingEvaluation if evaluated.insert(id.clone()) => evaluate(s, &w),
        StageStatus::AwaitingEvaluation => Ok(not_eligible(s, &w, &id)),
        StageStatus::Pending | StageStatus::Running => {
            if w.control(CommandName::WorkflowRun).is_none() {
                return Ok(Step::Settle(settle(
                    Phase::Failed,
                    &format!("stage {id} cannot run again (its budget is used up)"),
                )));
            }
            evaluated.remove(&id);
            run_stage(s, &w)
        }
        StageStatus::Accepted => Ok(Step::Settle(settle(Phase::Done, "every stage accepted"))),
    }
}

/// The stage's checks, run just now, do not pass: another turn costs model calls, so a person
/// decides whether to run it again.
fn not_eligible(s: &ItemSession<'_>, w: &WorkflowView, stage: &str) -> Step {
    let why = w
        .assessment
        .as_ref()
        .and_then(|a| a.problems.first().cloned())
        .unwrap_or_else(|| "its checks did not pass".to_owned());
    Step::Settle(Settled {
        phase: Phase::Failed,
        detail: format!("stage {stage}: {why}"),
        next: w
            .control(CommandName::WorkflowRun)
            .map(|c| in_project(s, &c.shell)),
    })
}

/// Gives the session `text` (a task, or what continues it) under `policy`, as command `id`,
/// and follows the run.
fn say(s: &mut ItemSession<'_>, policy: ActionPolicy, id: &str, text: &str) -> Result<Step> {
    let kind = CommandKind::Say {
        text: text.to_owned(),
        policy,
    };
    follow_after(s, Some(id), kind)
}

/// Runs the current stage (a turn of the agent) and follows it.
fn run_stage(s: &mut ItemSession<'_>, w: &WorkflowView) -> Result<Step> {
    let revision = w.revision;
    follow_after(s, None, CommandKind::WorkflowRun { revision })
}

/// Runs the current stage's checks: checks that do not pass are recorded in the run (the next
/// look settles the item with them); a refusal fails the item with the gateway's reason.
fn evaluate(s: &mut ItemSession<'_>, w: &WorkflowView) -> Result<Step> {
    let revision = w.revision;
    follow_after(s, None, CommandKind::WorkflowEvaluate { revision })
}

/// Submits `kind` (as command `id`, or a new id) and follows what it started. A refusal whose
/// target moved on (stale) is looked at again; any other refusal settles the item as failed,
/// with the gateway's reason.
fn follow_after(s: &mut ItemSession<'_>, id: Option<&str>, kind: CommandKind) -> Result<Step> {
    match s.submit(id, kind)? {
        Submitted::Applied => {
            s.follow()?;
            Ok(Step::Again)
        }
        // Checks that do not pass are the run's to record; the next look settles the item.
        Submitted::Refused(why)
            if matches!(why.class(), RefusalClass::Stale | RefusalClass::NotEligible) =>
        {
            Ok(Step::Again)
        }
        Submitted::Refused(why) => Ok(Step::Settle(settle(Phase::Failed, &why.to_string()))),
    }
}

fn settle(phase: Phase, detail: &str) -> Settled {
    Settled {
        phase,
        detail: detail.to_owned(),
        next: None,
    }
}

/// A shell command that runs `command` in the item's project.
fn in_project(s: &ItemSession<'_>, command: &str) -> String {
    format!(
        "cd {} && {command}",
        shell_quote(&s.project().to_string_lossy())
    )
}
