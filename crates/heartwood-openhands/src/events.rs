//! The agent server's events, read by their `kind` and typed fields (never their prose). Kinds
//! Heartwood does not act on are kept as [`Event::Other`] with their kind, so nothing is
//! silently dropped from what the gateway can see.

use serde::Deserialize;
use serde_json::Value;

/// One event of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The agent proposed an action (a tool call).
    Action(Action),
    /// A tool's result.
    Observation {
        /// The event id.
        id: String,
        /// The call it answers.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The result, as the server reports it.
        observation: Value,
    },
    /// The researcher rejected an action.
    Rejected {
        /// The event id.
        id: String,
        /// The call rejected.
        tool_call_id: String,
        /// The reason given.
        reason: String,
    },
    /// A message (the researcher's or the agent's).
    Message {
        /// The event id.
        id: String,
        /// `user` or `agent`.
        source: String,
        /// The text.
        text: String,
    },
    /// A change of the conversation's state (`execution_status`, `stats`, ...).
    State {
        /// The event id.
        id: String,
        /// What changed.
        key: String,
        /// Its new value.
        value: Value,
    },
    /// An action could not run (bad arguments, an unknown tool): the scaffold's error, told to
    /// the model.
    AgentError {
        /// The event id.
        id: String,
        /// The call it answers.
        tool_call_id: String,
        /// The error's privacy-safe class (`kind`), never its text.
        class: Option<String>,
    },
    /// The conversation stopped on an error (a model call that failed, a budget exhausted).
    ConversationError {
        /// The event id.
        id: String,
        /// The error's code (its type).
        code: String,
        /// Its privacy-safe class, where the server gave one.
        class: Option<String>,
    },
    /// Any other kind.
    Other {
        /// The event id.
        id: String,
        /// Its kind.
        kind: String,
    },
}

/// An action the agent proposed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Action {
    /// The event id.
    pub id: String,
    /// The model response it came from: actions of one response form one set.
    pub llm_response_id: String,
    /// The tool.
    pub tool_name: String,
    /// The tool call's id.
    pub tool_call_id: String,
    /// The tool's arguments, as the server parsed them.
    #[serde(default)]
    pub action: Value,
    /// The model's one-line summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// The model's prediction of the action's risk.
    #[serde(default)]
    pub security_risk: Option<String>,
    /// The text the model sent with the call.
    #[serde(default)]
    pub thought: Vec<Value>,
    /// The call as the model sent it.
    #[serde(default)]
    pub tool_call: Option<ToolCall>,
}

/// A tool call as the model sent it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolCall {
    /// The arguments, as the model wrote them (JSON text).
    #[serde(default)]
    pub arguments: String,
}

impl Action {
    /// The model's text sent with the call, if any.
    pub fn thought_text(&self) -> Option<String> {
        let text: String = self
            .thought
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect();
        (!text.trim().is_empty()).then_some(text)
    }

    /// The arguments as the model wrote them, or as the server parsed them when the call is
    /// not kept.
    pub fn arguments(&self) -> String {
        match &self.tool_call {
            Some(call) if !call.arguments.is_empty() => call.arguments.clone(),
            _ => self.action.to_string(),
        }
    }
}

impl Event {
    /// Reads one event as the server sent it.
    pub fn from_value(value: Value) -> Event {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let id = text(&value["id"]);
        match value["kind"].as_str().unwrap_or_default() {
            "ActionEvent" => match serde_json::from_value::<Action>(value.clone()) {
                Ok(action) => Event::Action(action),
                Err(_) => Event::Other {
                    id,
                    kind: "ActionEvent".to_owned(),
                },
            },
            "ObservationEvent" => Event::Observation {
                id,
                tool_call_id: text(&value["tool_call_id"]),
                tool_name: text(&value["tool_name"]),
                observation: value["observation"].clone(),
            },
            "UserRejectObservation" => Event::Rejected {
                id,
                tool_call_id: text(&value["tool_call_id"]),
                reason: text(&value["rejection_reason"]),
            },
            "MessageEvent" => Event::Message {
                id,
                source: text(&value["source"]),
                text: value["llm_message"]["content"]
                    .as_array()
                    .map(|parts| {
                        parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("")
                    })
                    .unwrap_or_default(),
            },
            "ConversationStateUpdateEvent" => Event::State {
                id,
                key: text(&value["key"]),
                value: value["value"].clone(),
            },
            "AgentErrorEvent" => Event::AgentError {
                id,
                tool_call_id: text(&value["tool_call_id"]),
                class: value["classification"]["kind"].as_str().map(str::to_owned),
            },
            "ConversationErrorEvent" => Event::ConversationError {
                id,
                code: text(&value["code"]),
                class: value["classification"]["kind"].as_str().map(str::to_owned),
            },
            other => Event::Other {
                id,
                kind: other.to_owned(),
            },
        }
    }
}
