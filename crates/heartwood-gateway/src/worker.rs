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

use std::sync::{Arc, Weak};

use heartwood_events::{ActionSet, ActionSetId, Decision, Event, Lifecycle, Origin};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot};

use crate::GatewayError;
use crate::backend::{AgentBackend, BackendEntry, BackendError, BackendSink};
use crate::error::BackendFailure;
use crate::live::{Core, Live};
use crate::parallel_review::dispatch::{self, ReviewRoute};
use crate::translate::is_backend_derived;

use crate::worker_link::{Work, WorkerLink};

/// The id of the set whose first member is `first_action`.
pub(crate) fn set_id_for(first_action: u64) -> ActionSetId {
    ActionSetId::parse(&format!("set-{first_action}")).expect("set-<digits> is a valid id")
}

/// The runtime a worker runs on: its own, on a thread of its own. The engine writes its log
/// with `fsync` and the worker commits the journal at each durability point; on a dedicated
/// thread that blocking never stalls the runtime serving interfaces (or another session's
/// worker), and the gateway needs no runtime of its caller. Open the backend inside it
/// (`Runtime::enter`), so whatever it creates belongs to the thread that drives it.
pub(crate) fn runtime() -> Result<Runtime, GatewayError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| {
            GatewayError::Backend(BackendFailure::Start {
                what: "runtime",
                source,
            })
        })
}

/// Reconciles the session's backend with the journal, and starts its worker on `runtime`,
/// driven by a thread of its own.
pub(crate) fn start(
    live: &Arc<Live>,
    core: &mut Core,
    mut backend: Box<dyn AgentBackend>,
    runtime: Runtime,
    project: crate::ProjectContext,
    review: Arc<ReviewRoute>,
) -> Result<(), GatewayError> {
    let continue_run = match reconcile(core, backend.as_mut()) {
        Ok(continue_run) => continue_run,
        Err(error) => {
            // The caller may be on an async task, where dropping a runtime would panic.
            runtime.shutdown_background();
            return Err(error);
        }
    };
    // Attached only now: reconciliation runs under the session's lock, which the sink takes.
    backend.attach(Arc::new(SessionSink {
        live: Arc::downgrade(live),
        project,
    }));

    let (work, queue) = mpsc::unbounded_channel();
    let controls = backend.controls();
    let inner = runtime.spawn(serve(backend, queue, Arc::downgrade(live), review));
    let supervised = Arc::downgrade(live);
    let abort = inner.abort_handle();
    let supervisor = async move {
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
                let Some(live) = supervised.upgrade() else {
                    return;
                };
                let mut core = live.lock();
                core.take_worker();
                let reason = format!(
                    "the agent worker stopped unexpectedly ({cause}); the record is intact, and \
                     the next command starts a new worker from it"
                );
                let _ = core.record(vec![Event::RunInterrupted { reason }]);
                core.settled();
            }
            Ok(()) => {}
        }
    };
    let (done, stopped) = oneshot::channel();
    std::thread::Builder::new()
        .name(format!("heartwood-agent-{}", core.projection().session))
        .spawn(move || {
            runtime.block_on(supervisor);
            // Whatever the worker left running (a tool's process watcher) stops with its
            // runtime, before anyone is told the worker has stopped.
            drop(runtime);
            let _ = done.send(());
        })
        .map_err(|source| {
            GatewayError::Backend(BackendFailure::Start {
                what: "thread",
                source,
            })
        })?;
    let link = WorkerLink::new(work, controls, abort, stopped);
    if continue_run {
        link.send(Work::Run);
    }
    core.set_worker(link);
    Ok(())
}

/// How a backend reaches its session: record, durability point, token. It holds the session
/// weakly, so a session dropped without closing is not kept alive by its own worker.
struct SessionSink {
    live: Weak<Live>,
    /// Where a reproduction's rerun is observed (its files' digests at completion).
    project: crate::ProjectContext,
}

impl BackendSink for SessionSink {
    fn entry(&self, entry: BackendEntry) {
        let Some(live) = self.live.upgrade() else {
            return;
        };
        let mut core = live.lock();
        // A writer that failed refuses every later write and says why; the run stops at its
        // next step because the worker pauses it.
        if core.stage(entry.events, Some(entry.origin)).is_err() {
            core.pause_worker();
            return;
        }
        // A workflow stage that used up a limit of its budget gets no further model call.
        if let Some(event) = crate::workflow_run::newly_exhausted(core.projection())
            && core.stage(vec![event], None).is_ok()
            && let Some(worker) = core.worker()
        {
            worker.pause_before_model();
        }
        // A settled review is assessed now, by the gateway, with no model call.
        if let Some((review, proposals)) = crate::review_evidence::due(core.projection())
            && let Some(workflow) = core.projection().workflow.clone()
        {
            drop(core);
            let assessed =
                crate::review_evidence::assess(&self.project, &workflow, &review, proposals);
            let mut core = live.lock();
            if crate::review_evidence::due(core.projection())
                .is_some_and(|(r, _)| r.started.review_id == review.started.review_id)
            {
                let _ = core.stage(
                    vec![Event::WorkflowReviewAssessed(Box::new(assessed))],
                    None,
                );
            }
            return;
        }
        // A prepared rerun just ended: what it wrote is captured now, live, or never.
        let Some(prepared) = crate::reproduction::completion_due(core.projection()) else {
            return;
        };
        let exit_code = core
            .projection()
            .actions
            .iter()
            .find(|a| a.proposal.action_id == prepared.action_id)
            .and_then(|a| a.exit_code);
        drop(core);
        // The files are read without holding the session's lock.
        let completed = crate::reproduction::complete(&self.project, &prepared, exit_code);
        let mut core = live.lock();
        if crate::reproduction::completion_due(core.projection()).as_ref() == Some(&prepared) {
            let _ = core.stage(
                vec![Event::WorkflowReproductionCompleted(Box::new(completed))],
                None,
            );
        }
    }

    /// One group commit per durability point: the journal is never ahead of the backend's own
    /// log, and a step costs one journal append instead of one per event.
    fn durable(
        &self,
        log: Option<heartwood_audit::BackendBytes>,
    ) -> Result<(), crate::backend::NotDurable> {
        let Some(live) = self.live.upgrade() else {
            return Err(crate::backend::NotDurable::NotServed);
        };
        let mut core = live.lock();
        core.flush_with(log).map_err(|e| {
            core.pause_worker();
            crate::backend::NotDurable::Journal(Box::new(e))
        })
    }

    fn token(&self, text: &str) {
        if let Some(live) = self.live.upgrade() {
            live.lock().token(text);
        }
    }

    fn output(&self, action_id: u64, text: &str) {
        if let Some(live) = self.live.upgrade() {
            live.lock().output(action_id, text);
        }
    }
}

/// The worker loop: one piece of work at a time, each followed by settling. Ends when the
/// session is gone.
async fn serve(
    mut backend: Box<dyn AgentBackend>,
    mut queue: mpsc::UnboundedReceiver<Work>,
    live: Weak<Live>,
    review: Arc<ReviewRoute>,
) {
    while let Some(work) = queue.recv().await {
        let prepared = match work {
            Work::Shutdown => break,
            Work::Run => Ok(()),
            Work::Task { text, policy } => {
                backend.set_policy(policy);
                backend.send_message(&text)
            }
            Work::Decide {
                decision: Decision::AllowOnce,
                ..
            } => match dispatch::admit(&live, &review).await {
                Some(at_most) => backend.approve_pending_in_parallel(at_most as usize),
                None => backend.approve_pending(),
            },
            Work::Decide {
                decision: Decision::RejectAll,
                reason,
            } => backend.reject_pending(reason.as_deref().unwrap_or_default()),
        };
        let outcome = match prepared {
            Ok(()) => backend.run().await.map(|_| ()),
            Err(error) => Err(error),
        };
        let Some(session) = live.upgrade() else {
            break;
        };
        {
            let mut core = session.lock();
            if let Err(error) = outcome {
                let reason = format!("the agent stopped: {error}");
                let _ = core.record(vec![Event::RunInterrupted { reason }]);
            }
            let _ = publish_pending(&mut core, backend.as_ref());
            core.settled();
        }
        drop(session);
        // A review's batch, now shown, is offered to run at once where it may.
        let runs_batches = backend.pending_is_advisory_batch();
        dispatch::offer(&live, &review, runs_batches).await;
    }
    backend.close().await;
}

/// Brings the journal and the backend into agreement; returns whether a run should continue.
fn reconcile(core: &mut Core, backend: &mut dyn AgentBackend) -> Result<bool, GatewayError> {
    let mut continue_run = false;
    backend.set_policy(core.projection().policy);
    // Everything the backend's log held when it was opened, translated once, in order.
    let restored = backend.take_entries();
    check_backend_log(core, backend, &restored)?;

    // Researcher input the backend never received: always a suffix, because the journal
    // records it before the backend is given it.
    let delivered = backend.received_inputs().len();
    for text in researcher_inputs(core).iter().skip(delivered) {
        backend.send_message(text).map_err(backend_error)?;
        continue_run = true;
    }

    // A decision the journal holds for the set the backend still waits on.
    if let (Some(first), None, Some(decision)) = (
        backend
            .pending()
            .and_then(|w| w.action_ids.first().copied()),
        &core.projection().pending,
        &core.projection().last_decision,
    ) && decision.set_id == set_id_for(first)
    {
        match decision.decision {
            Decision::AllowOnce => backend.approve_pending(),
            Decision::RejectAll => {
                backend.reject_pending(decision.reason.as_deref().unwrap_or_default())
            }
        }
        .map_err(backend_error)?;
        continue_run = true;
    }

    // The backend's entries the journal lacks: by identity (every entry after the last one the
    // journal names as an origin) once the journal names origins, by counting for a session
    // written before it did.
    let covered = covered_by_journal(core);
    let recorded = core
        .events()
        .iter()
        .filter(|e| is_backend_derived(&e.event))
        .count();
    let mut counted = 0usize;
    for entry in restored.into_iter().chain(backend.take_entries()) {
        let missing = match covered {
            Some(last) if entry.origin.event <= last => continue,
            Some(_) => entry.events,
            None => {
                let skip = recorded.saturating_sub(counted).min(entry.events.len());
                counted += entry.events.len();
                entry.events.into_iter().skip(skip).collect()
            }
        };
        core.stage(missing, Some(entry.origin))?;
    }
    core.flush()?;
    publish_pending(core, backend)?;
    core.writer()?.mark_reconciled();

    // The journal says a run is on but the backend is not: the process running it stopped. A
    // run the researcher asked for and the backend never started (a task, guidance or decision
    // journaled just before the stop) continues; a run cut off midway is recorded as
    // interrupted rather than resumed behind the researcher's back (opening a session to look
    // at it must not spend model calls), and the next instruction continues it.
    if core.projection().lifecycle == Lifecycle::Running && !backend.is_running() && !continue_run {
        let reason = "the Heartwood process running this task stopped before the task finished \
                      (a crash or a kill); nothing that had started runs again. Give the next \
                      instruction to continue"
            .to_owned();
        core.record(vec![Event::RunInterrupted { reason }])?;
    }
    Ok(continue_run)
}

/// The researcher's messages the journal recorded, in order.
fn researcher_inputs(core: &Core) -> Vec<String> {
    core.events()
        .iter()
        .filter_map(|e| match &e.event {
            Event::TaskSubmitted { text, .. } | Event::GuidanceSent { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The backend's log must agree with what the journal has sealed: every origin the journal
/// names is in the log byte for byte (or, for a journal written before origins, the journal's
/// backend-derived events are the translation of the log's first entries), and the
/// researcher's messages in the log are the ones the journal recorded, in order. Beyond that,
/// the log may hold entries the journal lacks only when the process that served the session
/// before ended without closing it (a crash window); otherwise they were written by something
/// other than Heartwood.
fn check_backend_log(
    core: &Core,
    backend: &dyn AgentBackend,
    restored: &[BackendEntry],
) -> Result<(), GatewayError> {
    let mismatch = |detail: String| {
        GatewayError::Backend(BackendFailure::LogMismatch {
            log: backend.log_location(),
            detail,
        })
    };
    let inputs = researcher_inputs(core);
    for (n, text) in backend.received_inputs().iter().enumerate() {
        if inputs.get(n) != Some(text) {
            return Err(mismatch(format!(
                "researcher message {} in the agent's log is not the one the session recorded",
                n + 1
            )));
        }
    }

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
    // Entries the backend wrote while opening (resolving what a crash left) are new, not
    // unrecorded.
    let upto = backend.restored_upto();
    let unrecorded: usize = if let Some(covered) = covered_by_journal(core) {
        // By identity: what the backend's entries translate to may change between versions;
        // which entry each journaled event came from does not.
        for origin in core.events().iter().filter_map(|e| e.origin.as_ref()) {
            match backend.entry_digest(origin.event) {
                None => return Err(shorter()),
                Some(sha256) if sha256 != origin.sha256 => return Err(differs(origin.event)),
                Some(_) => {}
            }
        }
        restored
            .iter()
            .filter(|entry| entry.origin.event > covered && entry.origin.event <= upto)
            .map(|entry| entry.events.len())
            .sum()
    } else {
        // A journal written before origins: its backend-derived events are the translation of
        // the log's first entries, in order.
        let recorded: Vec<&Event> = core
            .events()
            .iter()
            .map(|e| &e.event)
            .filter(|e| is_backend_derived(e))
            .collect();
        let mut matched = 0;
        let mut unrecorded = 0;
        for entry in restored.iter().filter(|e| e.origin.event <= upto) {
            for translated in &entry.events {
                match recorded.get(matched) {
                    Some(&journaled) if journaled == translated => matched += 1,
                    Some(_) => return Err(differs(entry.origin.event)),
                    None => unrecorded += 1,
                }
            }
        }
        if matched < recorded.len() {
            return Err(shorter());
        }
        unrecorded
    };
    let crashed = core
        .writer_ref()
        .is_some_and(|w| w.previous_writer_crashed());
    if unrecorded > 0 && !crashed {
        return Err(mismatch(format!(
            "it holds {unrecorded} event(s) the session never recorded, although the session \
             was closed normally"
        )));
    }
    Ok(())
}

/// The last backend entry the journal names as an origin, or `None` for a journal that names
/// none (written before origins existed, or holding no backend entry yet).
fn covered_by_journal(core: &Core) -> Option<u64> {
    core.events()
        .iter()
        .filter_map(|e| e.origin.as_ref().map(|o: &Origin| o.event))
        .max()
}

/// Publishes the set the backend waits on, unless the journal already shows it.
fn publish_pending(core: &mut Core, backend: &dyn AgentBackend) -> Result<(), GatewayError> {
    let Some(waiting) = backend.pending() else {
        return Ok(());
    };
    let Some(first) = waiting.action_ids.first().copied() else {
        return Ok(());
    };
    let set_id = set_id_for(first);
    let projection = core.projection();
    let shown = projection.pending.as_ref().map(|p| &p.set_id) == Some(&set_id);
    let decided = projection.last_decision.as_ref().map(|d| &d.set_id) == Some(&set_id);
    if shown || decided {
        return Ok(());
    }
    let revision = core.next_seq();
    core.record(vec![Event::ActionSetPending {
        set: ActionSet {
            set_id,
            revision,
            members: waiting.members,
        },
    }])
}

fn backend_error(error: BackendError) -> GatewayError {
    GatewayError::Backend(BackendFailure::Engine(error))
}
