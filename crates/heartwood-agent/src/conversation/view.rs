//! The model's view of a conversation, derived from its log: the system prompt, then messages,
//! actions and their results in order, with condensed history replaced by its summary.

use std::collections::{HashMap, HashSet};

use super::{AgentEvent, ConversationState, EventKind, ExecutionStatus, Speaker};
use crate::model::{ChatMessage, ToolCall};

/// One model reply's tool calls, waiting to be written with their results.
#[derive(Default)]
struct Reply {
    response_id: Option<String>,
    thought: Option<String>,
    calls: Vec<(ToolCall, u64)>,
}

impl Reply {
    /// Writes the assistant message and one tool message per call.
    fn flush(&mut self, messages: &mut Vec<ChatMessage>, results: &HashMap<u64, String>) {
        if self.calls.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.calls);
        messages.push(ChatMessage::Assistant {
            content: self.thought.take(),
            tool_calls: calls.iter().map(|(call, _)| call.clone()).collect(),
        });
        for (call, action) in calls {
            let content = results
                .get(&action)
                .cloned()
                .unwrap_or_else(|| "This action has no result.".to_owned());
            messages.push(ChatMessage::Tool {
                tool_call_id: call.id,
                content,
            });
        }
        self.response_id = None;
    }
}

/// The messages to send for the next model call.
pub fn model_view(
    system_prompt: &str,
    events: &[AgentEvent],
    state: &ConversationState,
) -> Vec<ChatMessage> {
    let failed = failed_turns(events);
    let visible: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| !state.forgotten.contains(&e.id) && !failed.contains(&e.id))
        .collect();
    let mut messages = vec![ChatMessage::System {
        content: system_prompt.to_owned(),
    }];
    render(&mut messages, &visible, state.summary.as_ref());
    messages
}

/// The events of failed turns that a later turn followed: a turn opens with the researcher's
/// message while no run is going, and takes every event up to the next such message. One
/// whose last run ended in an error contributes nothing to the history a later run sees (the
/// heddle document: "A question the model already ignored once is not worth showing it
/// again"); the log keeps it, with its error. Running it again without a new message
/// continues the same turn, which then is not failed unless that run fails too.
fn failed_turns(events: &[AgentEvent]) -> HashSet<u64> {
    let mut failed = HashSet::new();
    let mut turn: Vec<u64> = Vec::new();
    let mut running = false;
    let mut ended_in_error = false;
    for event in events {
        match &event.kind {
            EventKind::Message {
                speaker: Speaker::User,
                ..
            } if !running => {
                if ended_in_error {
                    failed.extend(turn.drain(..));
                }
                turn.clear();
                ended_in_error = false;
            }
            EventKind::Status { status } => {
                running = *status == ExecutionStatus::Running;
                if running || *status == ExecutionStatus::Error {
                    ended_in_error = *status == ExecutionStatus::Error;
                }
            }
            _ => {}
        }
        turn.push(event.id);
    }
    failed
}

/// Appends the messages of `new_events` to a view derived (without condensation) from the
/// events before them, so the view grows with each step instead of being derived again.
/// Returns `false`, appending nothing, unless the new events are self-contained: every action
/// among them has its result among them, and every result among them answers one of them.
/// A message from the researcher among them is never appended (it may close a failed turn,
/// which the view must then leave out: the whole view is derived again).
pub fn extend_view(messages: &mut Vec<ChatMessage>, new_events: &[AgentEvent]) -> bool {
    if new_events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Message {
                speaker: Speaker::User,
                ..
            }
        )
    }) {
        return false;
    }
    let actions: HashSet<u64> = new_events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Action { .. }))
        .map(|e| e.id)
        .collect();
    let resolved: HashSet<u64> = new_events
        .iter()
        .filter_map(|e| e.kind.resolves())
        .collect();
    if actions != resolved {
        return false;
    }
    let events: Vec<&AgentEvent> = new_events.iter().collect();
    render(messages, &events, None);
    true
}

/// Appends the messages for `visible`, with the summary (if any) at its offset.
fn render(
    messages: &mut Vec<ChatMessage>,
    visible: &[&AgentEvent],
    summary: Option<&(String, usize)>,
) {
    let results = results_by_action(visible);
    let summary_message = |(text, _): &(String, usize)| ChatMessage::User {
        content: format!("Summary of the earlier conversation:\n{text}"),
    };
    let mut reply = Reply::default();
    for (index, event) in visible.iter().enumerate() {
        if let Some(s) = summary.filter(|(_, at)| *at == index) {
            reply.flush(messages, &results);
            messages.push(summary_message(s));
        }
        match &event.kind {
            EventKind::Message { speaker, text } => {
                reply.flush(messages, &results);
                messages.push(match speaker {
                    Speaker::User => ChatMessage::User {
                        content: text.clone(),
                    },
                    Speaker::Agent => ChatMessage::Assistant {
                        content: Some(text.clone()),
                        tool_calls: Vec::new(),
                    },
                });
            }
            EventKind::Action {
                response_id,
                tool_call_id,
                tool,
                arguments,
                thought,
                ..
            } => {
                if reply.response_id.as_ref().is_some_and(|r| r != response_id) {
                    reply.flush(messages, &results);
                }
                reply.response_id = Some(response_id.clone());
                if thought.is_some() {
                    reply.thought = thought.clone();
                }
                reply
                    .calls
                    .push((ToolCall::new(tool_call_id, tool, arguments), event.id));
            }
            _ => {}
        }
    }
    reply.flush(messages, &results);
    if let Some(s) = summary.filter(|(_, at)| *at >= visible.len()) {
        messages.push(summary_message(s));
    }
}

fn results_by_action(events: &[&AgentEvent]) -> HashMap<u64, String> {
    let mut results = HashMap::new();
    for event in events {
        let text = match &event.kind {
            EventKind::Observation { observation, .. } => observation.content.clone(),
            EventKind::Rejection { reason, .. } if reason.is_empty() => {
                "The researcher rejected this action; it did not run.".to_owned()
            }
            EventKind::Rejection { reason, .. } => {
                format!(
                    "The researcher rejected this action; it did not run. Their reason: {reason}"
                )
            }
            EventKind::AgentError { message, .. } => format!("Error: {message}"),
            _ => continue,
        };
        if let Some(action) = event.kind.resolves() {
            results.insert(action, text);
        }
    }
    results
}
