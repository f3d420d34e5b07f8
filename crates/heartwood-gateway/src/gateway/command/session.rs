//! Deciding the session family under the lock: a task, guidance, pause, interrupt, resume, a
//! decision on the pending set, an export, a rename, closing, and typed text as what it means. Each records its events, then
//! sends the agent its work.

use std::borrow::Cow;
use std::sync::MutexGuard;

use heartwood_events::{Command, CommandKind, CommandName, Decision, Event, Receipt, Refusal};
use serde_json::Value;

use super::Deciding;
use super::prepare::{Input, Prepared};
use crate::GatewayError;
use crate::gateway::lock;
use crate::live::{CommandKey, Core};
use crate::worker_link::Work;

impl Deciding<'_, '_> {
    pub(super) fn session(
        self,
        mut core: MutexGuard<'_, Core>,
        command: &Command,
    ) -> Result<Receipt, GatewayError> {
        let Deciding {
            gateway,
            live,
            key,
            mut prepared,
        } = self;
        let key = &key;
        // Typed text is decided as what it means now (prepared as the same: `submit_once`
        // prepares it again otherwise); guidance to a paused run resumes it too.
        let (kind, resumes) = match super::prepare::meaning(core.projection(), &command.kind) {
            Some(meant) => (
                Cow::Owned(meant.first().cloned().unwrap_or(CommandKind::Resume)),
                meant.len() > 1,
            ),
            None => (Cow::Borrowed(&command.kind), false),
        };
        match kind.as_ref() {
            CommandKind::SubmitTask { text, policy } => {
                if let Err(reason) = gateway.ensure_worker(live, &mut core, prepared.take_worker())
                {
                    return core.refuse(key, reason.into());
                }
                // Reconciling may have continued an earlier run.
                if !core.projection().lifecycle.accepts_task() {
                    let refusal =
                        super::admission::busy(core.projection(), CommandName::SubmitTask);
                    return core.refuse(key, refusal);
                }
                let starting_commit = match prepared.take_input() {
                    Input::Task { starting_commit } => starting_commit,
                    _ => None,
                };
                let event = Event::TaskSubmitted {
                    text: text.clone(),
                    policy: *policy,
                    starting_commit,
                };
                if let Some(worker) = core.worker() {
                    worker.withdraw_pause();
                }
                let receipt = core.complete(key, vec![event], Value::Null)?;
                send(
                    &core,
                    Work::Task {
                        text: text.clone(),
                        policy: *policy,
                    },
                );
                Ok(receipt)
            }
            CommandKind::SendGuidance { text } => {
                if let Err(reason) = gateway.ensure_worker(live, &mut core, prepared.take_worker())
                {
                    return core.refuse(key, reason.into());
                }
                let mut events = vec![Event::GuidanceSent { text: text.clone() }];
                if resumes {
                    events.push(Event::RunResumed {});
                }
                let receipt = core.complete(key, events, Value::Null)?;
                if let Some(worker) = core.worker() {
                    worker.guide(text);
                }
                if resumes {
                    send(&core, Work::Run);
                }
                Ok(receipt)
            }
            CommandKind::Pause => {
                let receipt = core.complete(key, vec![Event::PauseRequested {}], Value::Null)?;
                core.pause_worker();
                Ok(receipt)
            }
            CommandKind::Interrupt => {
                let receipt =
                    core.complete(key, vec![Event::InterruptRequested {}], Value::Null)?;
                if let Some(worker) = core.worker() {
                    worker.interrupt();
                }
                Ok(receipt)
            }
            CommandKind::Resume => {
                if let Err(reason) = gateway.ensure_worker(live, &mut core, prepared.take_worker())
                {
                    return core.refuse(key, reason.into());
                }
                let receipt = core.complete(key, vec![Event::RunResumed {}], Value::Null)?;
                send(&core, Work::Run);
                Ok(receipt)
            }
            CommandKind::Decide {
                set_id,
                revision,
                decision,
                reason,
            } => {
                if let Err(why) = gateway.ensure_worker(live, &mut core, prepared.take_worker()) {
                    return core.refuse(key, why.into());
                }
                decide_set(
                    &mut core,
                    key,
                    &mut prepared,
                    (set_id, *revision, *decision, reason),
                )
            }
            CommandKind::Export(request) => export(gateway, live, core, key, command, request),
            CommandKind::Rename { title } => {
                let event = Event::SessionRenamed {
                    title: crate::reducer::title_of(title),
                };
                core.complete(key, vec![event], Value::Null)
            }
            CommandKind::Close => {
                let receipt = core.complete(key, vec![Event::SessionClosed {}], Value::Null)?;
                let shared = &gateway.shared;
                if let Some(worker) = core.take_worker() {
                    lock(&shared.stopping).push(worker.shut_down());
                }
                core.release();
                drop(core);
                lock(&shared.live).remove(&command.session);
                Ok(receipt)
            }
            // Routed to their own family by `decide`; never here.
            _ => core.refuse(
                key,
                Refusal::Other {
                    why: "a workflow command is decided by the workflow family".into(),
                },
            ),
        }
    }
}

/// A decision on the pending set. Allowing a set whose preview no longer matches the files
/// would approve something nobody saw: the set is shown again (a new revision) and the
/// decision refused.
fn decide_set(
    core: &mut Core,
    key: &CommandKey<'_>,
    prepared: &mut Prepared,
    (set_id, revision, decision, reason): (
        &heartwood_events::ActionSetId,
        u64,
        Decision,
        &Option<String>,
    ),
) -> Result<Receipt, GatewayError> {
    let (stale, reproduction) = match prepared.take_input() {
        Input::Allow {
            stale_preview,
            reproduction,
        } => (stale_preview, reproduction),
        _ => (Vec::new(), None),
    };
    if decision == Decision::AllowOnce
        && !stale.is_empty()
        && let Some(mut set) = core.projection().pending.clone()
    {
        set.revision = core.next_seq();
        let refusal = Refusal::StaleDecision {
            set_id: set_id.clone(),
            revision,
            pending_set_id: set.set_id.clone(),
            pending_revision: set.revision,
            changed: stale,
        };
        core.record(vec![Event::ActionSetPending { set }])?;
        return core.refuse(key, refusal);
    }
    let mut events = Vec::new();
    // Prepared for the set shown then, which must still be the one decided.
    if let Some(prepared) = reproduction
        && core
            .projection()
            .pending
            .as_ref()
            .is_some_and(|p| p.members.len() == 1 && p.members[0].action_id == prepared.action_id)
    {
        events.push(Event::WorkflowReproductionPrepared(prepared));
    }
    events.push(Event::DecisionRecorded {
        set_id: set_id.clone(),
        revision,
        decision,
        reason: reason.clone(),
    });
    let receipt = core.complete(key, events, Value::Null)?;
    // A set counted at a used-up budget is still decided, and nothing follows it.
    if crate::workflow_run::used_up(core.projection()).is_some()
        && let Some(worker) = core.worker()
    {
        worker.pause_before_model();
    }
    send(
        core,
        Work::Decide {
            decision,
            reason: reason.clone(),
        },
    );
    Ok(receipt)
}

/// An export: where the journal ends is taken under the lock, the files are written without
/// it (a bundle or a crate can take seconds, and the session goes on meanwhile), and the
/// export is recorded under the lock again, unless a retry of the same command recorded it
/// first.
fn export(
    gateway: &crate::gateway::SessionGateway,
    live: &std::sync::Arc<crate::live::Live>,
    mut core: MutexGuard<'_, Core>,
    key: &CommandKey<'_>,
    command: &Command,
    request: &heartwood_events::ExportRequest,
) -> Result<Receipt, GatewayError> {
    core.flush()?;
    let end = core.writer()?.end()?;
    drop(core);
    let session = command.session.as_str();
    let exported = crate::export::perform(&end, &gateway.shared.project, request, |count| {
        gateway.admin().transcript_until(session, count)
    });
    let mut core = live.lock();
    if let Some(receipt) =
        core.writer()?
            .receipt_for_content(key.id, key.name, Some(key.content))?
    {
        return Ok(receipt.clone());
    }
    let (event, result) = exported?;
    core.complete(key, vec![event], result)
}

/// Sends the session's worker `work`, if it has one.
pub(super) fn send(core: &Core, work: Work) {
    if let Some(worker) = core.worker() {
        worker.send(work);
    }
}
