//! The engine's own events: everything a conversation did, in order. The log of these events is
//! the conversation; its state and the model's view are derived from it.

use serde::{Deserialize, Serialize};

use crate::model::Usage;
use crate::tools::{Observation, Risk};

/// Where a conversation stands: the vocabulary's type, shared with the OpenHands client.
pub use heartwood_events::ExecutionStatus;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// The researcher (or the caller speaking for them).
    User,
    /// The agent.
    Agent,
}

/// Who allowed an action set to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovedBy {
    /// The confirmation policy did not require a person.
    Policy,
    /// A person allowed it once.
    User,
}

/// One entry of a conversation's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    /// Position in the log, from 1.
    pub id: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A message in the conversation.
    Message {
        /// Who said it.
        speaker: Speaker,
        /// What was said.
        text: String,
    },
    /// A tool call the model proposed. Calls from one reply share `response_id`.
    Action {
        /// The model reply this call came from.
        response_id: String,
        /// The call id the observation answers.
        tool_call_id: String,
        /// The tool.
        tool: String,
        /// The arguments as the model sent them.
        arguments: String,
        /// Text the model sent with the calls, on the first action of a reply.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
        /// The deterministic risk rating.
        risk: Risk,
        /// How its process is confined when it runs (`None`: it starts no process).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<crate::tools::SandboxLevel>,
    },
    /// Actions were allowed to run.
    Approved {
        /// The actions.
        action_ids: Vec<u64>,
        /// Who allowed them.
        by: ApprovedBy,
    },
    /// An action began executing (written before the tool runs, so a restart never runs it
    /// again).
    Started {
        /// The action.
        action_id: u64,
    },
    /// A tool's result.
    Observation {
        /// The action it resolves.
        action_id: u64,
        /// The result.
        observation: Observation,
    },
    /// The person rejected the action.
    Rejection {
        /// The action it resolves.
        action_id: u64,
        /// Why, if they said.
        reason: String,
    },
    /// The action could not run (bad arguments, unknown tool, interrupted by a restart).
    AgentError {
        /// The action it resolves.
        action_id: u64,
        /// What went wrong, as the model will read it.
        message: String,
    },
    /// The status changed.
    Status {
        /// The new status.
        status: ExecutionStatus,
    },
    /// A run failed.
    Error {
        /// What went wrong and what to do next.
        message: String,
    },
    /// Older history was summarized; the model's view replaces the forgotten events with the
    /// summary at `summary_offset`.
    Condensation {
        /// Events the model no longer sees.
        forgotten_event_ids: Vec<u64>,
        /// The summary.
        summary: String,
        /// Where the summary sits among the events the model still sees.
        summary_offset: usize,
    },
    /// Tokens used by one model call.
    Usage {
        /// What the call was for: `agent`, `condenser`, `task:<id>`.
        usage_id: String,
        /// The call's usage.
        usage: Usage,
    },
}

impl EventKind {
    /// The action this event resolves, for observations, rejections and agent errors.
    pub fn resolves(&self) -> Option<u64> {
        match self {
            EventKind::Observation { action_id, .. }
            | EventKind::Rejection { action_id, .. }
            | EventKind::AgentError { action_id, .. } => Some(*action_id),
            _ => None,
        }
    }
}
