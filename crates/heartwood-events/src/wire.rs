//! The updates and snapshots every interface receives from the gateway: the wire protocol
//! next to the projection it carries, with JSON Schema like the rest of the vocabulary.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Lifecycle, RecordedEvent, SessionProjection};

/// One update to a session, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Update {
    /// The revision after this update: the last event applied (recorded or staged).
    pub revision: u64,
    /// Token-only updates since the last event; orders streamed text between events.
    pub transient_revision: u64,
    /// The last event the journal held durably when this update was sent (0: not said): an
    /// interface that prints only what a crash cannot take back prints events up to here.
    #[serde(default)]
    pub durable: u64,
    /// What changed.
    #[serde(flatten)]
    pub change: Change,
}

impl Update {
    /// "Take a snapshot": what a receiver is told when it may have missed updates (it fell
    /// behind, or the session's source changed). `revision` is the last durable revision the
    /// sender knows the receiver has, 0 when it cannot say.
    pub fn lagged(revision: u64) -> Update {
        Update {
            revision,
            transient_revision: 0,
            durable: 0,
            change: Change::Lagged {},
        }
    }

    /// A recorded event as an update, at its own revision: what a receiver is sent of events
    /// recorded before it followed (a backlog). `durable` is not said (0).
    pub fn event(event: Arc<RecordedEvent>) -> Update {
        Update {
            revision: event.seq.get(),
            transient_revision: 0,
            durable: 0,
            change: Change::Event { event },
        }
    }
}

/// What an [`Update`] carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "update", rename_all = "snake_case")]
pub enum Change {
    /// A durable event.
    Event {
        /// The event as recorded.
        event: Arc<RecordedEvent>,
    },
    /// Streamed model text; never journaled.
    Token {
        /// The text.
        text: String,
    },
    /// Output a running command printed (complete lines); never journaled: the action's
    /// record keeps its output when it ends.
    Output {
        /// The running action.
        action_id: u64,
        /// The lines.
        text: String,
    },
    /// The agent stopped and the gateway reconciled (published any pending set). Transient:
    /// it authorizes nothing.
    ExecutionSettled {
        /// Where the agent stands.
        lifecycle: Lifecycle,
    },
    /// The run stopped for the researcher's decision on this set; sent just before the
    /// `execution_settled` that follows it, so a client waiting on the stream knows what to
    /// answer without another request.
    Suspended(Suspended),
    /// The receiver fell behind and missed updates: take a snapshot to catch up.
    Lagged {},
}

/// A run that stopped for a decision: the set waiting, whole. The answer (HTTP 202) of a
/// command that waited for its run to settle, and an update of the event stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Suspended {
    /// The session.
    pub session: crate::SessionId,
    /// The set waiting for the decision.
    pub set_id: crate::ActionSetId,
    /// The set's revision, which the decision must name.
    pub revision: u64,
    /// Every action in the set, in the order proposed.
    pub members: Vec<crate::ActionProposal>,
    /// The receipts of the commands that led here, on a command's answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub receipts: Vec<crate::Receipt>,
}

impl Suspended {
    /// The suspension `projection` shows, if its run waits for a decision.
    pub fn of(projection: &SessionProjection) -> Option<Suspended> {
        let set = projection.pending.as_ref()?;
        (projection.lifecycle == Lifecycle::WaitingForDecision).then(|| Suspended {
            session: projection.session.clone(),
            set_id: set.set_id.clone(),
            revision: set.revision,
            members: set.members.clone(),
            receipts: Vec::new(),
        })
    }
}

/// Events since a revision and the projection, taken together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Snapshot {
    /// Events after the requested sequence number.
    pub events: Vec<Arc<RecordedEvent>>,
    /// The projection at `revision`.
    pub projection: SessionProjection,
    /// The revision of the projection (events applied, some maybe not yet durable).
    pub revision: u64,
    /// The last event the journal holds durably: an interface that prints events prints only
    /// those up to here, so nothing it printed can be lost to a crash.
    #[serde(default)]
    pub durable: u64,
    /// Token-only updates since the durable revision.
    pub transient_revision: u64,
    /// Model text streamed since the last durable event (its tail, when long).
    pub streaming: String,
    /// What the running action has printed so far (its tail, when long), while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<ToolOutput>,
    /// The review of the pending set, when one waits: computed by the gateway from the
    /// project's files when the set was shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<crate::Review>,
}

impl Snapshot {
    /// Whether the run has stopped *and* everything it did is in the journal: a projection
    /// can read settled while its last events are still staged, and whoever acts on "it
    /// stopped" (verifies, copies, reads the file from another interface) must find them there.
    pub fn is_settled(&self) -> bool {
        self.projection.is_settled() && self.durable >= self.revision
    }
}

/// What a running action has printed so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolOutput {
    /// The running action.
    pub action_id: u64,
    /// Its output so far (the tail, when long).
    pub text: String,
}

/// A session id minted for an interface's first task (the gateway chooses ids; callers
/// cannot).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NewSession {
    /// The new session's id. Nothing exists on disk until its first command.
    pub session: crate::SessionId,
}
