//! Where an agent conversation stands, in OpenHands' execution-status values: the one type the
//! native engine records in its log and the OpenHands client reads from the agent server.

use serde::{Deserialize, Serialize};

/// Where a conversation stands (OpenHands' execution status values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Nothing running; ready for a message or a run.
    Idle,
    /// A run is in progress.
    Running,
    /// Paused between steps at the caller's request.
    Paused,
    /// Stopped before acting: the pending action set needs a decision.
    WaitingForConfirmation,
    /// The agent finished the task.
    Finished,
    /// A run failed; the error event says why.
    Error,
    /// The agent repeated itself without progress and was stopped.
    Stuck,
    /// The OpenHands server is deleting the conversation (the native engine never is).
    Deleting,
}

impl ExecutionStatus {
    /// Whether a run has stopped somewhere only the researcher (or nobody) moves it from:
    /// waiting, paused, finished, failed. `idle` is not: a message with `run` and a `run`
    /// request both pass through it before the loop starts.
    pub fn is_stopped(self) -> bool {
        !matches!(
            self,
            ExecutionStatus::Running | ExecutionStatus::Idle | ExecutionStatus::Deleting
        )
    }
}
