//! The gateway's handle on a session's worker: the work it is asked to do, the controls that
//! reach a running agent, and stopping it. Kept apart from the worker itself so the session's
//! core can hold a worker without depending on how one runs.

use std::sync::Arc;
use std::time::Duration;

use heartwood_events::{ActionPolicy, Decision};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::backend::BackendControls;

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
    controls: Arc<dyn BackendControls>,
    /// Cancels the worker's task at its next await point (a model call, a tool's output).
    abort: AbortHandle,
    stopped: Option<oneshot::Receiver<()>>,
}

impl WorkerLink {
    /// The link to a worker fed by `work`, acted on through `controls`, cancelled by `abort`,
    /// and that completes `stopped` when it has stopped.
    pub(crate) fn new(
        work: mpsc::UnboundedSender<Work>,
        controls: Arc<dyn BackendControls>,
        abort: AbortHandle,
        stopped: oneshot::Receiver<()>,
    ) -> Self {
        WorkerLink {
            work,
            controls,
            abort,
            stopped: Some(stopped),
        }
    }

    /// Queues work; false when the worker has stopped.
    pub(crate) fn send(&self, work: Work) -> bool {
        self.work.send(work).is_ok()
    }

    /// Asks the running agent to pause at its next step.
    pub(crate) fn pause(&self) {
        self.controls.pause();
    }

    /// Asks the running agent to pause before its next model call.
    pub(crate) fn pause_before_model(&self) {
        self.controls.pause_before_model();
    }

    /// Stops the running tool now and pauses (see [`BackendControls::interrupt`]).
    pub(crate) fn interrupt(&self) {
        self.controls.interrupt();
    }

    /// Withdraws a pause no run acted on (a new task starts unpaused). Called when the task is
    /// accepted, not when the worker picks it up, so a pause sent right after is kept.
    pub(crate) fn withdraw_pause(&self) {
        self.controls.withdraw_pause();
    }

    /// Gives the agent guidance at its next step.
    pub(crate) fn guide(&self, text: &str) {
        self.controls.guide(text);
    }

    /// Cancels the worker at its next await point without waiting for it (for a gateway
    /// dropped without `close`); the returned handle completes once it has stopped. Its run is
    /// left as a crash would leave it, and the next process records it as interrupted.
    pub(crate) fn abort(mut self) -> Option<oneshot::Receiver<()>> {
        self.abort.abort();
        self.stopped.take()
    }

    /// Asks the worker to stop after the work in hand; the returned handle completes when it
    /// has. A run in progress is asked to pause at its next step first, so stopping never
    /// waits for a whole task.
    pub(crate) fn shut_down(mut self) -> Stopping {
        self.controls.pause();
        let _ = self.work.send(Work::Shutdown);
        Stopping {
            abort: self.abort.clone(),
            stopped: self.stopped.take(),
        }
    }
}

/// A worker asked to stop, until it has.
pub(crate) struct Stopping {
    abort: AbortHandle,
    stopped: Option<oneshot::Receiver<()>>,
}

impl Stopping {
    /// Waits up to `grace` for the worker to stop by itself; past that it is cancelled at its
    /// next await point. Returns whether it had to be cancelled, in which case the caller
    /// records why: a cancelled worker records nothing.
    pub(crate) async fn finish(self, grace: Duration) -> bool {
        let Some(mut stopped) = self.stopped else {
            return false;
        };
        if tokio::time::timeout(grace, &mut stopped).await.is_ok() {
            return false;
        }
        self.abort.abort();
        let _ = stopped.await;
        true
    }

    /// Cancels the worker now and waits until it has stopped.
    pub(crate) async fn cancel(self) {
        self.abort.abort();
        if let Some(stopped) = self.stopped {
            let _ = stopped.await;
        }
    }
}
