//! The command pipeline behind [`SessionGateway::submit`] (and its blocking form), in three
//! steps:
//!
//! 1. **prepare** ([`prepare`], [`worker_kit`]): before any lock, everything the command needs
//!    read: a run's input digests, a stage's checks, the evidence a review captures, the
//!    files an acceptance binds, a correction's recheck, a preview's freshness, the model
//!    route with its qualification and the skills an agent would start with. Slow work
//!    (files, `git`, a qualification request) never holds the session.
//! 2. **decide** ([`session`], [`workflow`]: one module per family, by the rules of
//!    [`admission`]): under the session's lock, the receipt check, the projection's rules and
//!    the journal's append, and nothing else that waits on the disk or the network, but
//!    starting the session's worker where the command needs one and none runs (the engine's
//!    reconciliation must see the projection it reconciles, so it runs under the lock).
//! 3. **effects**: after the append, the work the agent is sent (a task, a decision, a pause).
//!    An export's files are the one effect a receipt waits for: where the journal ends is
//!    taken under the lock, the bundle, transcript or crate is written without it, and the
//!    record is appended under the lock again.
//!
//! A session released while a command reached it is opened afresh and the command prepared
//! again, in a loop (never a call back into `submit`).

mod admission;
mod prepare;
mod session;
mod worker_kit;
mod workflow;

pub(super) use worker_kit::{WorkerKit, WorkerRefusal};

use std::sync::{Arc, MutexGuard};

use heartwood_events::{Command, CommandKind, Receipt};

use super::SessionGateway;
use crate::GatewayError;
use crate::content::content_digest;
use crate::error::BackendFailure;
use crate::live::{CommandKey, Core, Live};

/// How one pass through the pipeline ended.
enum Submitted {
    /// With this receipt.
    Answered(Receipt),
    /// The session was released as the command reached it, or typed text came to mean
    /// something else while it was prepared: the command, to send again.
    Released(Command),
}

/// What deciding a command under the lock has at hand.
pub(super) struct Deciding<'g, 'k> {
    pub(super) gateway: &'g SessionGateway,
    pub(super) live: &'g Arc<Live>,
    pub(super) key: CommandKey<'k>,
    /// What was read for it before the lock.
    pub(super) prepared: prepare::Prepared,
}

impl SessionGateway {
    /// Submits a command and answers its receipt once the command is decided (recorded, or
    /// refused with the reason); what the command sets going (the agent's run, a check) follows
    /// on the session's [`updates`](SessionGateway::updates), each event naming the command that
    /// caused it. A retry with the same command id answers the first receipt without acting
    /// again.
    ///
    /// The command's preparation (file reads, checks, route qualification) and its journal
    /// append run on the runtime's blocking pool, so the caller's runtime never waits on a disk
    /// or a model.
    pub async fn submit(&self, command: Command) -> Result<Receipt, GatewayError> {
        let gateway = SessionGateway::from_shared(Arc::clone(&self.shared));
        tokio::task::spawn_blocking(move || gateway.submit_blocking(command))
            .await
            .map_err(|e| GatewayError::Backend(BackendFailure::Joined(e)))?
    }

    /// [`SessionGateway::submit`] for callers with a thread of their own and no runtime to
    /// await on: a command line's main thread, Python's, a server's blocking pool. It waits on
    /// the journal's sync, so never call it from an async task.
    pub fn submit_blocking(&self, command: Command) -> Result<Receipt, GatewayError> {
        let mut command = command;
        loop {
            match self.submit_once(command)? {
                Submitted::Answered(receipt) => return Ok(receipt),
                Submitted::Released(again) => command = again,
            }
        }
    }

    fn submit_once(&self, command: Command) -> Result<Submitted, GatewayError> {
        let opening = match prepare::opening(self, &command) {
            Ok(opening) => opening,
            // Not recorded: there is no session to record it in.
            Err(refusal) => {
                return Ok(Submitted::Answered(Receipt::new(
                    command.command_id,
                    command.kind.name(),
                    heartwood_events::Outcome::Refused(refusal),
                )));
            }
        };
        let registers = matches!(
            command.kind,
            CommandKind::SubmitTask { .. }
                | CommandKind::WorkflowStart { .. }
                | CommandKind::Say { .. }
        );
        let live = match self.attach(&command.session, registers) {
            Ok(live) => live,
            // Another replica of a shared store drives the session: the command goes to it
            // through the store.
            Err(e) if e.is_owned_elsewhere() && self.shared.store.shared().is_some() => {
                use crate::relay::Forwarded;
                return match self.shared.store.shared() {
                    Some(store) => match crate::relay::forward(store, &command, e)? {
                        Forwarded::Answered(receipt) => Ok(Submitted::Answered(*receipt)),
                        // Nobody drives it now: open it here (the submit loop tries again).
                        Forwarded::Free => Ok(Submitted::Released(command)),
                    },
                    None => Err(e),
                };
            }
            // Another process serves the session: the command goes to it.
            Err(e) if e.is_owned_elsewhere() => {
                return match self.remote(&command.session) {
                    // A lost connection may have carried the command or not: the caller's
                    // retry with the same id is answered from its receipt either way.
                    Some(remote) => remote
                        .submit(command)
                        .map(Submitted::Answered)
                        .map_err(|lost| lost.or_owned(e)),
                    None => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        let prepared = prepare::prepare(self, &live, &command, opening);
        let core = live.lock();
        // Typed text that means something else now than when it was prepared (the run
        // stopped, say, so guidance became a task) is prepared again as what it means now.
        let moved_on = prepared.said.is_some()
            && prepared.said != prepare::meaning(core.projection(), &command.kind);
        if core.is_released() || moved_on {
            drop(core);
            return Ok(Submitted::Released(command));
        }
        let content = content_digest(&command.kind);
        let key = CommandKey {
            id: &command.command_id,
            name: command.kind.name(),
            content: &content,
            actor: command.actor.as_deref(),
        };
        let deciding = Deciding {
            gateway: self,
            live: &live,
            key,
            prepared,
        };
        deciding.decide(core, &command).map(Submitted::Answered)
    }
}

impl Deciding<'_, '_> {
    /// Answers a retried id from its receipt, refuses what the projection does not admit, and
    /// otherwise decides the command by its family.
    fn decide(
        self,
        mut core: MutexGuard<'_, Core>,
        command: &Command,
    ) -> Result<Receipt, GatewayError> {
        if let Some(receipt) = said_before(&mut core, command)? {
            return Ok(receipt);
        }
        if let Some(receipt) = core.writer()?.receipt_for_content(
            self.key.id,
            self.key.name,
            Some(self.key.content),
        )? {
            return Ok(receipt.clone());
        }
        if let Err(refusal) = admission::admissible(core.projection(), &command.kind) {
            return core.refuse(&self.key, refusal);
        }
        match command.kind {
            CommandKind::WorkflowStart { .. }
            | CommandKind::WorkflowRun { .. }
            | CommandKind::WorkflowEvaluate { .. }
            | CommandKind::WorkflowAccept { .. }
            | CommandKind::WorkflowReview { .. }
            | CommandKind::WorkflowCorrect { .. }
            | CommandKind::WorkflowReviewParallel { .. }
            | CommandKind::WorkflowCancel { .. } => self.workflow(&mut core, command),
            _ => self.session(core, command),
        }
    }
}

/// The receipt of typed text a build before [`CommandKind::Say`] recorded as the command it
/// meant (a task, or guidance, under the same id), or recovery rebuilt so from its events: a
/// retry of the same text is answered from it, not refused as a reused id. Other words under
/// that id are not a retry (the content digest differs) and go on to be refused.
fn said_before(core: &mut Core, command: &Command) -> Result<Option<Receipt>, GatewayError> {
    use heartwood_events::CommandName;
    let CommandKind::Say { text, policy } = &command.kind else {
        return Ok(None);
    };
    let Some(receipt) = core.writer()?.receipt(&command.command_id) else {
        return Ok(None);
    };
    let meant = match receipt.command() {
        Some(CommandName::SubmitTask) => CommandKind::SubmitTask {
            text: text.clone(),
            policy: *policy,
        },
        Some(CommandName::SendGuidance) => CommandKind::SendGuidance { text: text.clone() },
        _ => return Ok(None),
    };
    let same = receipt
        .content_sha256
        .as_deref()
        .is_none_or(|digest| digest == content_digest(&meant));
    Ok(same.then(|| receipt.clone()))
}
