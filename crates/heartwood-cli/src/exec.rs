//! `heartwood exec` and `heartwood decide`: headless runs through the session gateway.
//!
//! Both submit one command and then follow the session until the agent stops: finished,
//! waiting for a decision, paused, or failed. The exit code says which, so scripts can branch
//! on it, and a stop for a decision prints the set whole with the exact command that answers it.
//! Ctrl-C pauses the agent at its next step instead of killing it mid-action.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::{Args, ValueEnum};
use heartwood_events::{
    ActionPolicy, ActionSetId, Change, Command, CommandId, CommandKind, Decision, Lifecycle,
    Outcome, Receipt, SessionId,
};
use heartwood_gateway::{ProjectContext, SessionGateway};

use crate::render;

/// Exit code: the agent is waiting for a decision on an action set.
pub const EXIT_WAITING: u8 = 3;
/// Exit code: the agent is paused.
pub const EXIT_PAUSED: u8 = 4;

/// How long a run may say nothing before `exec` says what it is waiting on.
const QUIET_NOTICE: Duration = Duration::from_secs(10);

const STOPPED_BY_RESEARCHER: &str = "stopped by the researcher (Ctrl-C twice); an action that \
    was running may have partly run and is not repeated. Give the task again to continue";

/// Arguments of `heartwood exec`.
#[derive(Args)]
pub struct ExecArgs {
    /// The task, in your words.
    task: String,
    /// Print one JSON event per line instead of text.
    #[arg(long)]
    json: bool,
    /// Continue this session (its id, a unique prefix of it, or `last`) instead of starting a
    /// new one.
    #[arg(long, conflicts_with = "last")]
    session: Option<String>,
    /// Continue the most recently active session.
    #[arg(long)]
    last: bool,
    /// When proposed actions wait for your decision (default: the platform's default policy,
    /// always-review unless its deployment file says otherwise).
    #[arg(long, value_enum)]
    policy: Option<PolicyArg>,
    /// An id for this command; repeating a command with the same id acts only once.
    #[arg(long)]
    command_id: Option<String>,
}

/// Arguments of `heartwood decide`.
#[derive(Args)]
pub struct DecideArgs {
    /// `SESSION allow|reject`, or `allow|reject` alone for the latest session. SESSION is its
    /// id, a unique prefix of it, or `last`; `allow` runs every action in the set once,
    /// `reject` runs none.
    #[arg(num_args = 1..=2, required = true, value_names = ["SESSION", "DECISION"])]
    words: Vec<String>,
    /// The most recently active session (as `last`).
    #[arg(long)]
    last: bool,
    /// The pending set, as shown (default: the set pending now, which is printed).
    #[arg(long = "set", requires = "revision")]
    set_id: Option<String>,
    /// The set's revision, as shown (default: the pending set's).
    #[arg(long, requires = "set_id")]
    revision: Option<u64>,
    /// Why (recorded; on rejection the agent reads it too).
    #[arg(long)]
    reason: Option<String>,
    /// Print one JSON event per line instead of text.
    #[arg(long)]
    json: bool,
    /// An id for this command; repeating a command with the same id acts only once.
    #[arg(long)]
    command_id: Option<String>,
    /// Where the session is kept: `files` (the project's, the default) or a `postgres://`
    /// URL shared by `heartwood serve` replicas.
    #[arg(long, value_name = "URL")]
    session_store: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum PolicyArg {
    /// Every action set waits for your decision.
    AlwaysReview,
    /// Sets of low-risk actions (reading, planning) run without waiting.
    LowRisk,
}

#[derive(Clone, Copy, ValueEnum)]
enum DecisionArg {
    /// Allow every action in the set to run once.
    Allow,
    /// Reject every action in the set.
    Reject,
}

/// Runs `heartwood exec`.
pub fn exec(project: ProjectContext, args: ExecArgs) -> Result<ExitCode> {
    let session = match (&args.session, args.last) {
        // An id no session has (nor starts with) names a new session.
        (Some(id), _) => match heartwood_gateway::SessionAdmin::new(&project).resolve(id) {
            Ok(session) => session,
            Err(e) if e.kind() == heartwood_gateway::ErrorKind::NotFound && id != "last" => {
                SessionId::parse(id)?
            }
            Err(e) => return Err(e.into()),
        },
        (None, true) => heartwood_gateway::SessionAdmin::new(&project).resolve("last")?,
        (None, false) => SessionGateway::new_session_id(),
    };
    let policy = match args.policy {
        Some(PolicyArg::AlwaysReview) => ActionPolicy::AlwaysReview,
        Some(PolicyArg::LowRisk) => ActionPolicy::LowRiskAutomation,
        None => {
            heartwood_gateway::config::ProjectConfig::load(&project)?
                .platform()?
                .default_policy
        }
    };
    let id = command_id(args.command_id)?;
    let task = args.task;
    // What the text means (a task, or guidance and resuming a paused one) is the gateway's
    // rule, the same as in the terminal and browser interfaces: typed text is one command.
    follow(project, session.clone(), args.json, move |gateway| {
        let text = task.clone();
        let said = Command::new(
            id.clone(),
            session.clone(),
            CommandKind::Say { text, policy },
        );
        Ok(vec![gateway.submit_blocking(said)?])
    })
}

/// Runs `heartwood decide`.
pub fn decide(project: ProjectContext, args: DecideArgs) -> Result<ExitCode> {
    let (named, decision) = match (args.words.as_slice(), args.last) {
        ([session, decision], false) => (session.as_str(), decision),
        // `decide allow` decides the latest session's set, as `decide last allow` does.
        ([decision], _) => ("last", decision),
        ([_, _], true) => anyhow::bail!("give a session or --last, not both"),
        _ => anyhow::bail!("say which session: heartwood decide SESSION allow|reject, or --last"),
    };
    let decision = DecisionArg::from_str(decision, true)
        .map_err(|_| anyhow::anyhow!("the decision is `allow` or `reject`, not {decision:?}"))?;
    let store = match &args.session_store {
        Some(url) => heartwood_gateway::SessionStoreChoice::parse(url)?,
        None => heartwood_gateway::SessionStoreChoice::Files,
    };
    let session = heartwood_gateway::SessionAdmin::with_store(&project, &store).resolve(named)?;
    let (set_id, revision) = match (args.set_id, args.revision) {
        (Some(set), Some(revision)) => (ActionSetId::parse(&set)?, revision),
        _ => {
            // The set pending now, as the session shows it (there is at most one).
            let gateway = SessionGateway::new(project.clone()).with_store(&store);
            let projection = gateway.projection(&session)?;
            // Refused as the gateway would refuse the decision: nothing waits.
            let Some(set) = projection.pending else {
                let lifecycle = projection.lifecycle;
                let refusal = heartwood_events::Refusal::NothingPending { lifecycle };
                return Err(crate::refused::Refused(refusal).into());
            };
            eprintln!(
                "heartwood: deciding set {} (revision {}, {} action{})",
                set.set_id,
                set.revision,
                set.members.len(),
                if set.members.len() == 1 { "" } else { "s" }
            );
            (set.set_id, set.revision)
        }
    };
    let kind = CommandKind::Decide {
        set_id,
        revision,
        decision: match decision {
            DecisionArg::Allow => Decision::AllowOnce,
            DecisionArg::Reject => Decision::RejectAll,
        },
        reason: args.reason,
    };
    let id = command_id(args.command_id)?;
    follow_in_store(project, store, session.clone(), args.json, move |gateway| {
        let command = Command::new(id.clone(), session.clone(), kind.clone());
        Ok(vec![gateway.submit_blocking(command)?])
    })
}

/// Gives `session` a task (always-review) and follows it, as `heartwood exec` does.
pub fn run_task(project: &ProjectContext, session: &str, task: &str) -> Result<ExitCode> {
    run_task_with(project, session, task, ActionPolicy::AlwaysReview)
}

/// Gives `session` a task under `policy` and follows it.
pub fn run_task_with(
    project: &ProjectContext,
    session: &str,
    task: &str,
    policy: ActionPolicy,
) -> Result<ExitCode> {
    let kind = CommandKind::SubmitTask {
        text: task.to_owned(),
        policy,
    };
    follow_command(project, SessionId::parse(session)?, kind, false)
}

/// Allows the pending set once and follows the run, as `heartwood decide … allow` does.
pub fn run_decision(
    project: &ProjectContext,
    session: &str,
    set_id: &ActionSetId,
    revision: u64,
) -> Result<ExitCode> {
    let kind = CommandKind::Decide {
        set_id: set_id.clone(),
        revision,
        decision: Decision::AllowOnce,
        reason: None,
    };
    follow_command(project, SessionId::parse(session)?, kind, false)
}

/// Submits `kind` to `session` and follows the run it starts, as `exec` does.
pub fn follow_command(
    project: &ProjectContext,
    session: SessionId,
    kind: CommandKind,
    json: bool,
) -> Result<ExitCode> {
    let id = SessionGateway::new_command_id();
    follow(project.clone(), session.clone(), json, move |gateway| {
        let command = Command::new(id.clone(), session.clone(), kind.clone());
        Ok(vec![gateway.submit_blocking(command)?])
    })
}

fn command_id(given: Option<String>) -> Result<CommandId> {
    Ok(match given {
        Some(id) => CommandId::parse(&id)?,
        None => SessionGateway::new_command_id(),
    })
}

/// Acts on the session with `act` (which returns the receipts of the commands it submitted),
/// then prints the session's events until the agent stops.
fn follow(
    project: ProjectContext,
    session: SessionId,
    json: bool,
    act: impl Fn(&SessionGateway) -> Result<Vec<Receipt>>,
) -> Result<ExitCode> {
    follow_in_store(
        project,
        heartwood_gateway::SessionStoreChoice::Files,
        session,
        json,
        act,
    )
}

/// [`follow`] for a session kept in `store`.
fn follow_in_store(
    project: ProjectContext,
    store: heartwood_gateway::SessionStoreChoice,
    session: SessionId,
    json: bool,
    act: impl Fn(&SessionGateway) -> Result<Vec<Receipt>>,
) -> Result<ExitCode> {
    heartwood_cli::runtime::block_on(heartwood_cli::runtime::Workers::Two, async move {
        // Ctrl-C is listened for before the task is given: one pressed while the run starts
        // pauses it like any other, instead of killing this process mid-command.
        let mut interrupts =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let gateway = SessionGateway::new(project.clone()).with_store(&store);
        let result = match act_when_free(&gateway, &session, act).await {
            Ok(receipts) => {
                follow_in(&gateway, session.clone(), receipts, json, &mut interrupts).await
            }
            Err(e) => Err(e),
        };
        if result.is_err() {
            outlive_hosted_run(&gateway, &session).await;
        }
        gateway.close().await;
        let (settled, code) = result?;
        if json {
            let files = files_changed(project, session).await;
            for line in crate::json_stream::closing_lines(&settled, code, &files)? {
                say!("{line}");
            }
        }
        Ok(ExitCode::from(code))
    })?
}

/// The project's changed files as the workspace view lists them (Git's changes, or without Git
/// the session's own edits), read off the runtime's threads.
async fn files_changed(project: ProjectContext, session: SessionId) -> Vec<String> {
    tokio::task::spawn_blocking(move || {
        let service = heartwood_gateway::WorkspaceService::open(&project).ok()?;
        let report = service
            .changes(Some(session.as_str()), Default::default())
            .ok()?;
        Some(
            report
                .changes
                .changes
                .into_iter()
                .map(|c| c.path.to_string())
                .collect(),
        )
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_default()
}

/// A command that failed here may still leave this process serving a run another process
/// started (it took the session first, and the other's command came to it): closing now would
/// pause that run, so the process stays until the run stops. Ctrl-C leaves at once (and
/// pauses it).
async fn outlive_hosted_run(gateway: &SessionGateway, session: &SessionId) {
    let running = |g: &SessionGateway| {
        g.serves_here(session) && g.projection(session).is_ok_and(|p| !p.is_settled())
    };
    if !running(gateway) {
        return;
    }
    eprintln!(
        "heartwood: this process serves the run another command started in session {session}; \
         it stays until that run stops (Ctrl-C leaves now and pauses it)"
    );
    tokio::select! {
        _ = gateway.settled(session, HOSTED_RUN_WAIT) => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The longest a process stays for a run it serves for another process.
const HOSTED_RUN_WAIT: Duration = Duration::from_secs(24 * 3600);

/// How long a command waits for another Heartwood process to let go of the session (an `exec`
/// printing its pending set, a `decide` started a moment earlier) before it gives up.
const OWNER_WAIT: Duration = Duration::from_secs(30);

/// Acts on `session` with `act` once it is served (here, or by another process whose channel
/// answers), so the lifecycle a command plan reads is where the agent really stands: serving
/// it reconciles it with its engine. While another process holds it without answering (one
/// that is finishing refuses what it is sent), waits and tries again, up to [`OWNER_WAIT`]:
/// `act`'s command ids are fixed before the first try, so a retry never acts twice. A session
/// that does not exist yet is fine.
async fn act_when_free(
    gateway: &SessionGateway,
    session: &SessionId,
    act: impl Fn(&SessionGateway) -> Result<Vec<Receipt>>,
) -> Result<Vec<Receipt>> {
    let owned_elsewhere = |e: &anyhow::Error| {
        e.downcast_ref::<heartwood_gateway::GatewayError>()
            .is_some_and(heartwood_gateway::GatewayError::is_owned_elsewhere)
    };
    let started = Instant::now();
    let mut told = false;
    loop {
        // Free when this process can serve it, or its owner answers for it; an owner that is
        // finishing may still refuse the command itself, which is waited out the same way.
        // Serving a session and submitting to it read and sync files: off the runtime's
        // workers, which keep following the run meanwhile.
        let tried = tokio::task::block_in_place(|| match gateway.serve(session) {
            Err(e) if e.is_owned_elsewhere() => Err(e.into()),
            _ => act(gateway),
        });
        match tried {
            Err(e) if owned_elsewhere(&e) && started.elapsed() < OWNER_WAIT => {
                if !told {
                    eprintln!("heartwood: {e}; waiting up to {} s", OWNER_WAIT.as_secs());
                    told = true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

async fn follow_in(
    gateway: &SessionGateway,
    session: SessionId,
    receipts: Vec<Receipt>,
    json: bool,
    interrupts: &mut tokio::signal::unix::Signal,
) -> Result<(heartwood_events::Snapshot, u8)> {
    let mut seen = None;
    for receipt in receipts {
        match &receipt.outcome {
            Outcome::Refused(refusal) => {
                return Err(crate::refused::Refused(refusal.clone()).into());
            }
            Outcome::Applied { last_seq, .. } => {
                let first = last_seq.map_or(0, |s| s.get().saturating_sub(1));
                seen = Some(seen.unwrap_or(first));
            }
        }
    }
    let seen = seen.unwrap_or(0);
    if json {
        // Every line names the session, so lines from several runs can be told apart.
        say!(
            "{}",
            serde_json::json!({ "session": session, "type": "following" })
        );
    } else {
        say!("session {session}");
    }
    // Only what the journal holds: a line printed is never one a crash could take back. The
    // gateway's follow sends each such event once, in order, lags included.
    let mut follow = gateway.follow_durable(&session, seen).await?;
    let mut interrupted = false;
    let mut quiet_since = Instant::now();
    let mut last_notice = Instant::now();
    let settled = loop {
        if let Some(settled) = follow.settled().await? {
            break settled;
        }
        // A run that says nothing for a while says what it is waiting on, and for how long.
        let quiet = quiet_since.elapsed();
        if quiet >= QUIET_NOTICE && last_notice.elapsed() >= QUIET_NOTICE {
            last_notice = Instant::now();
            let now = follow.look().await?;
            eprintln!(
                "heartwood: still {} ({} s so far; Ctrl-C pauses, twice stops)",
                now.projection.activity,
                quiet.as_secs()
            );
        }
        tokio::select! {
            update = follow.next() => {
                let Some(update) = update else {
                    anyhow::bail!("the gateway closed while following session {session}");
                };
                match &update.change {
                    Change::Event { event } => {
                        if json {
                            say!("{}", crate::json_stream::event_line(&session, event)?);
                        } else {
                            say!("{:>5}  {}", event.seq, heartwood_gateway::transcript_line(event));
                        }
                        quiet_since = Instant::now();
                    }
                    Change::Output { text, .. } if !json => {
                        for line in text.lines() {
                            say!("       | {line}");
                        }
                        quiet_since = Instant::now();
                    }
                    _ => {}
                }
            }
            // Heard nothing for a second: look again (a session served elsewhere that went
            // quiet, or released and served again, is still seen).
            _ = tokio::time::sleep(Duration::from_secs(1)) => follow.look_again(),
            _ = interrupts.recv() => {
                if interrupted {
                    eprintln!("heartwood: stopping the agent now");
                    gateway.stop_now(&session, STOPPED_BY_RESEARCHER).await?;
                } else {
                    interrupted = true;
                    eprintln!("heartwood: stopping the running action and pausing (Ctrl-C again to stop the agent entirely)");
                    if let Some(kind) = follow.look().await?.projection.stop_command() {
                        gateway.submit(Command::new(SessionGateway::new_command_id(), session.clone(), kind)).await?;
                    }
                }
            }
        }
    };
    let code = outcome(&settled, json);
    Ok((settled, code))
}

/// Where the run stopped, printed for people (unless `json`), as the exit code that says it.
fn outcome(snapshot: &heartwood_events::Snapshot, json: bool) -> u8 {
    let p = &snapshot.projection;
    let waiting = p.lifecycle == Lifecycle::WaitingForDecision;
    if !json && !waiting {
        say!("\n{}", p.status_line);
        // A settled agent whose workflow run waits: the command that continues it.
        if let Some(step) = p
            .waits_for
            .as_ref()
            .filter(|w| w.kind != heartwood_events::WaitKind::Decision)
            .and_then(|w| w.steps.first())
        {
            say!("next: {}", step.shell);
        }
    }
    if !json && !p.usage.summary.is_empty() {
        say!("usage: {}", p.usage.summary);
    }
    match p.lifecycle {
        Lifecycle::WaitingForDecision => {
            if let (Some(set), Some(review), false) = (&p.pending, &snapshot.review, json) {
                render::pending_set(&p.session, set, review);
            }
            EXIT_WAITING
        }
        Lifecycle::Paused => {
            if !json {
                say!(
                    "Continue with: heartwood exec --session {} \"<guidance, or just: continue>\"",
                    p.session
                );
            }
            EXIT_PAUSED
        }
        Lifecycle::Failed | Lifecycle::Stuck => 1,
        Lifecycle::Idle | Lifecycle::Finished | Lifecycle::Running => 0,
    }
}
