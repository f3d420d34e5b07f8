//! Following a session from a revision: the one way an interface shows a session as it changes
//! (the page's event stream and WebSocket, the terminal interface, `exec`, the notebook).
//!
//! [`SessionGateway::follow`] sends the events after the revision the caller already has (the
//! backlog), then every update as it happens. When the live feed may have missed something
//! (the caller fell behind, the session's server changed, an event arrived out of turn) the
//! follower reads the session again, sends the events missed, and says `lagged` so a caller
//! that shows streamed text or output re-reads them. Events come in sequence order, each
//! exactly once, by construction: one cursor (the last event taken) decides what is taken,
//! whichever way an event arrives (backlog, live, or a look after a lag).

use std::collections::VecDeque;
use std::sync::Weak;

use heartwood_events::{Change, Suspended};

use super::*;

/// One caller's view of a session as it changes; see the module doc.
pub struct SessionFollow {
    /// Weak, so a forgotten follower does not keep a closed gateway's sessions alive.
    shared: Weak<Shared>,
    session: SessionId,
    updates: SessionUpdates,
    /// The last event taken (held or ready): the next one taken is the one after it.
    taken: u64,
    /// The last event handed on (or ready to be): what a look after a lag reads from.
    sent: u64,
    /// The last event known to be in the journal.
    durable: u64,
    /// Whether events wait until the journal holds them (see [`SessionGateway::follow_durable`]).
    durable_only: bool,
    /// Events taken but not yet durable, in order (only when `durable_only`).
    held: VecDeque<Update>,
    /// Updates ready to hand on, in order.
    ready: VecDeque<Update>,
    /// Whether the session must be read before more live updates are trusted (a lag or a
    /// gap seen where no look could be taken).
    must_look: bool,
    /// Whether the session may have settled since it was last looked at.
    look_due: bool,
    /// The last look that found the session settled.
    settled: Option<Snapshot>,
}

impl SessionGateway {
    /// Follows `session` from revision `since` (0: from its first event; `u64::MAX`: from
    /// now): the events after it, then `suspended` if the run waits for a decision, then every
    /// update as it happens. Watching is not acting: the session's writer lease is not taken.
    /// Events are sent once each, in order, as soon as they are applied (maybe still staged);
    /// see [`Self::follow_durable`] for only what the journal holds.
    pub async fn follow(
        &self,
        session: &SessionId,
        since: u64,
    ) -> Result<SessionFollow, GatewayError> {
        self.follow_with(session, since, false).await
    }

    /// [`Self::follow`], each event sent only once the journal holds it: a line an interface
    /// prints is then never one a crash could take back.
    pub async fn follow_durable(
        &self,
        session: &SessionId,
        since: u64,
    ) -> Result<SessionFollow, GatewayError> {
        self.follow_with(session, since, true).await
    }

    async fn follow_with(
        &self,
        session: &SessionId,
        since: u64,
        durable_only: bool,
    ) -> Result<SessionFollow, GatewayError> {
        // Followed before the first look, so an update between the two is not missed (and,
        // if it repeats an event the look returned, is not sent twice). Both may read files
        // or connect to the session's server: on the blocking pool.
        let gateway = SessionGateway::from_shared(Arc::clone(&self.shared));
        let id = session.clone();
        let opened = tokio::task::spawn_blocking(move || {
            let updates = gateway.updates(&id)?;
            let first = gateway.snapshot(&id, since)?;
            Ok::<_, GatewayError>((updates, first))
        })
        .await;
        let (updates, first) = match opened {
            Ok(opened) => opened?,
            // A panic while reading is a defect: it is this caller's panic, not an answer.
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_) => return Err(GatewayError::Closed(session.clone())),
            },
        };
        let from = since.min(first.revision);
        let mut follow = SessionFollow {
            shared: Arc::downgrade(&self.shared),
            session: session.clone(),
            updates,
            taken: from,
            sent: from,
            durable: 0,
            durable_only,
            held: VecDeque::new(),
            ready: VecDeque::new(),
            must_look: false,
            look_due: false,
            settled: None,
        };
        follow.catch_up(&first);
        // A caller that starts following while the run waits is told so at once, as one that
        // was following when it stopped was.
        if let Some(suspended) = Suspended::of(&first.projection) {
            follow.ready.push_back(Update {
                revision: first.revision,
                transient_revision: first.transient_revision,
                durable: first.durable,
                change: Change::Suspended(suspended),
            });
        }
        if first.is_settled() && follow.sent >= first.revision {
            follow.settled = Some(first);
        } else {
            follow.look_due = true;
        }
        Ok(follow)
    }
}

impl SessionFollow {
    /// The session followed.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The last event handed on (or about to be): a caller that reconnects later follows
    /// again from here.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The next update; `None` once the gateway is gone. An event update is the event after
    /// the last one sent. `lagged` means streamed text or output may have been missed (the
    /// events were not: they were sent before it).
    pub async fn next(&mut self) -> Option<Update> {
        loop {
            // Owed until a look succeeds: a caller that drops this future mid-look (a
            // `select!`) is owed it still at its next call.
            if self.must_look {
                match self.look().await {
                    Ok(_) => self.must_look = false,
                    Err(GatewayError::Closed(_)) => return None,
                    // Looked at again at the next lag or gap; `lagged` is said already.
                    Err(_) => self.must_look = false,
                }
            }
            if let Some(update) = self.ready.pop_front() {
                return Some(update);
            }
            let update = self.updates.next().await?;
            self.take(update);
        }
    }

    /// The next update already here, without waiting (a caller that draws one frame for every
    /// update queued); `None` when there is none now. A lag found here is recovered by the
    /// next [`Self::next`], and said as `lagged` at once (before the events it recovers).
    pub fn try_next(&mut self) -> Option<Update> {
        loop {
            if let Some(update) = self.ready.pop_front() {
                return Some(update);
            }
            if self.must_look {
                return None;
            }
            let update = self.updates.try_next()?;
            self.take(update);
        }
    }

    /// Where the run stopped, once it has (finished, failed, paused, stopped, or waiting for a
    /// decision: [`Snapshot::is_settled`]) and every event up to there has been handed on;
    /// `None` while it goes on. The session is read again only when an update said it may have
    /// settled (or [`Self::look_again`] asked), on the blocking pool.
    pub async fn settled(&mut self) -> Result<Option<Snapshot>, GatewayError> {
        if self.look_due {
            let snapshot = self.look().await?;
            // Cleared once looked: a caller that drops this future mid-look looks again.
            self.look_due = false;
            self.settled = snapshot.is_settled().then_some(snapshot);
        }
        Ok(self
            .settled
            .as_ref()
            .filter(|s| self.sent >= s.revision && self.ready.is_empty())
            .cloned())
    }

    /// Asks the next [`Self::settled`] to read the session again (a caller that has heard
    /// nothing for a while: a session served elsewhere that went quiet is still seen).
    pub fn look_again(&mut self) {
        self.look_due = true;
    }

    /// Reads the session now (on the blocking pool), takes the events it shows that were not
    /// taken yet, and answers it.
    pub async fn look(&mut self) -> Result<Snapshot, GatewayError> {
        let Some(shared) = self.shared.upgrade() else {
            return Err(GatewayError::Closed(self.session.clone()));
        };
        let snapshot = SessionGateway::from_shared(shared)
            .snapshot_off_pool(&self.session, self.taken)
            .await?;
        self.catch_up(&snapshot);
        Ok(snapshot)
    }

    /// Takes one live update: an event in turn is taken (and sent once durable enough), one
    /// already taken is dropped, one out of turn or a lag means a look first.
    fn take(&mut self, update: Update) {
        self.durable = self.durable.max(update.durable);
        match &update.change {
            Change::Event { .. } => {
                if !self.accept(update) {
                    self.lagged();
                }
            }
            Change::Lagged {} => self.lagged(),
            change => {
                if matches!(
                    change,
                    Change::ExecutionSettled { .. } | Change::Suspended(_)
                ) {
                    self.look_due = true;
                }
                // Events durable by now go first: this update came after them.
                self.release();
                self.ready.push_back(update);
            }
        }
        self.release();
    }

    /// After a lag: `lagged` is said, and events not yet sent are taken again by the look the
    /// next [`Self::next`] owes (held ones included: a crash may have replaced what was
    /// staged).
    fn lagged(&mut self) {
        if self.must_look {
            return;
        }
        self.must_look = true;
        self.look_due = true;
        self.held.clear();
        self.taken = self.sent;
        let mut lagged = Update::lagged(self.sent);
        lagged.durable = self.durable;
        self.ready.push_back(lagged);
    }

    /// Takes the events of `snapshot` not taken yet, in order.
    fn catch_up(&mut self, snapshot: &Snapshot) {
        self.durable = self.durable.max(snapshot.durable);
        for event in &snapshot.events {
            let mut update = Update::event(Arc::clone(event));
            update.durable = snapshot.durable;
            // A snapshot is one cut, without gaps: a refusal here means it began past `taken`,
            // which the next lag or gap looks at again.
            if !self.accept(update) {
                break;
            }
        }
        self.release();
    }

    /// Takes an event update if it is the one after the last taken; `true` when it was taken
    /// or had been already, `false` when it is out of turn.
    fn accept(&mut self, update: Update) -> bool {
        let Change::Event { event } = &update.change else {
            return true;
        };
        let seq = event.seq.get();
        if seq <= self.taken {
            return true;
        }
        if seq != self.taken + 1 {
            return false;
        }
        self.taken = seq;
        // The run went on after the look that found it settled.
        if self.settled.as_ref().is_some_and(|s| seq > s.revision) {
            self.settled = None;
        }
        self.held.push_back(update);
        true
    }

    /// Moves the held events the journal holds (all of them, unless durable only) to ready.
    fn release(&mut self) {
        while let Some(front) = self.held.front() {
            let seq = event_seq(front);
            if self.durable_only && seq > self.durable {
                return;
            }
            if let Some(mut update) = self.held.pop_front() {
                self.sent = seq;
                // Says what is known now: an event held until durable says it is.
                update.durable = update.durable.max(self.durable);
                self.ready.push_back(update);
            }
        }
    }
}

/// The sequence number of an event update (0 for any other).
fn event_seq(update: &Update) -> u64 {
    match &update.change {
        Change::Event { event } => event.seq.get(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `follow` until event `last` has been handed on, and whether it said
    /// `lagged` on the way.
    async fn events_until(follow: &mut SessionFollow, last: u64) -> (Vec<Update>, bool) {
        let (mut events, mut lagged) = (Vec::new(), false);
        while events.last().map_or(0, event_seq) < last {
            let update = follow.next().await.expect("the gateway is open");
            match &update.change {
                Change::Event { .. } => events.push(update),
                Change::Lagged {} => lagged = true,
                _ => {}
            }
        }
        (events, lagged)
    }

    fn seqs(events: &[Update]) -> Vec<u64> {
        events.iter().map(event_seq).collect()
    }

    /// A follower that reads nothing while many more events are recorded than its feed holds
    /// falls behind; it still gets every event after its revision, once each, in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_follower_that_falls_behind_gets_every_event_once_in_order() {
        let folder = tempfile::tempdir().expect("project");
        let gateway =
            SessionGateway::new(ProjectContext::at(folder.path()).expect("a UTF-8 project path"));
        let id = SessionId::parse("lagging").expect("id");
        let live = gateway.attach(&id, true).expect("served");
        live.lock()
            .record(vec![Event::PauseRequested {}; 10])
            .expect("recorded");
        let mut follow = gateway.follow(&id, 3).await.expect("followed");
        let feed = crate::UPDATE_QUEUE;
        for _ in 0..3 {
            live.lock()
                .record(vec![Event::PauseRequested {}; feed])
                .expect("recorded");
        }
        let last = live.lock().projection().revision;
        let (events, lagged) = events_until(&mut follow, last).await;
        assert!(lagged, "the follower was meant to fall behind");
        assert_eq!(seqs(&events), (4..=last).collect::<Vec<_>>());
        // Nothing more is waiting: no event came twice.
        assert!(follow.try_next().is_none_or(|u| event_seq(&u) == 0));
        gateway.close().await;
    }

    /// Following only what the journal holds: staged events are handed on once a write makes
    /// them durable, each saying so, in order and once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_durable_follower_hands_on_staged_events_once_they_are_recorded() {
        let folder = tempfile::tempdir().expect("project");
        let gateway =
            SessionGateway::new(ProjectContext::at(folder.path()).expect("a UTF-8 project path"));
        let id = SessionId::parse("staging").expect("id");
        let live = gateway.attach(&id, true).expect("served");
        live.lock()
            .record(vec![Event::PauseRequested {}])
            .expect("recorded");
        let mut follow = gateway.follow_durable(&id, 0).await.expect("followed");
        live.lock()
            .stage(vec![Event::PauseRequested {}; 5], None)
            .expect("staged");
        // Recording flushes what is staged first, then appends.
        live.lock()
            .record(vec![Event::PauseRequested {}])
            .expect("recorded");
        let last = live.lock().projection().revision;
        let (events, _) = events_until(&mut follow, last).await;
        assert_eq!(seqs(&events), (1..=last).collect::<Vec<_>>());
        for update in &events {
            assert!(update.durable >= event_seq(update), "{update:?}");
        }
        gateway.close().await;
    }

    /// A run that settles is seen as settled once its last event is handed on, and not before
    /// the follower's look says so.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_follower_says_where_a_settled_session_stands() {
        let folder = tempfile::tempdir().expect("project");
        let gateway =
            SessionGateway::new(ProjectContext::at(folder.path()).expect("a UTF-8 project path"));
        let id = SessionId::parse("resting").expect("id");
        let live = gateway.attach(&id, true).expect("served");
        live.lock()
            .record(vec![Event::PauseRequested {}; 2])
            .expect("recorded");
        let last = live.lock().projection().revision;
        let mut follow = gateway.follow(&id, 0).await.expect("followed");
        // Idle and everything recorded: settled once every event is handed on.
        assert!(follow.settled().await.expect("looked").is_none());
        let (events, _) = events_until(&mut follow, last).await;
        assert_eq!(seqs(&events), (1..=last).collect::<Vec<_>>());
        let settled = follow.settled().await.expect("looked").expect("settled");
        assert_eq!(settled.revision, last);
        gateway.close().await;
    }
}
