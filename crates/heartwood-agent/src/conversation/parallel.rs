//! Advisory specialist batches run at once. A set made only of `task` calls to the catalog's
//! roles (all advisory and tool-free: the catalog refuses to register any other), with
//! distinct calls and none started before, may run up to an admitted number of children at
//! a time when the gateway admitted it so ([`Conversation::approve_pending_in_parallel`]).
//! Anything else (terminal, editor, mixed, a resumed task) runs in order as every set does.
//!
//! Each child keeps the parent's controls: a pause asked before a child starts means it never
//! starts (it stays allowed, for the next run), and an interruption stops every running child
//! at its model call. Children never write the log; the parent records each one's model calls,
//! usage and answer as it completes, so the log stays one writer's.

use std::time::Instant;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use super::task::{ChildTask, run_child};
use super::{Conversation, ConversationError, EventKind, ExecutionStatus};
use crate::tools::ToolCallRequest;

impl Conversation {
    /// Allows the whole pending set once, and lets it run up to `at_most` specialist tasks at
    /// a time if it is an advisory batch; any other set runs in order.
    pub fn approve_pending_in_parallel(&mut self, at_most: usize) -> Result<(), ConversationError> {
        self.approve_pending()?;
        self.parallel = Some(at_most.max(1));
        Ok(())
    }

    /// Whether the pending set (allowed or not) is an advisory batch that could run at once:
    /// two or more distinct `task` calls to catalog roles, none started.
    pub fn pending_is_advisory_batch(&self) -> bool {
        self.advisory_batch(false).is_some()
    }

    /// The pending actions as children, when they form an advisory batch. `approved` asks
    /// that every one of them was allowed.
    pub(super) fn advisory_batch(&self, approved: bool) -> Option<Vec<ChildTask>> {
        let ids: Vec<u64> = self.state.pending.to_vec();
        if ids.len() < 2
            || ids.iter().any(|id| {
                self.state.started.contains(id) || (approved && !self.state.approved.contains(id))
            })
        {
            return None;
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut children = Vec::with_capacity(ids.len());
        for id in ids {
            let Ok(ToolCallRequest::Task {
                subagent_type,
                prompt,
                ..
            }) = self.request_of(id)
            else {
                return None;
            };
            // The same question twice is one identity asked twice: not a batch.
            if !seen.insert((subagent_type.clone(), prompt.clone())) {
                return None;
            }
            children.push(self.child_task(id, &subagent_type, &prompt).ok()?);
        }
        Some(children)
    }

    /// Runs an admitted advisory batch, up to `at_most` children at a time. Returns a status
    /// when the run must stop (a pause or an interruption).
    pub(super) async fn run_batch(
        &mut self,
        batch: Vec<ChildTask>,
        at_most: usize,
    ) -> Result<Option<ExecutionStatus>, ConversationError> {
        let ran = Instant::now();
        let interrupt = self.toolbox.interrupt_handle();
        let mut waiting = batch.into_iter();
        let mut running = FuturesUnordered::new();
        let mut stopping = false;
        loop {
            while running.len() < at_most && !stopping {
                // Checked before each start: a child asked to pause never starts.
                if self.pause.take() || interrupt.is_requested() {
                    stopping = true;
                    break;
                }
                let Some(child) = waiting.next() else { break };
                self.record(EventKind::Started {
                    action_id: child.action_id(),
                })?;
                // Durable before the child runs: after a crash it is never run again.
                self.sync()?;
                running.push(run_child(self.client.clone(), child, interrupt.clone()));
            }
            let Some(done) = running.next().await else {
                break;
            };
            let action_id = done.action_id;
            let observation = self.record_child(done)?;
            self.record(EventKind::Observation {
                action_id,
                observation,
            })?;
        }
        self.timing.tools += ran.elapsed();
        if stopping | interrupt.take() {
            return self.stop_with(ExecutionStatus::Paused).map(Some);
        }
        Ok(None)
    }
}
