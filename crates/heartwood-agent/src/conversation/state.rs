//! The conversation's state, folded from its events; restoring a conversation is replaying its
//! log through [`ConversationState::apply`].

use std::collections::{BTreeMap, HashSet};

use super::{AgentEvent, EventKind, ExecutionStatus};
use crate::model::Usage;

/// What the log says about the conversation now.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationState {
    /// The execution status.
    pub status: ExecutionStatus,
    /// Actions proposed and not yet resolved, in order.
    pub pending: Vec<u64>,
    /// Pending actions allowed to run.
    pub approved: HashSet<u64>,
    /// Pending actions whose execution began.
    pub started: HashSet<u64>,
    /// Usage per usage id (`agent`, `condenser`, ...).
    pub usage: BTreeMap<String, Usage>,
    /// Events the model no longer sees.
    pub forgotten: HashSet<u64>,
    /// The latest condensation summary and where it sits in the model's view.
    pub summary: Option<(String, usize)>,
    /// Agent model calls since the current run started.
    pub calls_this_run: u32,
}

impl Default for ConversationState {
    fn default() -> Self {
        ConversationState {
            status: ExecutionStatus::Idle,
            pending: Vec::new(),
            approved: HashSet::new(),
            started: HashSet::new(),
            usage: BTreeMap::new(),
            forgotten: HashSet::new(),
            summary: None,
            calls_this_run: 0,
        }
    }
}

impl ConversationState {
    /// The state after `events`.
    pub fn replay(events: &[AgentEvent]) -> Self {
        let mut state = ConversationState::default();
        for event in events {
            state.apply(event);
        }
        state
    }

    /// Folds one event in.
    pub fn apply(&mut self, event: &AgentEvent) {
        match &event.kind {
            EventKind::Action { .. } => self.pending.push(event.id),
            EventKind::Approved { action_ids, .. } => self.approved.extend(action_ids),
            EventKind::Started { action_id } => {
                self.started.insert(*action_id);
            }
            EventKind::Status { status } => {
                if *status == ExecutionStatus::Running && self.status != ExecutionStatus::Running {
                    self.calls_this_run = 0;
                }
                self.status = *status;
            }
            EventKind::Condensation {
                forgotten_event_ids,
                summary,
                summary_offset,
            } => {
                self.forgotten.extend(forgotten_event_ids);
                self.summary = Some((summary.clone(), *summary_offset));
            }
            EventKind::Usage { usage_id, usage } => {
                self.usage.entry(usage_id.clone()).or_default().add(usage);
                if usage_id == "agent" {
                    self.calls_this_run += 1;
                }
            }
            EventKind::Message { .. } | EventKind::Error { .. } => {}
            resolution => {
                if let Some(action) = resolution.resolves() {
                    self.pending.retain(|id| *id != action);
                    self.approved.remove(&action);
                    self.started.remove(&action);
                }
            }
        }
    }

    /// Total usage over every usage id.
    pub fn total_usage(&self) -> Usage {
        let mut total = Usage::default();
        for usage in self.usage.values() {
            total.add(usage);
        }
        total
    }
}
