//! The rolling condenser: when the model's view grows past its budget, older events (after the
//! first few) are summarized by the same model route, under the usage id `condenser`, and a
//! condensation event records what was forgotten and the summary that replaces it.

use super::{AgentEvent, ConversationState, EventKind, Speaker};
use crate::model::ChatMessage;

/// When and how much to condense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CondenserConfig {
    /// Condense when more events than this are visible to the model.
    pub max_events: usize,
    /// The first events always stay visible (the task statement).
    pub keep_first: usize,
}

/// The events to forget now, or `None` when the view is within budget. Never separates a
/// reply's tool calls from their results.
pub fn plan(
    config: &CondenserConfig,
    events: &[AgentEvent],
    state: &ConversationState,
    over_token_budget: bool,
) -> Option<Vec<u64>> {
    let visible: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| !state.forgotten.contains(&e.id))
        .collect();
    if visible.len() <= config.max_events && !over_token_budget {
        return None;
    }
    let keep_last = (config.max_events / 2).max(1);
    let start = config.keep_first.min(visible.len());
    // Few events can be over the token budget (one huge reply): then only the first and last
    // are kept, and there may be nothing between them to forget.
    let mut end = visible.len().saturating_sub(keep_last).max(start);
    // Do not cut inside a reply: move the end forward past results of forgotten actions and past
    // the rest of a reply whose first calls are forgotten.
    while end < visible.len() && end > start {
        let split_reply = match (&visible[end - 1].kind, &visible[end].kind) {
            (
                EventKind::Action { response_id: a, .. },
                EventKind::Action { response_id: b, .. },
            ) => a == b,
            (_, kind) => {
                kind.resolves().is_some()
                    || matches!(kind, EventKind::Approved { .. } | EventKind::Started { .. })
            }
        };
        if !split_reply {
            break;
        }
        end += 1;
    }
    // Pending actions must stay visible.
    let forgotten: Vec<u64> = visible[start..end]
        .iter()
        .map(|e| e.id)
        .filter(|id| !state.pending.contains(id))
        .collect();
    (!forgotten.is_empty()).then_some(forgotten)
}

/// The request that asks the model for a summary of `forgotten` (and the previous summary).
pub fn summary_request(
    events: &[AgentEvent],
    forgotten: &[u64],
    previous: Option<&str>,
) -> Vec<ChatMessage> {
    let mut text = String::new();
    if let Some(previous) = previous {
        text.push_str(&format!("Summary so far:\n{previous}\n\nLater events:\n"));
    }
    for event in events.iter().filter(|e| forgotten.contains(&e.id)) {
        let line = match &event.kind {
            EventKind::Message {
                speaker: Speaker::User,
                text,
            } => format!("Researcher: {text}"),
            EventKind::Message {
                speaker: Speaker::Agent,
                text,
            } => format!("Agent: {text}"),
            EventKind::Action {
                tool, arguments, ..
            } => format!("Agent called {tool} with {arguments}"),
            EventKind::Observation { observation, .. } => {
                let short: String = observation.content.chars().take(2000).collect();
                format!("Result: {short}")
            }
            EventKind::Rejection { reason, .. } => {
                format!("The researcher rejected an action: {reason}")
            }
            EventKind::AgentError { message, .. } => format!("Error: {message}"),
            _ => continue,
        };
        text.push_str(&line);
        text.push('\n');
    }
    vec![
        ChatMessage::System {
            content: "You condense an agent's working history. Write a concise summary that keeps every fact, \
                      file path, decision, result and open question the agent needs to continue the task."
                .to_owned(),
        },
        ChatMessage::User { content: text },
    ]
}

/// A rough token count of a request (four bytes a token), enough to decide when to condense.
pub fn estimated_tokens(view: &[ChatMessage]) -> u64 {
    let bytes: usize = view
        .iter()
        .map(|m| match m {
            ChatMessage::System { content } | ChatMessage::User { content } => content.len(),
            ChatMessage::Tool { content, .. } => content.len() + 32,
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                content.as_ref().map_or(0, String::len)
                    + tool_calls
                        .iter()
                        .map(|c| c.function.arguments.len() + c.function.name.len() + 48)
                        .sum::<usize>()
            }
        })
        .sum();
    bytes as u64 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: u64) -> AgentEvent {
        AgentEvent {
            id,
            kind: EventKind::Message {
                speaker: Speaker::Agent,
                text: format!("message {id}"),
            },
        }
    }

    #[test]
    fn a_short_history_over_the_token_budget_plans_without_panicking() {
        let config = CondenserConfig {
            max_events: 120,
            keep_first: 2,
        };
        let state = ConversationState::default();
        for len in 0..8 {
            let events: Vec<AgentEvent> = (1..=len).map(message).collect();
            // Every event is within the kept head or tail: nothing can be forgotten.
            assert_eq!(plan(&config, &events, &state, true), None, "{len} events");
        }
    }

    #[test]
    fn a_long_history_forgets_the_middle_and_keeps_head_and_tail() {
        let config = CondenserConfig {
            max_events: 4,
            keep_first: 1,
        };
        let events: Vec<AgentEvent> = (1..=10).map(message).collect();
        let forgotten = plan(&config, &events, &ConversationState::default(), false);
        assert_eq!(forgotten, Some((2..=8).collect()));
    }
}
