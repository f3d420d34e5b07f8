//! Drives one item as far as it can go without a person: the worker every engine runs
//! (`heartwood batch worker MANIFEST INDEX`, a local pool's thread, a Slurm array task).
//!
//! An item is an ordinary session in its project, moved on only by the `heartwood` commands a
//! researcher would type there (each a child process in the item's directory, so the one-door
//! and current-directory rules hold), with command ids fixed per item so a repeated submission
//! acts once. Between commands the driver reads the session through the gateway's read-only
//! listing, in this process (what `heartwood sessions ls` prints, without a process to print
//! it). What the session says decides the next step; the batch record only remembers what the
//! batch saw, and that its last worker was cut off.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use anyhow::{Context, Result};
use heartwood_events::workflow::{StageStatus, WorkflowView};
use heartwood_events::{ActionPolicy, CommandName, Lifecycle, SessionId, SessionProjection};
use heartwood_gateway::{ProjectContext, SessionAdmin, SessionListing};

use super::manifest::{Item, Manifest, Source, Work};
use super::record::{BatchDir, Phase, Record, Worker, now};

/// More steps than any definition has stages twice over: a loop that does not settle stops.
const MAX_STEPS: usize = 64;

/// The session now: its listing line and its projection.
struct Look {
    listing: SessionListing,
    projection: Option<SessionProjection>,
}

/// What one step did.
enum Step {
    /// Look again: the session moved.
    Again,
    /// The item settled here, for now.
    Settle {
        phase: Phase,
        detail: String,
        next: Option<String>,
    },
}

/// Runs item `index` until it settles, and returns its record. When another worker holds the
/// item, nothing is done and the record says so.
pub fn drive(manifest: &Manifest, dir: &BatchDir, index: usize) -> Result<Record> {
    let item = manifest.items.get(index).with_context(|| {
        format!(
            "the batch has {} items; there is no item {index}",
            manifest.items.len()
        )
    })?;
    let Some(_lock) = dir.lock(&item.name)? else {
        let mut record = dir.record(index, item)?;
        record.detail = "another worker holds this item; it was left alone".to_owned();
        return Ok(record);
    };
    let mut record = dir.record(index, item)?;
    // We hold the lock, so a record still saying "running" was left by a worker that stopped.
    let cut_off = matches!(record.phase, Phase::Running | Phase::Interrupted);
    record.phase = Phase::Running;
    record.detail = "a worker is on it".to_owned();
    record.next = None;
    record.attempts += 1;
    record.worker = Some(Worker::this());
    record.updated_at = now();
    dir.save(&record)?;

    let started = Instant::now();
    let settled = run_item(manifest, dir, item, &mut record, cut_off);
    let (phase, detail, next) = match settled {
        Ok(step) => step,
        Err(e) => (Phase::Failed, format!("{e:#}"), None),
    };
    record.phase = phase;
    record.detail = detail;
    record.next = next;
    record.wall_seconds += started.elapsed().as_secs_f64();
    record.updated_at = now();
    dir.save(&record)?;
    Ok(record)
}

fn run_item(
    manifest: &Manifest,
    dir: &BatchDir,
    item: &Item,
    record: &mut Record,
    mut cut_off: bool,
) -> Result<(Phase, String, Option<String>)> {
    let project = dir.prepare(manifest, item)?;
    let log_path = dir.log_path(&item.name);
    let mut run = Runner {
        project: &project,
        admin: admin_of(&project)?,
        log: open_log(&log_path)?,
        log_path,
        session: record.session.clone(),
    };
    if let Some(route) = &manifest.route
        && !record.route_connected
    {
        match super::route::connect(&route.connect_args, &project)? {
            Ok(said) => run.note(&said)?,
            Err(why) => {
                run.note(&format!("the route was not connected: {why}"))?;
                return Ok((
                    Phase::Failed,
                    format!(
                        "the route could not be connected in {}: {why}",
                        project.display()
                    ),
                    None,
                ));
            }
        }
        record.route_connected = true;
    }
    let mut evaluated = BTreeSet::new();
    // A project this batch has just made holds no session yet: the first look is skipped.
    let mut fresh = record.attempts == 1 && matches!(item.source, Source::Template(_));
    for _ in 0..MAX_STEPS {
        let look = if std::mem::take(&mut fresh) {
            None
        } else {
            run.look()?
        };
        if let Some(p) = look.as_ref().and_then(|l| l.projection.as_ref()) {
            note(record, p);
        }
        let step = match &manifest.work {
            Work::Task { text } => {
                let text = item.ask.as_deref().unwrap_or(text);
                task_step(&mut run, look, text, manifest.policy, record, &mut cut_off)?
            }
            Work::Workflow {
                definition,
                question,
            } => {
                let question = item.ask.as_deref().unwrap_or(question);
                let start = (definition.as_str(), question, item);
                workflow_step(&mut run, look, start, &mut evaluated, &mut cut_off)?
            }
        };
        if let Step::Settle {
            phase,
            detail,
            next,
        } = step
        {
            return Ok((phase, detail, next));
        }
    }
    Ok((
        Phase::Failed,
        format!(
            "the item did not settle after {MAX_STEPS} steps; look at it with `heartwood workflow status` in its project"
        ),
        None,
    ))
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

/// Settles where the session needs a person or another process, whatever the work: a set
/// waiting for a decision, a paused run, a session open elsewhere. `None`: the batch may act.
fn needs_someone(run: &Runner, look: &Look, cut_off: bool) -> Option<Step> {
    let l = &look.listing;
    if let Some(pid) = l.writer_pid {
        return Some(Step::Settle {
            phase: Phase::Waiting,
            detail: format!(
                "open in another Heartwood process (pid {pid}); the batch leaves it alone until \
                 that process lets go (then `heartwood batch resume`)"
            ),
            next: None,
        });
    }
    match (l.state, &l.pending) {
        (Some(Lifecycle::WaitingForDecision), Some(set)) => Some(Step::Settle {
            phase: Phase::Waiting,
            detail: format!(
                "waiting for your decision on {} proposed action{}",
                set.members,
                if set.members == 1 { "" } else { "s" }
            ),
            next: Some(run.in_project(&format!(
                "heartwood decide {} --set {} --revision {} allow   # or reject; shows the set whole",
                l.id, set.set_id, set.revision
            ))),
        }),
        (Some(Lifecycle::Paused), _) if !cut_off => Some(Step::Settle {
            phase: Phase::Waiting,
            detail: "paused by a person".to_owned(),
            next: Some(run.in_project(&format!(
                "heartwood exec --session {} \"go on\"",
                l.id
            ))),
        }),
        _ => None,
    }
}

fn task_step(
    run: &mut Runner,
    look: Option<Look>,
    text: &str,
    policy: ActionPolicy,
    record: &Record,
    cut_off: &mut bool,
) -> Result<Step> {
    let task_id = format!("{}-task", run.session);
    let Some(look) = look else {
        return run.say(policy, &task_id, text);
    };
    if let Some(step) = needs_someone(run, &look, *cut_off) {
        return Ok(step);
    }
    let last_error = look
        .projection
        .as_ref()
        .and_then(|p| p.last_error.clone())
        .unwrap_or_default();
    match look.listing.state {
        Some(Lifecycle::Finished) if !*cut_off => Ok(settle(Phase::Done, "finished")),
        // Not given yet, or given by a worker that stopped before the gateway took it: the
        // same command id makes a second submission act once.
        Some(Lifecycle::Idle) | None => run.say(policy, &task_id, text),
        // Cut off midway (its worker was killed, cancelled or preempted): the next instruction
        // continues it; the journal's receipts keep an action that ran from running again.
        Some(Lifecycle::Running | Lifecycle::Failed | Lifecycle::Paused | Lifecycle::Finished)
            if *cut_off || look.listing.state == Some(Lifecycle::Running) =>
        {
            *cut_off = false;
            let id = format!("{}-continue-{}", run.session, record.attempts);
            run.say(policy, &id, "Continue the task where it stopped.")
        }
        Some(Lifecycle::Stuck) => Ok(settle(
            Phase::Failed,
            "the agent repeated itself without progress and was stopped",
        )),
        _ => Ok(settle(
            Phase::Failed,
            &format!("the run failed: {last_error}"),
        )),
    }
}

fn workflow_step(
    run: &mut Runner,
    look: Option<Look>,
    (definition, question, item): (&str, &str, &Item),
    evaluated: &mut BTreeSet<String>,
    cut_off: &mut bool,
) -> Result<Step> {
    let session = run.session.clone();
    let Some(look) = look else {
        let mut args = vec![
            "workflow".to_owned(),
            "start".to_owned(),
            definition.to_owned(),
            question.to_owned(),
            "--session".to_owned(),
            session,
        ];
        for (id, path) in &item.workflow_inputs {
            args.extend(["--input".to_owned(), format!("{id}={path}")]);
        }
        let status = run.logged(&args)?;
        return Ok(if status.success() {
            Step::Again
        } else {
            settle(
                Phase::Failed,
                &run.said_why("the workflow run could not start"),
            )
        });
    };
    if let Some(step) = needs_someone(run, &look, *cut_off) {
        return Ok(step);
    }
    if look.listing.state == Some(Lifecycle::Running) {
        // Cut off mid-turn, and nobody holds it: taking it over (explicitly: looking never
        // does) records the interruption, and the stage can then run again.
        let status = run.logged(&["sessions", "resume", &session])?;
        if !status.success() {
            return Ok(settle(
                Phase::Failed,
                &run.said_why("the run cannot be read"),
            ));
        }
        *cut_off = true;
        return Ok(Step::Again);
    }
    let Some(w) = look.projection.as_ref().and_then(|p| p.workflow.clone()) else {
        return Ok(settle(
            Phase::Failed,
            &format!("session {session} in this project runs no workflow"),
        ));
    };
    // A stage turn cut off by the machine (not judged by its checks) runs again, as it was
    // running when the worker stopped; a turn that ended with its outcome is evaluated.
    let cut_turn = w
        .turn
        .as_ref()
        .is_some_and(|t| !t.open && t.problem.is_some());
    if std::mem::take(cut_off) && cut_turn && w.control(CommandName::WorkflowRun).is_some() {
        evaluated.clear();
        return run.exec(&["workflow", "run", &session]);
    }
    if w.cancelled {
        return Ok(settle(Phase::Done, "the run was cancelled"));
    }
    let Some(stage) = w.current_stage() else {
        return Ok(settle(Phase::Done, "every stage accepted"));
    };
    let id = stage.spec.id.clone();
    match stage.status {
        StageStatus::AwaitingResearcher => Ok(Step::Settle {
            phase: Phase::Waiting,
            detail: format!("stage {id} passed its checks and waits for your acceptance"),
            next: w
                .control(CommandName::WorkflowAccept)
                .map(|c| run.in_project(&c.shell)),
        }),
        StageStatus::AwaitingEvaluation if evaluated.insert(id.clone()) => run.evaluate(&session),
        StageStatus::AwaitingEvaluation => Ok(not_eligible(run, &w, &id)),
        StageStatus::Pending | StageStatus::Running => {
            if w.control(CommandName::WorkflowRun).is_none() {
                return Ok(settle(
                    Phase::Failed,
                    &format!("stage {id} cannot run again (its budget is used up)"),
                ));
            }
            evaluated.remove(&id);
            run.exec(&["workflow", "run", &session])
        }
        StageStatus::Accepted => Ok(settle(Phase::Done, "every stage accepted")),
    }
}

/// The stage's checks, run just now, do not pass: another turn costs model calls, so a person
/// decides whether to run it again.
fn not_eligible(run: &Runner, w: &WorkflowView, stage: &str) -> Step {
    let why = w
        .assessment
        .as_ref()
        .and_then(|a| a.problems.first().cloned())
        .unwrap_or_else(|| "its checks did not pass".to_owned());
    Step::Settle {
        phase: Phase::Failed,
        detail: format!("stage {stage}: {why}"),
        next: w
            .control(CommandName::WorkflowRun)
            .map(|c| run.in_project(&c.shell)),
    }
}

fn settle(phase: Phase, detail: &str) -> Step {
    Step::Settle {
        phase,
        detail: detail.to_owned(),
        next: None,
    }
}

fn policy_arg(policy: ActionPolicy) -> &'static str {
    match policy {
        ActionPolicy::LowRiskAutomation => "low-risk",
        _ => "always-review",
    }
}

/// Runs `heartwood` commands in the item's project, their output appended to its log, and
/// reads the item's session between them.
struct Runner<'a> {
    project: &'a Path,
    admin: SessionAdmin,
    log: File,
    log_path: std::path::PathBuf,
    session: String,
}

impl Runner<'_> {
    fn command(&self, args: &[impl AsRef<std::ffi::OsStr>]) -> Result<Command> {
        command_in(self.project, args)
    }

    /// Writes `line` to the log: what the driver did in this process.
    fn note(&mut self, line: &str) -> Result<()> {
        use std::io::Write;
        writeln!(self.log, "# {line}")?;
        Ok(())
    }

    /// Runs a command with its output in the log.
    fn logged(&mut self, args: &[impl AsRef<std::ffi::OsStr>]) -> Result<ExitStatus> {
        use std::io::Write;
        let shown: Vec<String> = args
            .iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        writeln!(self.log, "$ heartwood {}", shown.join(" "))?;
        let status = self
            .command(args)?
            .stdout(self.log.try_clone()?)
            .stderr(self.log.try_clone()?)
            .status()
            .context("cannot run heartwood")?;
        writeln!(self.log, "[exit: {}]", describe(status))?;
        Ok(status)
    }

    /// Runs a command that moves the session on and follows it; the exit code says where it
    /// stopped, and the next look says what that means.
    fn exec(&mut self, args: &[&str]) -> Result<Step> {
        let status = self.logged(args)?;
        if let Some(signal) = status.signal() {
            return Ok(Step::Settle {
                phase: Phase::Interrupted,
                detail: format!(
                    "its heartwood process was killed by signal {signal} before the item settled; \
                     `heartwood batch resume` continues it from its journal"
                ),
                next: None,
            });
        }
        // 0 finished, 3 waiting, 4 paused: the session says the rest. 1 failed, or 5 to 9
        // refused (by kind): so may it (a failed stage); the next look settles it.
        match status.code() {
            Some(0 | 1 | 3 | 4 | 5..=9) => Ok(Step::Again),
            _ => Ok(settle(Phase::Failed, &self.said_why("heartwood failed"))),
        }
    }

    /// Gives the session `text` (a task, or what continues it) under `policy`, as command `id`,
    /// and follows the run.
    fn say(&mut self, policy: ActionPolicy, id: &str, text: &str) -> Result<Step> {
        let session = self.session.clone();
        let policy = policy_arg(policy);
        self.exec(&[
            "exec",
            "--session",
            &session,
            "--policy",
            policy,
            "--command-id",
            id,
            text,
        ])
    }

    /// Runs the current stage's checks: checks that do not pass exit with the not-eligible
    /// code (the kind, not the words, tells it from other refusals) and move the session on
    /// (the next look settles the item with them); any other refusal or failure fails it.
    fn evaluate(&mut self, session: &str) -> Result<Step> {
        let status = self.logged(&["workflow", "evaluate", session])?;
        let not_eligible = i32::from(crate::refused::EXIT_NOT_ELIGIBLE);
        Ok(match status.code() {
            Some(0) => Step::Again,
            Some(code) if code == not_eligible => Step::Again,
            _ => settle(Phase::Failed, &self.said_why("refused")),
        })
    }

    /// The session as it stands, or `None` before it exists; an append a crash cut is
    /// completed first (`heartwood sessions recover`).
    fn look(&mut self) -> Result<Option<Look>> {
        let look = match look_at(&self.admin, &self.session)? {
            Some(l) if l.listing.interrupted && l.listing.writer_pid.is_none() => l,
            other => return Ok(other),
        };
        let status = self
            .command(&["sessions", "recover", &self.session])?
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() {
            anyhow::bail!(
                "session {} has an interrupted append that `heartwood sessions recover` could \
                 not complete",
                look.listing.id
            );
        }
        look_at(&self.admin, &self.session)
    }

    /// A shell command that runs `command` in the item's project.
    fn in_project(&self, command: &str) -> String {
        format!(
            "cd {} && {command}",
            shell_quote(&self.project.to_string_lossy())
        )
    }

    /// The last thing heartwood said in the log (its `heartwood: ...` line), or `fallback`.
    /// Only the log's end is read: it holds the command that just ran, and the log grows with
    /// every attempt.
    fn said_why(&self, fallback: &str) -> String {
        use std::io::{Read, Seek, SeekFrom};
        const TAIL: u64 = 64 << 10;
        let mut tail = Vec::new();
        let read = File::open(&self.log_path).and_then(|mut f| {
            let len = f.metadata()?.len();
            f.seek(SeekFrom::Start(len.saturating_sub(TAIL)))?;
            f.read_to_end(&mut tail)
        });
        if read.is_err() {
            return fallback.to_owned();
        }
        String::from_utf8_lossy(&tail)
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("heartwood: "))
            .map_or_else(|| fallback.to_owned(), str::to_owned)
    }
}

/// `heartwood ARGS` in `project`, with no input: every command the batch runs is one.
fn command_in(project: &Path, args: &[impl AsRef<std::ffi::OsStr>]) -> Result<Command> {
    let exe = std::env::current_exe().context("cannot find the heartwood program")?;
    let mut command = Command::new(exe);
    command.args(args).current_dir(project).stdin(Stdio::null());
    Ok(command)
}

/// Runs `heartwood ARGS` in `project` and returns what it printed.
pub fn heartwood_in(project: &Path, args: &[&str]) -> Result<std::process::Output> {
    command_in(project, args)?
        .output()
        .context("cannot run heartwood")
}

/// The gateway's read-only view of the sessions of `project`.
fn admin_of(project: &Path) -> Result<SessionAdmin> {
    let context = ProjectContext::at(project)
        .with_context(|| format!("{} cannot be a project", project.display()))?;
    Ok(SessionAdmin::new(&context))
}

/// Session `session` as it stands (read-only), or `None` before it exists.
fn look_at(admin: &SessionAdmin, session: &str) -> Result<Option<Look>> {
    let id =
        SessionId::parse(session).with_context(|| format!("{session:?} is not a session id"))?;
    let looked = admin
        .look(&id)
        .with_context(|| format!("cannot read session {session}"))?;
    Ok(looked.map(|(listing, projection)| Look {
        listing,
        projection,
    }))
}

/// The item's session's projection as it stands (read-only), or `None` when it cannot be read
/// or does not exist yet.
pub fn projection_of(project: &Path, session: &str) -> Option<SessionProjection> {
    look_at(&admin_of(project).ok()?, session).ok()??.projection
}

/// Whether the item's session still needs a person (a set, a paused run, an acceptance) or
/// is open elsewhere; `None` when it cannot be read.
pub fn still_waiting(project: &Path, session: &str) -> Option<bool> {
    let look = look_at(&admin_of(project).ok()?, session).ok()??;
    if look.listing.writer_pid.is_some()
        || matches!(
            look.listing.state,
            Some(Lifecycle::WaitingForDecision | Lifecycle::Paused)
        )
    {
        return Some(true);
    }
    let workflow = look.projection.and_then(|p| p.workflow);
    Some(workflow.is_some_and(|w| {
        w.current_stage()
            .is_some_and(|s| s.status == StageStatus::AwaitingResearcher)
    }))
}

fn open_log(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    File::options()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// An exit status in words.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "ended".to_owned(),
    }
}

/// `text` quoted for a POSIX shell when it needs it.
pub fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
