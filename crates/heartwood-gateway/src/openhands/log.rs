//! OpenHands' stored events read as a log: what has been read, each event turned into the
//! native engine's event kinds and through the one [`Translator`], and what the log says about
//! open actions, the waiting set, usage and the researcher's messages. A deterministic
//! function of the stored events, so a session reopened in another process translates the
//! same way.

use std::collections::HashMap;

use heartwood_agent::conversation::{AgentEvent, EventKind, ExecutionStatus, Speaker};
use heartwood_agent::model::Usage;
use heartwood_agent::tools::{Observation, ToolCallRequest, risk};
use heartwood_events::Origin;
use heartwood_openhands::events::Event as OhEvent;
use heartwood_openhands::{ConversationStore, OpenHandsError, StoredEvent};

use crate::backend::BackendEntry;
use crate::translate::Translator;

/// An action proposed and not yet resolved.
pub(super) struct OpenAction {
    event: AgentEvent,
    /// Allowed to run (by the researcher or the policy): the log shows the run going on after
    /// it was proposed, without waiting on it since.
    allowed: bool,
}

/// Why an action allowed to run, and cut off before it reported (the researcher stopped it, or
/// the server stopped), is resolved without running it again.
pub(super) const CUT_OFF: &str = "cut off before it reported (stopped by the researcher, or the agent \
                       server stopped); Heartwood resolved it without running it again";

/// What has been read of the server's log, and what later entries need of earlier ones.
#[derive(Default)]
pub(super) struct Log {
    /// The project the agent works in (file edits are recorded relative to it).
    pub(super) project: camino::Utf8PathBuf,
    /// The last index read.
    pub(super) read_upto: u64,
    /// The SHA-256 of each entry read, by index - 1.
    pub(super) digests: Vec<String>,
    /// The researcher's messages, in order.
    pub(super) inputs: Vec<String>,
    /// The last execution status the log recorded.
    pub(super) status: Option<ExecutionStatus>,
    /// How many usage reports (`stats`) the log holds: the server writes one per completion.
    pub(super) usage_reports: u64,
    /// Actions proposed and not yet resolved, in order.
    open: Vec<OpenAction>,
    /// Each tool call's action index.
    calls: HashMap<String, u64>,
    /// Usage accumulated so far, by usage id.
    usage: HashMap<String, Usage>,
    /// The route has prices, which the conversation was given: its cost figures are known.
    pub(super) priced: bool,
    translator: Translator,
}

impl Log {
    /// A log of nothing read yet, for an agent working in `project`.
    pub(super) fn for_project(project: camino::Utf8PathBuf) -> Log {
        Log {
            project,
            ..Log::default()
        }
    }

    /// Reads and translates the entries after the last one read.
    pub(super) fn read(
        &mut self,
        store: &ConversationStore,
        id: &str,
    ) -> Result<Vec<BackendEntry>, OpenHandsError> {
        let stored = store.read_from(id, self.read_upto + 1)?;
        Ok(stored.into_iter().map(|e| self.take(e)).collect())
    }

    pub(super) fn take(&mut self, stored: StoredEvent) -> BackendEntry {
        self.read_upto = stored.index;
        self.digests.push(stored.sha256.clone());
        let events = self
            .kinds(stored.index, stored.event)
            .into_iter()
            .flat_map(|kind| {
                let event = AgentEvent {
                    id: stored.index,
                    kind,
                };
                self.translator.translate(&event)
            })
            .collect();
        BackendEntry {
            origin: Origin {
                event: stored.index,
                sha256: stored.sha256,
            },
            events,
        }
    }

    /// The native engine's event kinds one OpenHands event stands for.
    fn kinds(&mut self, index: u64, event: OhEvent) -> Vec<EventKind> {
        match event {
            OhEvent::Message { source, text, .. } => {
                let speaker = if source == "user" {
                    self.inputs.push(text.clone());
                    Speaker::User
                } else {
                    Speaker::Agent
                };
                vec![EventKind::Message { speaker, text }]
            }
            OhEvent::Action(action) => {
                let arguments = action.arguments();
                let kind = EventKind::Action {
                    response_id: action.llm_response_id.clone(),
                    tool_call_id: action.tool_call_id.clone(),
                    // Rated by Heartwood's own rules, as the native engine's actions are, not
                    // by the model's prediction.
                    risk: ToolCallRequest::parse(&action.tool_name, &arguments)
                        .as_ref()
                        .map_or(heartwood_agent::tools::Risk::Unknown, risk),
                    thought: action.thought_text(),
                    // OpenHands runs its terminal in its server, which runs in Heartwood's
                    // sandbox at a person's level.
                    sandbox: (action.tool_name == "terminal").then(super::server_level),
                    tool: action.tool_name,
                    arguments,
                };
                self.calls.insert(action.tool_call_id, index);
                self.open.push(OpenAction {
                    event: AgentEvent {
                        id: index,
                        kind: kind.clone(),
                    },
                    allowed: self.status == Some(ExecutionStatus::Running),
                });
                vec![kind]
            }
            OhEvent::Observation {
                tool_call_id,
                tool_name,
                observation,
                ..
            } => {
                let Some(action_id) = self.resolve(&tool_call_id) else {
                    return Vec::new();
                };
                let observation = observation_of(&tool_name, &observation, &self.project);
                // As in the native engine, `finish`'s message is the agent's last word.
                let said = (tool_name == "finish").then(|| EventKind::Message {
                    speaker: Speaker::Agent,
                    text: observation.content.clone(),
                });
                std::iter::once(EventKind::Observation {
                    action_id,
                    observation,
                })
                .chain(said)
                .collect()
            }
            OhEvent::Rejected {
                tool_call_id,
                reason,
                ..
            } => {
                let allowed = self.is_allowed(&tool_call_id);
                let Some(action_id) = self.resolve(&tool_call_id) else {
                    return Vec::new();
                };
                // Only the researcher rejects a set; an allowed action resolved this way was
                // cut off (see `CUT_OFF`) or refused by Heartwood's bound on the editor (see
                // `confine`), and is recorded as failed, not as rejected.
                if allowed || reason.starts_with(super::confine::REFUSED) {
                    vec![EventKind::AgentError {
                        action_id,
                        message: reason,
                    }]
                } else {
                    vec![EventKind::Rejection { action_id, reason }]
                }
            }
            OhEvent::AgentError {
                tool_call_id,
                class,
                ..
            } => {
                // The scaffold's text may quote the model's arguments or a provider's reply:
                // only its class is recorded; OpenHands' own log keeps the rest.
                let message = format!(
                    "the action could not run ({}); OpenHands told the agent why",
                    class.as_deref().unwrap_or("unclassified")
                );
                match self.resolve(&tool_call_id) {
                    Some(action_id) => vec![EventKind::AgentError { action_id, message }],
                    None => vec![EventKind::Error { message }],
                }
            }
            OhEvent::ConversationError { code, class, .. } => vec![EventKind::Error {
                message: format!(
                    "the OpenHands agent stopped on an error ({code}{}); the session's \
                     backend/agent-server.log has the detail",
                    class.map(|c| format!(", {c}")).unwrap_or_default()
                ),
            }],
            OhEvent::State { key, value, .. } if key == "execution_status" => {
                let Ok(status) = serde_json::from_value::<ExecutionStatus>(value) else {
                    return Vec::new();
                };
                self.status = Some(status);
                match status {
                    ExecutionStatus::Running => self.open.iter_mut().for_each(|a| a.allowed = true),
                    ExecutionStatus::WaitingForConfirmation => {
                        self.open.iter_mut().for_each(|a| a.allowed = false);
                    }
                    _ => {}
                }
                native_status(status)
                    .map(|status| EventKind::Status { status })
                    .into_iter()
                    .collect()
            }
            OhEvent::State { key, value, .. } if key == "stats" => {
                self.usage_reports += 1;
                self.usage_since(&value)
            }
            OhEvent::State { .. } | OhEvent::Other { .. } => Vec::new(),
        }
    }

    /// The action a tool call belongs to, resolving it.
    fn resolve(&mut self, tool_call_id: &str) -> Option<u64> {
        let action_id = *self.calls.get(tool_call_id)?;
        self.open.retain(|a| a.event.id != action_id);
        Some(action_id)
    }

    /// Whether the tool call's action is open and was allowed to run.
    fn is_allowed(&self, tool_call_id: &str) -> bool {
        let Some(action_id) = self.calls.get(tool_call_id) else {
            return false;
        };
        self.open
            .iter()
            .any(|a| a.event.id == *action_id && a.allowed)
    }

    /// Whether an action allowed to run has no result: the server that ran it stopped.
    pub(super) fn cut_off(&self) -> bool {
        self.open.iter().any(|a| a.allowed)
    }

    /// Usage events for what each usage id accumulated since the last report.
    fn usage_since(&mut self, stats: &serde_json::Value) -> Vec<EventKind> {
        let Some(by_id) = stats["usage_to_metrics"].as_object() else {
            return Vec::new();
        };
        let mut kinds = Vec::new();
        for (usage_id, metrics) in by_id {
            let tokens = &metrics["accumulated_token_usage"];
            let count = |key: &str| tokens[key].as_u64().unwrap_or(0);
            let total = Usage {
                prompt_tokens: count("prompt_tokens"),
                completion_tokens: count("completion_tokens"),
                cache_read_tokens: count("cache_read_tokens"),
                reasoning_tokens: count("reasoning_tokens"),
                cost_micros: (metrics["accumulated_cost"].as_f64().unwrap_or(0.0) * 1e6) as u64,
                calls: 0,
                priced_calls: 0,
            };
            let before = self.usage.get(usage_id).cloned().unwrap_or_default();
            let delta = Usage {
                prompt_tokens: total.prompt_tokens.saturating_sub(before.prompt_tokens),
                completion_tokens: total
                    .completion_tokens
                    .saturating_sub(before.completion_tokens),
                cache_read_tokens: total
                    .cache_read_tokens
                    .saturating_sub(before.cache_read_tokens),
                reasoning_tokens: total
                    .reasoning_tokens
                    .saturating_sub(before.reasoning_tokens),
                cost_micros: total.cost_micros.saturating_sub(before.cost_micros),
                calls: 1,
                // LiteLLM prices a model it does not know at 0: the cost is known only when
                // the route's prices were given to the conversation.
                priced_calls: u64::from(self.priced),
            };
            if delta.prompt_tokens + delta.completion_tokens + delta.cost_micros > 0 {
                kinds.push(EventKind::Usage {
                    usage_id: self.purpose(usage_id),
                    usage: delta,
                });
            }
            self.usage.insert(usage_id.clone(), total);
        }
        kinds
    }

    /// The purpose a usage id stands for: a specialist task's calls count (by the launcher's
    /// naming) under `task:<the parent's tool call id>`, and are recorded under the parent's
    /// action, `task:<action id>`, as the native engine records them.
    fn purpose(&self, usage_id: &str) -> String {
        usage_id
            .strip_prefix("task:")
            .and_then(|call| self.calls.get(call))
            .map_or_else(|| usage_id.to_owned(), |action| format!("task:{action}"))
    }

    /// The actions the log shows waiting: the unresolved ones of the last reply, while the
    /// server waits for a decision.
    pub(super) fn waiting(&self) -> Vec<&AgentEvent> {
        if self.status != Some(ExecutionStatus::WaitingForConfirmation) {
            return Vec::new();
        }
        let last_reply = self.open.last().and_then(|a| match &a.event.kind {
            EventKind::Action { response_id, .. } => Some(response_id.clone()),
            _ => None,
        });
        self.open
            .iter()
            .map(|a| &a.event)
            .filter(|a| {
                matches!(&a.kind, EventKind::Action { response_id, .. }
                    if Some(response_id) == last_reply.as_ref())
            })
            .collect()
    }
}

/// An OpenHands observation as the native engine's: a file edit names the project-relative
/// path it changed, as the native editor's observations do.
fn observation_of(
    tool: &str,
    observation: &serde_json::Value,
    project: &camino::Utf8Path,
) -> Observation {
    let is_error = observation["is_error"].as_bool().unwrap_or(false);
    let changed_path = (tool == "file_editor" && !is_error && observation["command"] != "view")
        .then(|| observation["path"].as_str())
        .flatten()
        .and_then(|path| camino::Utf8Path::new(path).strip_prefix(project).ok())
        .map(|relative| relative.to_string());
    let content: String = observation["content"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default();
    Observation {
        content,
        is_error,
        exit_code: observation["exit_code"]
            .as_i64()
            .and_then(|c| i32::try_from(c).ok()),
        changed_path,
        stopped: false,
    }
}

/// The status as the engine's log records it (`deleting` is the server's own business: the
/// conversation is going away, and nothing in the session changes).
fn native_status(status: ExecutionStatus) -> Option<ExecutionStatus> {
    (status != ExecutionStatus::Deleting).then_some(status)
}

#[cfg(test)]
mod tests {
    use heartwood_events::{ActionState, Event, Role};
    use serde_json::json;

    use super::*;

    fn stored(index: u64, value: serde_json::Value) -> StoredEvent {
        StoredEvent {
            index,
            sha256: format!("digest-{index}"),
            id: format!("e{index}"),
            event: OhEvent::from_value(value),
        }
    }

    fn action(call: &str, command: &str) -> serde_json::Value {
        json!({"kind": "ActionEvent", "id": call, "llm_response_id": "r1", "tool_name": "terminal",
               "tool_call_id": call, "action": {"command": command},
               "tool_call": {"arguments": json!({"command": command}).to_string()}})
    }

    fn status(value: &str) -> serde_json::Value {
        json!({"kind": "ConversationStateUpdateEvent", "key": "execution_status", "value": value})
    }

    fn reject(call: &str, reason: &str) -> serde_json::Value {
        json!({"kind": "UserRejectObservation", "tool_call_id": call, "rejection_reason": reason})
    }

    fn translate(log: &mut Log, values: Vec<serde_json::Value>) -> Vec<Event> {
        let from = log.read_upto + 1;
        values
            .into_iter()
            .enumerate()
            .flat_map(|(n, v)| log.take(stored(from + n as u64, v)).events)
            .collect()
    }

    fn states(events: &[Event]) -> Vec<ActionState> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::ActionUpdated { state, .. } => Some(*state),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_waiting_set_is_the_last_replys_open_actions_and_a_rejection_of_it_is_the_researchers() {
        let mut log = Log::default();
        translate(
            &mut log,
            vec![
                status("running"),
                action("c1", "echo one"),
                action("c2", "echo two"),
                status("waiting_for_confirmation"),
            ],
        );
        assert_eq!(
            log.waiting().iter().map(|a| a.id).collect::<Vec<_>>(),
            [2, 3]
        );
        assert!(!log.cut_off(), "nothing was allowed");
        let events = translate(
            &mut log,
            vec![status("idle"), reject("c1", "no"), reject("c2", "no")],
        );
        assert_eq!(states(&events), [ActionState::Rejected; 2]);
        assert!(log.waiting().is_empty());
    }

    #[test]
    fn an_allowed_action_without_a_result_is_cut_off_and_its_resolution_is_a_failure() {
        let mut log = Log::default();
        translate(
            &mut log,
            vec![
                action("c1", "sleep 30"),
                status("waiting_for_confirmation"),
                status("running"),
            ],
        );
        assert!(log.cut_off(), "allowed, and no result");
        let events = translate(&mut log, vec![reject("c1", CUT_OFF)]);
        assert_eq!(states(&events), [ActionState::Failed]);
        assert!(!log.cut_off());
    }

    fn stats(by_id: serde_json::Value) -> serde_json::Value {
        json!({"kind": "ConversationStateUpdateEvent", "key": "stats",
               "value": {"usage_to_metrics": by_id}})
    }

    fn tokens(prompt: u64, completion: u64) -> serde_json::Value {
        json!({"accumulated_token_usage": {"prompt_tokens": prompt,
               "completion_tokens": completion}, "accumulated_cost": 0.0})
    }

    fn usage(events: &[Event]) -> Vec<(String, u64, u64)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::UsageRecorded { purpose, usage } => Some((
                    purpose.clone(),
                    usage.prompt_tokens,
                    usage.completion_tokens,
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_report_is_one_call_differenced_and_a_tasks_calls_are_its_actions() {
        let mut log = Log::default();
        let task = json!({"kind": "ActionEvent", "id": "t", "llm_response_id": "r1",
            "tool_name": "task", "tool_call_id": "call-7",
            "tool_call": {"arguments": "{\"subagent_type\":\"planner\",\"prompt\":\"p\"}"}});
        let events = translate(
            &mut log,
            vec![
                stats(json!({"agent": tokens(100, 10)})),
                task,
                stats(json!({"agent": tokens(100, 10), "task:call-7": tokens(40, 12)})),
                stats(json!({"agent": tokens(330, 17), "task:call-7": tokens(40, 12)})),
            ],
        );
        assert_eq!(
            usage(&events),
            [
                ("agent".to_owned(), 100, 10),
                ("task:2".to_owned(), 40, 12),
                ("agent".to_owned(), 230, 7),
            ],
            "one record per report, the cumulative figures differenced"
        );
        assert_eq!(log.usage_reports, 3);
    }

    #[test]
    fn a_set_heartwood_refused_is_failed_not_rejected_by_the_researcher() {
        let mut log = Log::default();
        translate(
            &mut log,
            vec![action("c1", "echo"), status("waiting_for_confirmation")],
        );
        let reason = format!("{}: outside the project", super::super::confine::REFUSED);
        let events = translate(&mut log, vec![reject("c1", &reason)]);
        assert_eq!(states(&events), [ActionState::Failed]);
    }

    #[test]
    fn finish_ends_with_the_agents_message_and_the_digests_name_each_entry() {
        let mut log = Log::default();
        let events = translate(
            &mut log,
            vec![
                json!({"kind": "MessageEvent", "source": "user",
                       "llm_message": {"content": [{"type": "text", "text": "go"}]}}),
                json!({"kind": "ActionEvent", "id": "f", "llm_response_id": "r2",
                       "tool_name": "finish", "tool_call_id": "f1",
                       "tool_call": {"arguments": "{\"message\":\"done\"}"}}),
                json!({"kind": "ObservationEvent", "tool_call_id": "f1", "tool_name": "finish",
                       "observation": {"content": [{"type": "text", "text": "done"}],
                                       "is_error": false}}),
            ],
        );
        assert_eq!(log.inputs, ["go"]);
        assert!(events.contains(&Event::Message {
            role: Role::Agent,
            text: "done".into()
        }));
        assert_eq!(log.digests, ["digest-1", "digest-2", "digest-3"]);
    }
}
