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
pub(in crate::gateway) struct Prepared {
    /// What the command itself read, by command.
    pub(super) input: Input,
    /// The model route and what an agent would start with, for a command that needs the
    /// session's worker; `Err` is the reason it cannot have one.
    worker: Option<Result<WorkerKit, WorkerRefusal>>,
    /// What typed text ([`CommandKind::Say`]) meant when it was prepared; decided only if it
    /// still means that under the lock.
    pub(super) said: Option<Vec<CommandKind>>,
}

/// What one command read before the lock: a variant per command that reads anything, holding
/// exactly what its decision binds. A command whose session showed nothing to read (no run,
/// say) has [`Input::Nothing`], and its decision refuses it on the projection.
pub(super) enum Input {
    /// Nothing was read.
    Nothing,
    /// `workflow start`: the run's first event, or why it cannot start.
    Start(Result<Event, Refusal>),
    /// A task: the project's clean commit, where its work starts.
    Task {
        /// The clean commit, if the project is a clean Git work tree.
        starting_commit: Option<String>,
    },
    /// `workflow run`: the stage's turn.
    Run(RunInput),
    /// `workflow evaluate`: the stage's checks, run on the files now.
    Evaluate(Result<AssessmentView, GatewayError>),
    /// `workflow accept`: files its checks judged whose bytes changed since.
    Accept {
        /// The changed files.
        changed_evidence: Vec<String>,
    },
    /// `workflow review`: the stage's files, captured for the reviewer.
    Review(Result<Vec<CapturedFile>, GatewayError>),
    /// `workflow correct`: the correction's recheck on the files as they are.
    Correct {
        /// The definition the run is bound to.
        definition: Result<heartwood_workflow::Definition, GatewayError>,
        /// The recheck, with the run it was made against.
        rechecked: Result<(Recheck, Box<WorkflowView>), GatewayError>,
    },
    /// An allow of the pending set.
    Allow {
        /// Files the set's review previewed whose bytes changed since.
        stale_preview: Vec<String>,
        /// A reproduction's rerun, prepared by allowing it.
        reproduction: Option<Box<ReproductionPrepared>>,
    },
}

/// What `workflow run` read before the lock.
pub(super) struct RunInput {
    /// The clean commit, if the project is a clean Git work tree.
    pub(super) starting_commit: Option<String>,
    /// Files the run relies on that changed since they were bound.
    pub(super) changed_evidence: Vec<String>,
    /// The definition the run is bound to (its digest checked).
    pub(super) definition: Result<heartwood_workflow::Definition, GatewayError>,
}

impl Prepared {
    /// The worker's kit, taken once: `Err` when the command was not prepared for the agent.
    pub(super) fn take_worker(&mut self) -> Result<WorkerKit, WorkerRefusal> {
        self.worker
            .take()
            .unwrap_or(Err(WorkerRefusal::NotPrepared))
    }

    /// What the command read, taken once.
    pub(super) fn take_input(&mut self) -> Input {
        std::mem::replace(&mut self.input, Input::Nothing)
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
    let said = meaning(live.lock().projection(), &command.kind);
    // Typed text is prepared as what it means now (its first command needs the agent alike).
    let acting = said
        .as_ref()
        .and_then(|s| s.first())
        .unwrap_or(&command.kind);
    let input = match started {
        Some(started) => Input::Start(started),
        None => input(gateway, live, acting),
    };
    Prepared {
        input,
        worker: worker_policy(acting).map(|policy| gateway.worker_kit(live, policy)),
        said,
    }
}

/// What `kind` reads before the lock.
fn input(gateway: &SessionGateway, live: &Arc<Live>, kind: &CommandKind) -> Input {
    let project = &gateway.shared.project;
    if let CommandKind::SubmitTask { .. } = kind {
        return Input::Task {
            starting_commit: clean_head(gateway),
        };
    }
    if let CommandKind::Decide {
        decision: Decision::AllowOnce,
        ..
    } = kind
    {
        return prepare_allow(gateway, live);
    }
    let Some(run) = live.lock().projection().workflow.clone() else {
        return Input::Nothing;
    };
    match kind {
        CommandKind::WorkflowRun { .. } => Input::Run(RunInput {
            // `git status` can take a while.
            starting_commit: clean_head(gateway),
            changed_evidence: crate::workflow_run::changed_evidence(project, &run),
            definition: crate::workflow_run::bound_definition(project, &run),
        }),
        CommandKind::WorkflowEvaluate { .. } => {
            Input::Evaluate(crate::workflow_run::evaluate(project, &run))
        }
        // Acceptance binds to the bytes the checks judged: each is read again now.
        CommandKind::WorkflowAccept { .. } => Input::Accept {
            changed_evidence: crate::workflow_run::acceptance_drift(project, &run),
        },
        // A review captures the stage's files before anything is dispatched.
        CommandKind::WorkflowReview { .. } => {
            Input::Review(crate::review_evidence::capture(project, &run))
        }
        CommandKind::WorkflowCorrect {
            finding,
            destination,
            ..
        } => Input::Correct {
            definition: crate::workflow_run::bound_definition(project, &run),
            rechecked: crate::correction::recheck(project, &run, *finding as usize, destination)
                .map(|r| (r, Box::new(run))),
        },
        _ => Input::Nothing,
    }
}

/// An allow: whether the set's preview still matches the files, and the reproduction rerun
/// allowing it prepares (inputs, accepted results and the destination are read now).
fn prepare_allow(gateway: &SessionGateway, live: &Arc<Live>) -> Input {
    let (review, projection) = {
        let core = live.lock();
        let p = core.projection();
        // Cloned only where a rerun could be prepared (a workflow, one action waiting).
        let rerun =
            p.workflow.is_some() && p.pending.as_ref().is_some_and(|s| s.members.len() == 1);
        (core.review().cloned(), rerun.then(|| p.clone()))
    };
    let stale_preview = review
        .map(|review| {
            let workspace =
                heartwood_workspace::Workspace::open(gateway.shared.project.root()).ok();
            crate::review::stale(workspace.as_ref(), &review)
        })
        .unwrap_or_default();
    Input::Allow {
        stale_preview,
        reproduction: projection
            .and_then(|p| crate::reproduction::prepare(&gateway.shared.project, &p))
            .map(Box::new),
    }
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
