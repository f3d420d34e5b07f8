//! The pipeline's first step: what a command needs read, done before any lock. Each command
//! gets the [`Prepared`] value its decision uses; the decision rechecks, under the lock, that
//! the session did not move on meanwhile (a revision, a stage, a pending set).

use std::sync::Arc;

use heartwood_events::workflow::{
    AssessmentView, CapturedFile, ReproductionPrepared, WorkflowView,
};
use heartwood_events::{ActionPolicy, Command, CommandKind, Decision, Event, Refusal};

use super::{WorkerKit, WorkerRefusal};
use crate::GatewayError;
use crate::correction::Recheck;
use crate::gateway::SessionGateway;
use crate::live::Live;

/// What a command found before its session was opened: a run's first event, or why it cannot
/// start. `Err` refuses the command before a session nobody can use is registered.
pub(super) type Opening = Option<Result<Event, Refusal>>;

/// What a command's decision needs that was read before the lock.
#[derive(Default)]
pub(in crate::gateway) struct Prepared {
    /// The run's first event (`workflow start`), or why it cannot start.
    pub(super) started: Opening,
    /// The project's clean commit, where the command starts agent work.
    pub(super) starting_commit: Option<String>,
    /// The stage's checks, run on the files now (`workflow evaluate`).
    pub(super) evaluated: Option<Result<AssessmentView, GatewayError>>,
    /// Files the run relies on (or, to accept, that its checks judged) that changed since.
    pub(super) changed_evidence: Vec<String>,
    /// The stage's files, captured for a review.
    pub(super) captured: Option<Result<Vec<CapturedFile>, GatewayError>>,
    /// A correction's recheck on the files as they are, with the run it was made against.
    pub(super) rechecked: Option<Result<(Recheck, Box<WorkflowView>), GatewayError>>,
    /// A reproduction's rerun, prepared by allowing it.
    pub(super) reproduction: Option<Box<ReproductionPrepared>>,
    /// The definition the run is bound to, read (and its digest checked) before the lock.
    pub(super) definition: Option<Result<heartwood_workflow::Definition, GatewayError>>,
    /// Files the pending set's review previewed whose bytes changed since (an allow).
    pub(super) stale_preview: Vec<String>,
    /// The model route and what an agent would start with, for a command that needs the
    /// session's worker; `Err` is the reason it cannot have one.
    pub(super) worker: Option<Result<WorkerKit, WorkerRefusal>>,
    /// What typed text ([`CommandKind::Say`]) meant when it was prepared; decided only if it
    /// still means that under the lock.
    pub(super) said: Option<Vec<CommandKind>>,
}

impl Prepared {
    /// The worker's kit, taken once: `Err` when the command was not prepared for the agent.
    pub(super) fn take_worker(&mut self) -> Result<WorkerKit, WorkerRefusal> {
        self.worker
            .take()
            .unwrap_or(Err(WorkerRefusal::NotPrepared))
    }
}

/// What is read before the session is registered: whether a task or run can be served at all,
/// and a run's bindings (digests of its inputs), so a definition or input that cannot be used
/// leaves no session behind.
pub(super) fn opening(gateway: &SessionGateway, command: &Command) -> Result<Opening, Refusal> {
    let exists = gateway.shared.store.exists(&command.session);
    let unusable = match &command.kind {
        _ if exists => None,
        // Typed text to a session not yet made is a task.
        kind @ (CommandKind::SubmitTask { policy, .. } | CommandKind::Say { policy, .. }) => {
            super::admission::blank_text(kind)
                .or_else(|| gateway.reachable_route(*policy).err().map(Refusal::from))
        }
        CommandKind::WorkflowStart { .. } => gateway
            .reachable_route(ActionPolicy::AlwaysReview)
            .err()
            .map(Refusal::from),
        _ => None,
    };
    if let Some(reason) = unusable {
        return Err(reason);
    }
    let CommandKind::WorkflowStart {
        definition,
        question,
        inputs,
    } = &command.kind
    else {
        return Ok(None);
    };
    let started = crate::workflow_run::start(
        &gateway.shared.project,
        format!("w-{}", command.command_id),
        definition,
        question,
        inputs,
    )
    .map_err(|why| Refusal::WorkflowUnusable {
        why: why.to_string(),
    });
    match started {
        Err(refusal) if !exists => Err(refusal),
        started => Ok(Some(started)),
    }
}

/// Reads what `command` needs, with the session's lock taken only for moments to copy the
/// projection's parts it reads from.
pub(super) fn prepare(
    gateway: &SessionGateway,
    live: &Arc<Live>,
    command: &Command,
    started: Opening,
) -> Prepared {
    let project = &gateway.shared.project;
    let workflow = || live.lock().projection().workflow.clone();
    let said = meaning(live.lock().projection(), &command.kind);
    // Typed text is prepared as what it means now (its first command needs the agent alike).
    let acting = said
        .as_ref()
        .and_then(|s| s.first())
        .unwrap_or(&command.kind);
    let mut prepared = Prepared {
        started,
        worker: worker_policy(acting).map(|policy| gateway.worker_kit(live, policy)),
        ..Prepared::default()
    };
    match acting {
        CommandKind::SubmitTask { .. } => prepared.starting_commit = clean_head(gateway),
        CommandKind::WorkflowRun { .. } => {
            // `git status` can take a while.
            prepared.starting_commit = clean_head(gateway);
            let run = workflow();
            prepared.changed_evidence = run
                .as_ref()
                .map(|w| crate::workflow_run::changed_evidence(project, w))
                .unwrap_or_default();
            prepared.definition = run.map(|w| crate::workflow_run::bound_definition(project, &w));
        }
        CommandKind::WorkflowEvaluate { .. } => {
            prepared.evaluated = workflow().map(|w| crate::workflow_run::evaluate(project, &w));
        }
        // Acceptance binds to the bytes the checks judged: each is read again now.
        CommandKind::WorkflowAccept { .. } => {
            prepared.changed_evidence = workflow()
                .map(|w| crate::workflow_run::acceptance_drift(project, &w))
                .unwrap_or_default();
        }
        // A review captures the stage's files before anything is dispatched.
        CommandKind::WorkflowReview { .. } => {
            prepared.captured = workflow().map(|w| crate::review_evidence::capture(project, &w));
        }
        CommandKind::WorkflowCorrect {
            finding,
            destination,
            ..
        } => {
            let run = workflow();
            prepared.definition = run
                .as_ref()
                .map(|w| crate::workflow_run::bound_definition(project, w));
            prepared.rechecked = run.map(|w| {
                crate::correction::recheck(project, &w, *finding as usize, destination)
                    .map(|r| (r, Box::new(w)))
            });
        }
        CommandKind::Decide {
            decision: Decision::AllowOnce,
            ..
        } => prepare_allow(gateway, live, &mut prepared),
        _ => {}
    }
    prepared.said = said;
    prepared
}

/// An allow: whether the set's preview still matches the files, and the reproduction rerun
/// allowing it prepares (inputs, accepted results and the destination are read now).
fn prepare_allow(gateway: &SessionGateway, live: &Arc<Live>, prepared: &mut Prepared) {
    let (review, projection) = {
        let core = live.lock();
        let p = core.projection();
        // Cloned only where a rerun could be prepared (a workflow, one action waiting).
        let rerun =
            p.workflow.is_some() && p.pending.as_ref().is_some_and(|s| s.members.len() == 1);
        (core.review().cloned(), rerun.then(|| p.clone()))
    };
    if let Some(review) = review {
        let workspace = heartwood_workspace::Workspace::open(gateway.shared.project.root()).ok();
        prepared.stale_preview = crate::review::stale(workspace.as_ref(), &review);
    }
    prepared.reproduction = projection
        .and_then(|p| crate::reproduction::prepare(&gateway.shared.project, &p))
        .map(Box::new);
}

/// What `kind` means in the session as `projection` shows it: for typed text, the commands
/// [`heartwood_events::SessionProjection::text_commands`] makes of it; `None` for every other command.
pub(super) fn meaning(
    projection: &heartwood_events::SessionProjection,
    kind: &CommandKind,
) -> Option<Vec<CommandKind>> {
    match kind {
        CommandKind::Say { text, policy } => Some(projection.text_commands(text, *policy)),
        _ => None,
    }
}

/// The policy a command's worker runs under, for the commands that need one (`None`: the
/// session's own).
fn worker_policy(kind: &CommandKind) -> Option<Option<ActionPolicy>> {
    match kind {
        CommandKind::SubmitTask { policy, .. } => Some(Some(*policy)),
        CommandKind::SendGuidance { .. } | CommandKind::Resume | CommandKind::Decide { .. } => {
            Some(None)
        }
        CommandKind::WorkflowRun { .. } | CommandKind::WorkflowReview { .. } => {
            Some(Some(ActionPolicy::AlwaysReview))
        }
        _ => None,
    }
}

fn clean_head(gateway: &SessionGateway) -> Option<String> {
    heartwood_workspace::Workspace::open(gateway.shared.project.root())
        .ok()
        .and_then(|w| w.clean_head())
}
