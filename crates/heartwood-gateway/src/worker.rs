//! The supervised background worker that drives one session's agent.
//!
//! The worker owns the engine's conversation on a task of its own, so an interface can send
//! guidance, pause, resume or decide while a run is active. The engine's events reach the
//! journal through [`Core::record`] as they happen. When a run stops, the worker publishes the
//! pending action set (only then: the backend has settled) and a transient `execution_settled`.
//! A panic or error in the worker becomes a `run_interrupted` event; the gateway keeps serving.
//!
//! Starting a worker reconciles the engine's log with the journal first, in this order:
//! researcher input the engine never received is delivered, a decision recorded but never
//! applied is applied, the engine's events the journal lacks are translated and appended, and a
//! set the engine waits on but the journal does not show is published.

use std::sync::Arc;
use std::time::Duration;

use heartwood_agent::conversation::{
    ConfirmationPolicy, Conversation, ConversationConfig, ConversationError, EventKind,
    ExecutionStatus, GuidanceHandle, PauseHandle,
};
use heartwood_agent::tools::Risk;
use heartwood_events::{ActionPolicy, ActionSet, ActionSetId, Decision, Event, Lifecycle, Origin};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle};

use crate::GatewayError;
use crate::live::{Core, Live};
use crate::translate::{is_backend_derived, proposal_of};

/// What the worker is asked to do next.
#[derive(Debug)]
pub(crate) enum Work {
    /// Start a task.
    Task { text: String, policy: ActionPolicy },
    /// Apply the decision on the pending set, then continue.
    Decide {
        decision: Decision,
        reason: Option<String>,
    },
    /// Continue (after a pause, or after reconciliation found a run to continue).
    Run,
    /// Close the conversation and stop.
    Shutdown,
}

/// The gateway's side of a worker.
pub(crate) struct WorkerLink {
    work: mpsc::UnboundedSender<Work>,
    pause: PauseHandle,
    guidance: GuidanceHandle,
    /// Cancels the worker's task at its next await point (a model call, a tool's output).
    abort: AbortHandle,
    supervisor: Option<JoinHandle<()>>,
}

impl WorkerLink {
    /// Queues work; false when the worker has stopped.
    pub(crate) fn send(&self, work: Work) -> bool {
        self.work.send(work).is_ok()
    }

    /// Asks the running agent to pause at its next step.
    pub(crate) fn pause(&self) {
        self.pause.pause();
    }

    /// Withdraws a pause no run acted on (a new task starts unpaused). Called when the task is
    /// accepted, not when the worker picks it up, so a pause sent right after is kept.
    pub(crate) fn withdraw_pause(&self) {
        self.pause.withdraw();
    }

    /// Gives the agent guidance at its next step.
    pub(crate) fn guide(&self, text: &str) {
        self.guidance.send(text);
    }

    /// Cancels the worker at its next await point without waiting for it (for a gateway
    /// dropped without `close`). Its run is left as a crash would leave it, and the next
    /// process records it as interrupted.
    pub(crate) fn abort(self) {
        self.abort.abort();
    }

    /// Asks the worker to stop after the work in hand; the returned handle completes when it
    /// has. A run in progress is asked to pause at its next step first, so stopping never
    /// waits for a whole task.
    pub(crate) fn shut_down(mut self) -> Stopping {
        self.pause.pause();
        let _ = self.work.send(Work::Shutdown);
        Stopping {
            abort: self.abort.clone(),
            supervisor: self.supervisor.take(),
        }
    }
}

/// A worker asked to stop, until it has.
pub(crate) struct Stopping {
    abort: AbortHandle,
    supervisor: Option<JoinHandle<()>>,
}

impl Stopping {
    /// Waits up to `grace` for the worker to stop by itself; past that it is cancelled at its
    /// next await point. Returns whether it had to be cancelled, in which case the caller
    /// records why: a cancelled worker records nothing.
    pub(crate) async fn finish(self, grace: Duration) -> bool {
        let Some(mut supervisor) = self.supervisor else {
            return false;
        };
        if tokio::time::timeout(grace, &mut supervisor).await.is_ok() {
            return false;
        }
        self.abort.abort();
        let _ = supervisor.await;
        true
    }

    /// Cancels the worker now and waits until it has stopped.
    pub(crate) async fn cancel(self) {
        self.abort.abort();
        if let Some(supervisor) = self.supervisor {
            let _ = supervisor.await;
        }
    }
}

/// The id of the set whose first member is `first_action`.
pub(crate) fn set_id_for(first_action: u64) -> ActionSetId {
    ActionSetId::parse(&format!("set-{first_action}")).expect("set-<digits> is a valid id")
}

/// The engine's confirmation policy for a Heartwood action policy.
pub(crate) fn confirmation(policy: ActionPolicy) -> ConfirmationPolicy {
    match policy {
        ActionPolicy::AlwaysReview => ConfirmationPolicy::AlwaysConfirm,
        ActionPolicy::LowRiskAutomation => ConfirmationPolicy::ConfirmRisky {
            threshold: Risk::Medium,
            confirm_unknown: true,
        },
    }
}

/// Opens the session's conversation, reconciles it with the journal, and starts its worker.
pub(crate) fn start(
    live: &Arc<Live>,
    core: &mut Core,
    config: ConversationConfig,
    runtime: &Handle,
) -> Result<(), GatewayError> {
    let _context = runtime.enter();
    let mut conversation = Conversation::open(config).map_err(backend_error)?;
    let continue_run = reconcile(core, &mut conversation)?;

    let events_to = Arc::clone(live);
    conversation.on_event(move |event, sha256| {
        let mut core = events_to.lock();
        let translated = core.translator.translate(event);
        if core.stage(translated, Some(origin(event, sha256))).is_err()
            && let Some(worker) = &core.worker
        {
            worker.pause();
        }
    });
    // One group commit per engine durability point: the journal is never ahead of the
    // engine's own log, and a step costs one journal append instead of one per event.
    let durable_to = Arc::clone(live);
    conversation.on_durable(move || {
        let mut core = durable_to.lock();
        // A failed append poisons the writer, which refuses every later write and says why;
        // the run stops at its next step because the worker pauses it.
        if core.flush().is_err()
            && let Some(worker) = &core.worker
        {
            worker.pause();
        }
    });
    let tokens_to = Arc::clone(live);
    conversation.on_token(move |text| tokens_to.lock().token(text));

    let (work, queue) = mpsc::unbounded_channel();
    let pause = conversation.pause_handle();
    let guidance = conversation.guidance_handle();
    let inner = runtime.spawn(serve(conversation, queue, Arc::clone(live)));
    let supervised = Arc::clone(live);
    let abort = inner.abort_handle();
    let supervisor = runtime.spawn(async move {
        match inner.await {
            // Cancelled on purpose: whoever cancelled records why.
            Err(failure) if failure.is_cancelled() => {}
            Err(failure) => {
                let cause = match failure.try_into_panic() {
                    Ok(panic) => panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic".to_owned()),
                    Err(_) => "cancellation".to_owned(),
                };
                let mut core = supervised.lock();
                core.worker = None;
                let reason = format!(
                    "the agent worker stopped unexpectedly ({cause}); the record is intact, and \
                     the next command starts a new worker from it"
                );
                let _ = core.record(vec![Event::RunInterrupted { reason }]);
                core.settled();
            }
            Ok(()) => {}
        }
    });
    let link = WorkerLink {
        work,
        pause,
        guidance,
        abort,
        supervisor: Some(supervisor),
    };
    if continue_run {
        link.send(Work::Run);
    }
    core.worker = Some(link);
    Ok(())
}

/// The worker loop: one piece of work at a time, each followed by settling.
async fn serve(
    mut conversation: Conversation,
    mut queue: mpsc::UnboundedReceiver<Work>,
    live: Arc<Live>,
) {
    while let Some(work) = queue.recv().await {
        let prepared = match work {
            Work::Shutdown => break,
            Work::Run => Ok(()),
            Work::Task { text, policy } => {
                conversation.set_policy(confirmation(policy));
                conversation.send_message(&text)
            }
            Work::Decide {
                decision: Decision::AllowOnce,
                ..
            } => conversation.approve_pending(),
            Work::Decide {
                decision: Decision::RejectAll,
                reason,
            } => conversation.reject_pending(reason.as_deref().unwrap_or_default()),
        };
        let outcome = match prepared {
            Ok(()) => run_until_settled(&mut conversation).await,
            Err(error) => Err(error),
        };
        let mut core = live.lock();
        if let Err(error) = outcome {
            let reason = format!("the agent stopped: {error}");
            let _ = core.record(vec![Event::RunInterrupted { reason }]);
        }
        let _ = publish_pending(&mut core, &conversation);
        core.settled();
    }
    conversation.close().await;
}

/// Runs. Guidance that arrived as the agent finished is delivered and the run continues with
/// it; after any other stop it stays queued for the step that next runs.
async fn run_until_settled(
    conversation: &mut Conversation,
) -> Result<ExecutionStatus, ConversationError> {
    loop {
        let status = conversation.run().await?;
        if status != ExecutionStatus::Finished {
            return Ok(status);
        }
        let late = conversation.guidance_handle().drain();
        if late.is_empty() {
            return Ok(status);
        }
        for text in late {
            conversation.send_message(&text)?;
        }
    }
}

/// Brings the journal and the engine into agreement; returns whether a run should continue.
fn reconcile(core: &mut Core, conversation: &mut Conversation) -> Result<bool, GatewayError> {
    let mut continue_run = false;
    conversation.set_policy(confirmation(core.projection.policy));
    check_engine_log(core, conversation)?;

    // Researcher input the engine never received: always a suffix, because the journal records
    // it before the engine is given it.
    let inputs: Vec<String> = core
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::TaskSubmitted { text, .. } | Event::GuidanceSent { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let delivered = conversation
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Message {
                    speaker: heartwood_agent::conversation::Speaker::User,
                    ..
                }
            )
        })
        .count();
    for text in inputs.iter().skip(delivered) {
        conversation.send_message(text).map_err(backend_error)?;
        continue_run = true;
    }

    // A decision the journal holds for the set the engine still waits on.
    if let (Some(first), None, Some(decision)) = (
        undecided(conversation).first().copied(),
        &core.projection.pending,
        &core.projection.last_decision,
    ) && decision.set_id == set_id_for(first)
    {
        match decision.decision {
            Decision::AllowOnce => conversation.approve_pending(),
            Decision::RejectAll => {
                conversation.reject_pending(decision.reason.as_deref().unwrap_or_default())
            }
        }
        .map_err(backend_error)?;
        continue_run = true;
    }

    // The engine's events the journal lacks: by identity (every engine event after the last
    // one the journal names as an origin) once the journal names origins, by counting for a
    // session written before it did. Either way the translator sees every event in order.
    let covered = covered_by_journal(core);
    let recorded = core
        .events
        .iter()
        .filter(|e| is_backend_derived(&e.event))
        .count();
    let mut counted = 0usize;
    for event in conversation.events() {
        let translated = core.translator.translate(event);
        let missing = match covered {
            Some(last) => {
                if event.id <= last {
                    continue;
                }
                translated
            }
            None => {
                let skip = recorded.saturating_sub(counted).min(translated.len());
                counted += translated.len();
                translated.into_iter().skip(skip).collect()
            }
        };
        let sha256 = conversation.event_digest(event.id).unwrap_or_default();
        core.stage(missing, Some(origin(event, &sha256)))?;
    }
    core.flush()?;
    publish_pending(core, conversation)?;
    core.writer()?.mark_reconciled();

    // The journal says a run is on but the engine is not: the process running it stopped. A
    // run the researcher asked for and the engine never started (a task, guidance or decision
    // journaled just before the stop) continues; a run cut off midway is recorded as
    // interrupted rather than resumed behind the researcher's back (opening a session to look
    // at it must not spend model calls), and the next instruction continues it.
    let engine_running = conversation.state().status == ExecutionStatus::Running;
    if core.projection.lifecycle == Lifecycle::Running && !engine_running && !continue_run {
        let reason = "the Heartwood process running this task stopped before the task finished \
                      (a crash or a kill); nothing that had started runs again. Give the next \
                      instruction to continue"
            .to_owned();
        core.record(vec![Event::RunInterrupted { reason }])?;
    }
    Ok(continue_run)
}

/// The engine's log must agree with what the journal has sealed: the journal's engine-derived
/// events are the translation of the log's first events, and the researcher's messages in the
/// log are the ones the journal recorded, in order. Beyond that, the log may hold events the
/// journal lacks only when the process that served the session before ended without closing
/// it (a crash window); otherwise they were written by something other than Heartwood.
fn check_engine_log(core: &Core, conversation: &Conversation) -> Result<(), GatewayError> {
    let mismatch = |detail: String| {
        GatewayError::Backend(format!(
            "the agent's own log ({}) does not match the session's record: {detail}. The \
             session's record may still verify (`heartwood sessions verify`), but the agent \
             cannot continue from a log that disagrees with it; export the session if you need \
             it, and give the task again in a new session",
            core.writer
                .as_ref()
                .map(|w| w.paths().backend.join("events.jsonl").display().to_string())
                .unwrap_or_else(|| "backend/events.jsonl".to_owned())
        ))
    };
    let engine = conversation.events();
    let inputs: Vec<&str> = core
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::TaskSubmitted { text, .. } | Event::GuidanceSent { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let received = engine.iter().filter_map(|e| match &e.kind {
        EventKind::Message {
            speaker: heartwood_agent::conversation::Speaker::User,
            text,
        } => Some(text.as_str()),
        _ => None,
    });
    for (n, text) in received.enumerate() {
        if inputs.get(n) != Some(&text) {
            return Err(mismatch(format!(
                "researcher message {} in the agent's log is not the one the session recorded",
                n + 1
            )));
        }
    }

    let recorded: Vec<&Event> = core
        .events
        .iter()
        .map(|e| &e.event)
        .filter(|e| is_backend_derived(e))
        .collect();
    let shorter = || {
        mismatch(
            "it holds less than the session recorded of it (it was truncated, replaced or \
             deleted)"
                .to_owned(),
        )
    };
    let differs = |id: u64| {
        mismatch(format!(
            "its event {id} differs from what the session recorded of it"
        ))
    };
    let mut translator = crate::translate::Translator::default();
    let mut unrecorded = 0;
    if let Some(covered) = covered_by_journal(core) {
        // By identity: every origin the journal names is in the engine's log, byte for byte.
        // What the engine's events translate to may change between versions; which event each
        // journaled event came from does not.
        for origin in core.events.iter().filter_map(|e| e.origin.as_ref()) {
            match conversation.event_digest(origin.event) {
                None => return Err(shorter()),
                Some(sha256) if sha256 != origin.sha256 => return Err(differs(origin.event)),
                Some(_) => {}
            }
        }
        for event in engine.iter().take(conversation.restored_len()) {
            let translated = translator.translate(event);
            if event.id > covered {
                unrecorded += translated.len();
            }
        }
    } else {
        // A journal written before origins: its engine-derived events are the translation of
        // the log's first events, in order.
        let mut matched = 0;
        for event in engine.iter().take(conversation.restored_len()) {
            for translated in translator.translate(event) {
                match recorded.get(matched) {
                    Some(&journaled) if *journaled == translated => matched += 1,
                    Some(_) => return Err(differs(event.id)),
                    None => unrecorded += 1,
                }
            }
        }
        if matched < recorded.len() {
            return Err(shorter());
        }
    }
    let crashed = core
        .writer
        .as_ref()
        .is_some_and(|w| w.previous_writer_crashed());
    if unrecorded > 0 && !crashed {
        return Err(mismatch(format!(
            "it holds {unrecorded} event(s) the session never recorded, although the session \
             was closed normally"
        )));
    }
    Ok(())
}

/// The last engine event the journal names as an origin, or `None` for a journal that names
/// none (written before origins existed, or holding no engine event yet).
fn covered_by_journal(core: &Core) -> Option<u64> {
    core.events
        .iter()
        .filter_map(|e| e.origin.as_ref().map(|o| o.event))
        .max()
}

/// Where a journaled event came from: the engine event and the digest of its stored line.
fn origin(event: &heartwood_agent::conversation::AgentEvent, sha256: &str) -> Origin {
    Origin {
        event: event.id,
        sha256: sha256.to_owned(),
    }
}

/// The pending actions nobody has decided.
fn undecided(conversation: &Conversation) -> Vec<u64> {
    let state = conversation.state();
    if state.status != ExecutionStatus::WaitingForConfirmation {
        return Vec::new();
    }
    state
        .pending
        .iter()
        .copied()
        .filter(|id| !state.approved.contains(id))
        .collect()
}

/// Publishes the set the engine waits on, unless the journal already shows it.
fn publish_pending(core: &mut Core, conversation: &Conversation) -> Result<(), GatewayError> {
    let ids = undecided(conversation);
    let Some(first) = ids.first().copied() else {
        return Ok(());
    };
    let set_id = set_id_for(first);
    let shown = core.projection.pending.as_ref().map(|p| &p.set_id) == Some(&set_id);
    let decided = core.projection.last_decision.as_ref().map(|d| &d.set_id) == Some(&set_id);
    if shown || decided {
        return Ok(());
    }
    let members = conversation
        .events()
        .iter()
        .filter(|e| ids.contains(&e.id))
        .filter_map(proposal_of)
        .collect();
    let revision = core.next_seq();
    core.record(vec![Event::ActionSetPending {
        set: ActionSet {
            set_id,
            revision,
            members,
        },
    }])
}

fn backend_error(error: ConversationError) -> GatewayError {
    GatewayError::Backend(error.to_string())
}
