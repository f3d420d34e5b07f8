//! Backend events become Heartwood's durable events, here and nowhere else.
//!
//! The translation is a deterministic function of the backend's log, event by event, so the
//! gateway can always tell how far the journal has caught up with the engine: it counts the
//! journal's backend-derived events ([`is_backend_derived`]) and translates the engine's log
//! again, skipping that many. That closes the window where a process stops after the engine
//! wrote an event and before the journal did.

use std::collections::HashMap;

use heartwood_agent::conversation::{AgentEvent, ApprovedBy, EventKind, ExecutionStatus, Speaker};
use heartwood_agent::tools::Risk;
use heartwood_events::{
    ActionProposal, ActionState, Event, Lifecycle, PlanStatus, PlanTask, RiskLevel, Role,
};

/// The longest tool output excerpt kept in an action record, in bytes. The engine's own log
/// keeps the whole output; the record keeps enough to review what happened.
pub const OUTPUT_EXCERPT_BYTES: usize = 4096;

/// Whether an event comes from translating the backend (as opposed to being recorded by the
/// gateway for a command or for its own reconciliation).
pub fn is_backend_derived(event: &Event) -> bool {
    matches!(
        event,
        Event::Message { .. }
            | Event::LifecycleChanged { .. }
            | Event::ActionProposed { .. }
            | Event::ActionUpdated { .. }
            | Event::TaskPlanUpdated { .. }
            | Event::UsageRecorded { .. }
            | Event::ErrorRecorded { .. }
            | Event::ContextCondensed { .. }
    )
}

/// Translates one conversation's events in order. Keeps what later events need to know about
/// earlier ones: each action's record version, and the plans task-tracker actions proposed.
#[derive(Debug, Default)]
pub struct Translator {
    versions: HashMap<u64, u32>,
    plans: HashMap<u64, String>,
}

impl Translator {
    /// The durable events for one backend event (often one, sometimes none or several).
    pub fn translate(&mut self, event: &AgentEvent) -> Vec<Event> {
        match &event.kind {
            // The gateway records the researcher's words itself, with the command that sent them.
            EventKind::Message {
                speaker: Speaker::User,
                ..
            } => Vec::new(),
            EventKind::Message {
                speaker: Speaker::Agent,
                text,
            } => vec![Event::Message {
                role: Role::Agent,
                text: text.clone(),
            }],
            EventKind::Action {
                tool, arguments, ..
            } => {
                self.versions.insert(event.id, 1);
                if tool == "task_tracker" {
                    self.plans.insert(event.id, arguments.clone());
                }
                proposal_of(event)
                    .map(|action| Event::ActionProposed { action })
                    .into_iter()
                    .collect()
            }
            EventKind::Approved { action_ids, by } => {
                let detail = match by {
                    ApprovedBy::User => "allowed once by the researcher",
                    ApprovedBy::Policy => {
                        "allowed by the action policy (commands run in the read-only sandbox)"
                    }
                };
                action_ids
                    .iter()
                    .map(|id| self.update(*id, ActionState::Approved, Some(detail.into()), None))
                    .collect()
            }
            EventKind::Started { action_id } => {
                vec![self.update(*action_id, ActionState::Running, None, None)]
            }
            EventKind::Observation {
                action_id,
                observation,
            } => {
                let state = if observation.stopped {
                    ActionState::Stopped
                } else if observation.is_error {
                    ActionState::Failed
                } else {
                    ActionState::Completed
                };
                let detail = Some(excerpt(&observation.content));
                let exit = observation.exit_code.map(i64::from);
                let mut update = self.update(*action_id, state, detail, exit);
                if let Event::ActionUpdated { changed_path, .. } = &mut update
                    && !observation.is_error
                {
                    changed_path.clone_from(&observation.changed_path);
                }
                let mut out = vec![update];
                if let Some(arguments) = self.plans.remove(action_id)
                    && !observation.is_error
                    && let Some(tasks) = plan_of(&arguments)
                {
                    out.push(Event::TaskPlanUpdated { tasks });
                }
                self.versions.remove(action_id);
                out
            }
            EventKind::Rejection { action_id, reason } => {
                let detail = if reason.is_empty() {
                    "rejected by the researcher".to_owned()
                } else {
                    format!("rejected by the researcher: {reason}")
                };
                self.resolve(*action_id, ActionState::Rejected, detail)
            }
            EventKind::AgentError { action_id, message } => {
                self.resolve(*action_id, ActionState::Failed, message.clone())
            }
            EventKind::Status { status } => vec![Event::LifecycleChanged {
                lifecycle: lifecycle(*status),
            }],
            EventKind::Error { message } => vec![Event::ErrorRecorded {
                message: message.clone(),
            }],
            EventKind::Condensation {
                forgotten_event_ids,
                ..
            } => vec![Event::ContextCondensed {
                forgotten: forgotten_event_ids.len() as u64,
            }],
            EventKind::Usage { usage_id, usage } => vec![Event::UsageRecorded {
                purpose: usage_id.clone(),
                usage: *usage,
            }],
        }
    }

    fn resolve(&mut self, action_id: u64, state: ActionState, detail: String) -> Vec<Event> {
        let event = self.update(action_id, state, Some(detail), None);
        self.versions.remove(&action_id);
        self.plans.remove(&action_id);
        vec![event]
    }

    fn update(
        &mut self,
        action_id: u64,
        state: ActionState,
        detail: Option<String>,
        exit_code: Option<i64>,
    ) -> Event {
        let version = self.versions.entry(action_id).or_insert(1);
        *version += 1;
        Event::ActionUpdated {
            action_id,
            version: *version,
            state,
            detail,
            exit_code,
            changed_path: None,
        }
    }
}

/// An engine action as a proposal, with the confinement the engine gives its process.
pub fn proposal_of(event: &AgentEvent) -> Option<ActionProposal> {
    match &event.kind {
        EventKind::Action {
            response_id,
            tool,
            arguments,
            thought,
            risk,
            sandbox,
            ..
        } => Some(ActionProposal {
            action_id: event.id,
            response_id: response_id.clone(),
            tool: tool.clone(),
            arguments: arguments.clone(),
            risk: risk_level(*risk),
            thought: thought.clone(),
            sandbox: *sandbox,
        }),
        _ => None,
    }
}

/// The backend's status as a lifecycle.
pub fn lifecycle(status: ExecutionStatus) -> Lifecycle {
    match status {
        ExecutionStatus::Idle => Lifecycle::Idle,
        ExecutionStatus::Running => Lifecycle::Running,
        ExecutionStatus::Paused => Lifecycle::Paused,
        ExecutionStatus::WaitingForConfirmation => Lifecycle::WaitingForDecision,
        ExecutionStatus::Finished => Lifecycle::Finished,
        ExecutionStatus::Error => Lifecycle::Failed,
        ExecutionStatus::Stuck => Lifecycle::Stuck,
        // Never recorded (the OpenHands log leaves it out); nothing runs while it lasts.
        ExecutionStatus::Deleting => Lifecycle::Idle,
    }
}

/// The engine's risk rating in Heartwood's words.
pub fn risk_level(risk: Risk) -> RiskLevel {
    match risk {
        Risk::Unknown => RiskLevel::Unknown,
        Risk::Low => RiskLevel::Low,
        Risk::Medium => RiskLevel::Medium,
        Risk::High => RiskLevel::High,
    }
}

/// The start of a tool's output, cut at a character boundary, saying how much was left out.
fn excerpt(text: &str) -> String {
    if text.len() <= OUTPUT_EXCERPT_BYTES {
        return text.to_owned();
    }
    let mut end = OUTPUT_EXCERPT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… {} more bytes in the agent's log]",
        &text[..end],
        text.len() - end
    )
}

/// The task list of a `task_tracker` `plan` call.
fn plan_of(arguments: &str) -> Option<Vec<PlanTask>> {
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    if value.get("command")?.as_str()? != "plan" {
        return None;
    }
    let text = |task: &serde_json::Value, key: &str| {
        task.get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let tasks = value
        .get("task_list")?
        .as_array()?
        .iter()
        .map(|task| PlanTask {
            title: text(task, "title"),
            notes: text(task, "notes"),
            status: PlanStatus::from_name(&text(task, "status")),
        })
        .collect();
    Some(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u64, kind: EventKind) -> AgentEvent {
        AgentEvent { id, kind }
    }

    #[test]
    fn an_action_gets_increasing_versions_until_it_is_resolved() {
        let mut t = Translator::default();
        let proposed = t.translate(&event(
            1,
            EventKind::Action {
                response_id: "r".into(),
                tool_call_id: "c".into(),
                tool: "task_tracker".into(),
                arguments: r#"{"command":"plan","task_list":[{"title":"load","status":"done"}]}"#
                    .into(),
                thought: None,
                risk: Risk::Low,
                sandbox: None,
            },
        ));
        assert!(proposed.iter().all(is_backend_derived));
        let approved = t.translate(&event(
            2,
            EventKind::Approved {
                action_ids: vec![1],
                by: ApprovedBy::User,
            },
        ));
        let started = t.translate(&event(3, EventKind::Started { action_id: 1 }));
        let observed = t.translate(&event(
            4,
            EventKind::Observation {
                action_id: 1,
                observation: heartwood_agent::tools::Observation::ok("planned"),
            },
        ));
        let versions: Vec<u32> = [approved, started, observed.clone()]
            .iter()
            .flatten()
            .filter_map(|e| match e {
                Event::ActionUpdated { version, .. } => Some(*version),
                _ => None,
            })
            .collect();
        assert_eq!(versions, [2, 3, 4]);
        assert!(
            matches!(&observed[1], Event::TaskPlanUpdated { tasks } if tasks[0].title == "load" && tasks[0].status == PlanStatus::Done)
        );
    }

    #[test]
    fn long_output_is_cut_at_a_character_boundary_and_says_so() {
        let text = "é".repeat(OUTPUT_EXCERPT_BYTES);
        let cut = excerpt(&text);
        assert!(cut.len() < text.len());
        assert!(cut.ends_with("more bytes in the agent's log]"), "{cut}");
    }

    #[test]
    fn the_researchers_words_are_not_translated_twice() {
        let mut t = Translator::default();
        let user = event(
            1,
            EventKind::Message {
                speaker: Speaker::User,
                text: "hi".into(),
            },
        );
        assert!(t.translate(&user).is_empty());
        assert!(!is_backend_derived(&Event::GuidanceSent {
            text: "hi".into()
        }));
    }
}
