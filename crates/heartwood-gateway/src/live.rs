//! A session this process serves: its journal writer, its projection, the events so far, and
//! the channel its updates go out on, all behind one lock.
//!
//! Every change goes through [`Core::record`] (durable now) or [`Core::stage`] (numbered,
//! applied and published now, made durable at the engine's next durability point by
//! [`Core::flush`], as one group commit): append or stage, apply to the projection, publish to
//! subscribers, in that order and under the same lock, so a snapshot never sees a projection
//! ahead of (or behind) the events it returns. Staged events are the engine's, whose own log
//! holds them: a process that stops before the flush loses nothing, because the next one
//! translates them from that log again.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use heartwood_audit::SessionWriter;
use heartwood_events::{
    Change, CommandId, Event, Receipt, RecordedEvent, Review, SessionProjection, SessionRow,
    Snapshot, Update,
};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::GatewayError;
use crate::reducer;
use crate::worker_link::WorkerLink;

/// The longest streamed text kept for late subscribers, in bytes.
pub const STREAM_TAIL_BYTES: usize = 64 * 1024;

/// What a command's receipt is keyed by: its id, its type and a digest of what it says.
pub(crate) struct CommandKey<'a> {
    pub(crate) id: &'a CommandId,
    pub(crate) name: &'a str,
    pub(crate) content: &'a str,
    /// Who the command acts for, when its interface said.
    pub(crate) actor: Option<&'a str>,
}

/// The snapshot of a session that has no events yet (a new session before its first task),
/// with the projection's derived fields filled in by the reducer.
pub fn blank_snapshot(session: heartwood_events::SessionId) -> Snapshot {
    let projection = reducer::replay(session, []);
    Snapshot {
        events: Vec::new(),
        revision: 0,
        durable: 0,
        projection,
        transient_revision: 0,
        streaming: String::new(),
        output: None,
        review: None,
    }
}

/// Keeps the last [`STREAM_TAIL_BYTES`] of `text`, cut at a character boundary.
fn keep_tail(text: &mut String) {
    if text.len() > STREAM_TAIL_BYTES {
        let mut cut = text.len() - STREAM_TAIL_BYTES;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text.drain(..cut);
    }
}

/// A live session.
pub(crate) struct Live {
    core: Mutex<Core>,
    updates: broadcast::Sender<Update>,
    /// The session's list row, kept current by the core outside its lock, so listing sessions
    /// never waits on a busy one.
    row: Arc<Mutex<SessionRow>>,
}

/// Everything behind the session's lock.
pub(crate) struct Core {
    /// `None` once the session is closed: the lease is released.
    writer: Option<SessionWriter>,
    projection: SessionProjection,
    events: Vec<Arc<RecordedEvent>>,
    worker: Option<WorkerLink>,
    row: Arc<Mutex<SessionRow>>,
    /// The project, for reviews of pending sets.
    project: camino::Utf8PathBuf,
    /// The project's files, read-only and confined, for reviews.
    /// Opened on the first review (opening it asks `git` about the project, which a session
    /// that never shows a set should not pay for); `None` inside when it cannot be opened.
    workspace: std::sync::OnceLock<Option<heartwood_workspace::Workspace>>,
    /// The review of the pending set, computed when the set was shown.
    review: Option<Review>,
    /// The command channel other processes reach this session through, while served here.
    channel: Option<crate::channel::ChannelServer>,
    /// Engine-derived events numbered and shown but not yet in the journal.
    staged: Vec<RecordedEvent>,
    transient_revision: u64,
    streaming: String,
    /// What the running action has printed (its tail).
    output: Option<heartwood_events::ToolOutput>,
    updates: broadcast::Sender<Update>,
    /// When anything last happened here, for releasing sessions that sit idle.
    last_change: std::cell::Cell<std::time::Instant>,
}

impl Live {
    /// A live session over an open writer and the session's events so far.
    pub(crate) fn new(
        writer: SessionWriter,
        events: Vec<RecordedEvent>,
        project: &camino::Utf8Path,
    ) -> Arc<Self> {
        let id = writer.id().clone();
        let events: Vec<Arc<RecordedEvent>> = events.into_iter().map(Arc::new).collect();
        let projection = reducer::replay(id, events.iter().map(|e| &**e));
        let (updates, _) = broadcast::channel(crate::UPDATE_QUEUE);
        let row = Arc::new(Mutex::new(SessionRow::of(&projection, None)));
        let live = Arc::new(Live {
            core: Mutex::new(Core {
                writer: Some(writer),
                projection,
                events,
                worker: None,
                row: Arc::clone(&row),
                project: project.to_owned(),
                workspace: std::sync::OnceLock::new(),
                review: None,
                channel: None,
                staged: Vec::new(),
                transient_revision: 0,
                streaming: String::new(),
                output: None,
                updates: updates.clone(),
                last_change: std::cell::Cell::new(std::time::Instant::now()),
            }),
            updates,
            row,
        });
        live.lock().refresh_review();
        live
    }

    /// The session's list row now, without waiting on the session's lock.
    pub(crate) fn row(&self, last_activity: Option<heartwood_events::Timestamp>) -> SessionRow {
        let mut row = self
            .row
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        row.last_activity = last_activity;
        row
    }

    /// The session's lock. A panic elsewhere while holding it leaves the journal consistent
    /// (the writer refuses to continue after a failed write), so the lock is still usable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new subscription to this session's updates.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Update> {
        self.updates.subscribe()
    }
}

impl Drop for Core {
    /// Whatever is staged reaches the journal before the lease is released, however the
    /// session stops being served.
    fn drop(&mut self) {
        let _ = self.flush();
        self.store_cache();
        // The socket goes before the lease: once the lease is free, the next owner's socket
        // may take its place, and must not be removed.
        self.channel = None;
    }
}

impl Core {
    /// The session's projection now.
    pub(crate) fn projection(&self) -> &SessionProjection {
        &self.projection
    }

    /// The session's events now (durable and staged).
    pub(crate) fn events(&self) -> &[Arc<RecordedEvent>] {
        &self.events
    }

    /// The writer, if the session is still served.
    pub(crate) fn writer_ref(&self) -> Option<&SessionWriter> {
        self.writer.as_ref()
    }

    /// Flushes what is staged, leaves the cached projection, stops serving the channel and
    /// releases the lease. The session's worker must have stopped (or been taken) first.
    pub(crate) fn release(&mut self) {
        let _ = self.flush();
        self.store_cache();
        self.channel = None;
        self.writer = None;
    }

    /// Serves the session's command channel (while the lease is held here).
    pub(crate) fn set_channel(&mut self, channel: Option<crate::channel::ChannelServer>) {
        self.channel = channel;
    }

    /// The session's worker, if one runs.
    pub(crate) fn worker(&self) -> Option<&WorkerLink> {
        self.worker.as_ref()
    }

    /// Takes the worker away (to stop it, or because it stopped).
    pub(crate) fn take_worker(&mut self) -> Option<WorkerLink> {
        self.worker.take()
    }

    /// Sets the session's worker.
    pub(crate) fn set_worker(&mut self, worker: WorkerLink) {
        self.worker = Some(worker);
    }

    /// Asks the worker, if any, to pause at its next step.
    pub(crate) fn pause_worker(&self) {
        if let Some(worker) = &self.worker {
            worker.pause();
        }
    }

    /// The writer, or why there is none.
    pub(crate) fn writer(&mut self) -> Result<&mut SessionWriter, GatewayError> {
        let id = self.projection.session.clone();
        self.writer
            .as_mut()
            .ok_or_else(|| GatewayError::Closed(id.clone()))
    }

    /// Appends events (no command) durably now, after anything staged, and applies and
    /// publishes them.
    pub(crate) fn record(&mut self, events: Vec<Event>) -> Result<(), GatewayError> {
        self.flush()?;
        if events.is_empty() {
            return Ok(());
        }
        let recorded = self.writer()?.append_recorded(None, events)?;
        self.accept(recorded);
        Ok(())
    }

    /// Numbers the engine's events after everything recorded or staged, marks them with the
    /// engine event they came from, and applies and publishes them now; [`Core::flush`] makes
    /// them durable.
    pub(crate) fn stage(
        &mut self,
        events: Vec<Event>,
        origin: Option<heartwood_events::Origin>,
    ) -> Result<(), GatewayError> {
        if events.is_empty() {
            return Ok(());
        }
        // A writer that failed stages nothing more: what follows could never be recorded.
        self.writer()?.ensure_usable()?;
        let mut recorded = Vec::with_capacity(events.len());
        for event in events {
            let seq = heartwood_events::Seq::new(self.next_seq())?;
            let mut event = RecordedEvent::new(seq, None, event);
            event.origin.clone_from(&origin);
            self.staged.push(event.clone());
            recorded.push(event);
        }
        self.accept(recorded);
        Ok(())
    }

    /// Makes the staged events durable as one append (one group commit).
    pub(crate) fn flush(&mut self) -> Result<(), GatewayError> {
        self.flush_with(None)
    }

    /// [`Core::flush`], making the backend's new log bytes durable in the same append.
    pub(crate) fn flush_with(
        &mut self,
        backend: Option<heartwood_audit::BackendBytes>,
    ) -> Result<(), GatewayError> {
        if self.staged.is_empty() && backend.is_none() {
            return Ok(());
        }
        let staged = std::mem::take(&mut self.staged);
        self.writer()?.append_numbered_with(staged, backend)?;
        Ok(())
    }

    /// Leaves the projection beside the journal for session lists (`SessionGateway::rows`),
    /// bound to where the journal ends now.
    pub(crate) fn store_cache(&self) {
        if let (Some(writer), true) = (&self.writer, self.staged.is_empty())
            && let Ok(value) = serde_json::to_value(&self.projection)
        {
            writer.store_derived(value);
        }
    }

    /// The sequence number the next event will have.
    pub(crate) fn next_seq(&self) -> u64 {
        let durable = self.writer.as_ref().map_or(0, |w| w.count());
        durable + self.staged.len() as u64 + 1
    }

    /// Appends a command's events with its receipt, applies and publishes them.
    pub(crate) fn complete(
        &mut self,
        key: &CommandKey<'_>,
        events: Vec<Event>,
        result: Value,
    ) -> Result<Receipt, GatewayError> {
        self.flush()?;
        let (receipt, recorded) = self.writer()?.complete_command_recorded(
            key.id,
            key.name,
            Some(key.content),
            key.actor,
            events,
            result,
        )?;
        self.accept(recorded);
        Ok(receipt)
    }

    /// Records a refusal, so a retry of the same command is refused the same way.
    pub(crate) fn refuse(
        &mut self,
        key: &CommandKey<'_>,
        refusal: heartwood_events::Refusal,
    ) -> Result<Receipt, GatewayError> {
        self.flush()?;
        Ok(self.writer()?.refuse_command(
            key.id,
            key.name,
            Some(key.content),
            key.actor,
            refusal,
        )?)
    }

    /// Computes the review of the pending set (if any, and if not yet computed for its
    /// revision), or drops a review no set waits for.
    fn refresh_review(&mut self) {
        let Some(set) = &self.projection.pending else {
            self.review = None;
            return;
        };
        if self
            .review
            .as_ref()
            .is_some_and(|r| r.set_id == set.set_id && r.revision == set.revision)
        {
            return;
        }
        self.review = Some(crate::review::review(&self.project, self.workspace(), set));
    }

    /// The project's confined reader, opened on first use.
    fn workspace(&self) -> Option<&heartwood_workspace::Workspace> {
        self.workspace
            .get_or_init(|| heartwood_workspace::Workspace::open(&self.project).ok())
            .as_ref()
    }

    /// The review of the pending set, as last computed.
    pub(crate) fn review(&self) -> Option<&heartwood_events::Review> {
        self.review.as_ref()
    }

    fn accept(&mut self, recorded: Vec<RecordedEvent>) {
        let mut sets_changed = false;
        for event in recorded {
            sets_changed |= matches!(
                event.event,
                Event::ActionSetPending { .. } | Event::DecisionRecorded { .. }
            );
            let event = Arc::new(event);
            reducer::apply_one(&mut self.projection, &event);
            // Output belongs to a running action; once it has ended its record keeps it.
            if let Event::ActionUpdated {
                action_id, state, ..
            } = &event.event
                && self
                    .output
                    .as_ref()
                    .is_some_and(|o| o.action_id == *action_id)
                && *state != heartwood_events::ActionState::Running
            {
                self.output = None;
            }
            self.events.push(Arc::clone(&event));
            self.transient_revision = 0;
            self.streaming.clear();
            self.publish(Change::Event { event });
        }
        *self.row.lock().unwrap_or_else(PoisonError::into_inner) =
            SessionRow::of(&self.projection, None);
        if sets_changed {
            self.refresh_review();
        }
    }

    /// Publishes streamed text.
    pub(crate) fn token(&mut self, text: &str) {
        self.transient_revision += 1;
        self.streaming.push_str(text);
        keep_tail(&mut self.streaming);
        self.publish(Change::Token {
            text: text.to_owned(),
        });
    }

    /// Publishes output a running action printed.
    pub(crate) fn output(&mut self, action_id: u64, text: &str) {
        self.transient_revision += 1;
        let output = self
            .output
            .get_or_insert_with(|| heartwood_events::ToolOutput {
                action_id,
                text: String::new(),
            });
        if output.action_id != action_id {
            output.action_id = action_id;
            output.text.clear();
        }
        output.text.push_str(text);
        keep_tail(&mut output.text);
        self.publish(Change::Output {
            action_id,
            text: text.to_owned(),
        });
    }

    /// Records that the run stopped for `reason` (if a run was on) and that the agent settled.
    /// A failed write is already recorded as the writer's failure, which snapshots report.
    pub(crate) fn interrupted(&mut self, reason: String) {
        if self.projection.run_is_open() {
            let _ = self.record(vec![Event::RunInterrupted { reason }]);
        }
        self.settled();
    }

    /// Publishes that the agent stopped and the gateway has reconciled.
    pub(crate) fn settled(&mut self) {
        // Settled means recorded: a failed flush poisons the writer, which snapshots report.
        let _ = self.flush();
        self.store_cache();
        if let Some(suspended) = heartwood_events::Suspended::of(&self.projection) {
            self.publish(Change::Suspended(suspended));
        }
        let lifecycle = self.projection.lifecycle;
        self.publish(Change::ExecutionSettled { lifecycle });
    }

    /// Whether the session has sat settled, with nothing staged, for at least `grace`: its
    /// lease can go to whoever acts next without cutting anything short.
    pub(crate) fn idle_for(&self, grace: std::time::Duration) -> bool {
        self.writer.is_some()
            && self.projection.is_settled()
            && self.staged.is_empty()
            && self.output.is_none()
            && self.last_change.get().elapsed() >= grace
    }

    /// Whether the session was released (its lease let go): a command that reached it just
    /// before must serve it afresh.
    pub(crate) fn is_released(&self) -> bool {
        self.writer.is_none()
    }

    fn publish(&self, change: Change) {
        self.last_change.set(std::time::Instant::now());
        // No subscribers is fine: the events are durable and snapshots serve late readers.
        let _ = self.updates.send(Update {
            revision: self.projection.revision,
            transient_revision: self.transient_revision,
            durable: self.writer.as_ref().map_or(0, |w| w.count()),
            change,
        });
    }

    /// Events after `since` and the projection, as one consistent snapshot.
    pub(crate) fn snapshot(&self, since: u64) -> Snapshot {
        let from = usize::try_from(since)
            .unwrap_or(usize::MAX)
            .min(self.events.len());
        Snapshot {
            events: self.events[from..].to_vec(),
            projection: self.projection.clone(),
            revision: self.projection.revision,
            durable: self.writer.as_ref().map_or(0, |w| w.count()),
            transient_revision: self.transient_revision,
            streaming: self.streaming.clone(),
            output: self.output.clone(),
            review: self.review.clone(),
        }
    }
}
