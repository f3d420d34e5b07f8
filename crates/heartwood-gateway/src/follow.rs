//! Following a session without serving it: one feed of updates per session in this process,
//! relayed from wherever the session is served at the moment.
//!
//! Watching a session is not acting on it, so a subscriber does not take the session's writer
//! lease. A relay thread per followed session forwards the updates of whoever serves it: this
//! process (its live session), another process (through that process's command channel), or
//! nobody here (the relay then watches the journal's length and says when it moved: woken by
//! the shared store's announcement of each commit, another replica's included, and otherwise
//! looking now and then). Whenever the
//! source changes — a session released here, an owner that ended, a lease taken elsewhere — the
//! feed says `lagged`: a subscriber takes a snapshot and carries on, on the same receiver.
//!
//! The channel's own subscription only ever carries its process's live updates (never a relayed
//! feed), so two processes following each other cannot echo updates back and forth.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::time::Duration;

use heartwood_events::{RecordedEvent, SessionId, Update};
use tokio::sync::broadcast;

use crate::UPDATE_QUEUE;
use crate::gateway::Shared;
use crate::live::Live;

/// How often a relay looks again at a session nobody serves here, in the project's files.
const IDLE_POLL: Duration = Duration::from_millis(250);

/// The same in a shared store, which announces every commit (and, when the replica listens
/// again after losing the store, wakes every follower for what it may not have heard): a
/// look only in case something still slipped through.
const IDLE_POLL_ANNOUNCED: Duration = Duration::from_secs(30);

/// One followed session's feed in this process.
pub(crate) struct Feed {
    /// Where the relay sends the session's updates; every follower subscribes here.
    updates: broadcast::Sender<Update>,
    /// Where this process hands the relay a session it has just opened, before the session's
    /// first new event (a follower that subscribed before a task created its session sees the
    /// task's first event, not a `lagged` a poll later), or tells it the journal moved.
    wakes: mpsc::Sender<Wake>,
    /// Whether a [`Wake::JournalMoved`] is waiting for the relay: at most one is, however
    /// many commits are announced while the relay forwards a live session's updates.
    moved: Arc<AtomicBool>,
}

impl Feed {
    /// Wakes the relay to look at the journal (see [`crate::channel::Served::journal_moved`]).
    pub(crate) fn journal_moved(&self) {
        if !self.moved.swap(true, Ordering::AcqRel) {
            // A relay that has ended has nobody to tell.
            let _ = self.wakes.send(Wake::JournalMoved);
        }
    }
}

/// Why a relay wakes before its next look.
enum Wake {
    /// This process opened the session.
    Handoff(Handoff),
    /// A commit to the session's journal was announced.
    JournalMoved,
}

/// A session this process opened, handed to its relay.
struct Handoff {
    /// Its updates from the moment of the handoff.
    updates: broadcast::Receiver<Update>,
    /// The journal's length in bytes when it was opened (0 for a new session).
    opened_len: u64,
    /// Its events at the moment of the handoff, if few enough to send; a follower that saw no
    /// session before is sent these first (a new session's registration).
    events: Option<Vec<Arc<RecordedEvent>>>,
}

/// The most events of a session opened here that its relay sends before its live updates;
/// beyond them, followers are told `lagged` and take a snapshot.
const HANDOFF_EVENTS: usize = 64;

/// A receiver of `session`'s updates in this process, from now on.
pub(crate) fn subscribe(shared: &Arc<Shared>, session: &SessionId) -> broadcast::Receiver<Update> {
    let mut feeds = shared.feeds();
    if let Some(feed) = feeds.get(session) {
        return feed.updates.subscribe();
    }
    let (updates, receiver) = broadcast::channel(UPDATE_QUEUE);
    let (wakes, woken) = mpsc::channel();
    let moved = Arc::new(AtomicBool::new(false));
    let feed = updates.clone();
    feeds.insert(
        session.clone(),
        Feed {
            updates,
            wakes,
            moved: Arc::clone(&moved),
        },
    );
    drop(feeds);
    // The first source is found before returning, so updates of a session served here reach
    // a subscriber from its first moment; for one nobody serves, the journal's length now is
    // what a session opened here later is compared with.
    let first = source(shared, session);
    let seen_len = first.is_none().then(|| shared.journal_len(session));
    let poll = if shared.announces_commits() {
        IDLE_POLL_ANNOUNCED
    } else {
        IDLE_POLL
    };
    let shared = Arc::downgrade(shared);
    let session = session.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("heartwood-follow-{session}"))
        .spawn(move || {
            let relay = Relay {
                shared,
                session,
                feed,
                woken,
                moved,
                poll,
            };
            relay.run(first, seen_len);
        });
    if spawned.is_err() {
        // Without a relay the receiver closes at once; the caller's snapshots still work.
        return broadcast::channel(1).1;
    }
    receiver
}

/// Tells `session`'s relay, if anyone here follows it, that this process has just opened it
/// as `live`; call before the session is served to anyone.
pub(crate) fn hand_over(shared: &Shared, session: &SessionId, live: &Live) {
    // Cloned out, so the feeds' lock is not held while the session's is taken.
    let Some(wakes) = shared.feeds().get(session).map(|f| f.wakes.clone()) else {
        return;
    };
    let opened_len = shared.journal_len(session).unwrap_or(0);
    let (updates, events) = {
        // One cut: no event is recorded between reading the events and subscribing.
        let core = live.lock();
        let events = core.events();
        (
            live.subscribe(),
            (events.len() <= HANDOFF_EVENTS).then(|| events.to_vec()),
        )
    };
    // A relay that has ended has nobody to tell.
    let _ = wakes.send(Wake::Handoff(Handoff {
        updates,
        opened_len,
        events,
    }));
}

/// Where `session`'s updates come from now: this process's live session, or the channel of the
/// process serving it; `None` when nobody serves it.
fn source(shared: &Arc<Shared>, session: &SessionId) -> Option<broadcast::Receiver<Update>> {
    shared
        .served_updates(session)
        .or_else(|| shared.remote(session)?.subscribe().ok())
}

/// The thread that forwards one session's updates to its feed from wherever it is served.
struct Relay {
    shared: Weak<Shared>,
    session: SessionId,
    feed: broadcast::Sender<Update>,
    woken: mpsc::Receiver<Wake>,
    /// Cleared when a [`Wake::JournalMoved`] is taken, so the next announcement sends one.
    moved: Arc<AtomicBool>,
    /// How long to wait for a wake before looking anyway.
    poll: Duration,
}

impl Relay {
    /// Forwards from `next`, then from each source found after it, until nobody follows.
    /// `seen_len` is the journal's length at the last look while nobody served the session
    /// (`None`: no look yet since a source went away; `Some(None)`: there was no session then).
    fn run(self, mut next: Option<broadcast::Receiver<Update>>, mut seen_len: Option<Option<u64>>) {
        loop {
            if let Some(updates) = next.take() {
                seen_len = None;
                if !self.forward(updates) {
                    return;
                }
                // Whoever served the session stopped serving it: look at it afresh (after a
                // pause, so a source that keeps closing at once cannot spin).
                let _ = self.feed.send(Update::lagged(0));
            }
            let handed = match self.woken.recv_timeout(self.poll) {
                Ok(Wake::Handoff(handoff)) => Some(handoff),
                Ok(Wake::JournalMoved) => {
                    self.moved.store(false, Ordering::Release);
                    None
                }
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let Some(shared) = self.shared.upgrade() else {
                return;
            };
            if self.nobody_follows(&shared) {
                return;
            }
            if let Some(handoff) = handed {
                self.take_over(handoff.events, seen_len, handoff.opened_len);
                next = Some(handoff.updates);
                continue;
            }
            next = source(&shared, &self.session);
            if next.is_some() {
                // A source found now may have sent updates before it was subscribed to (a
                // session first served by another process runs its first steps at once):
                // subscribed first, then told to take a snapshot, a subscriber misses nothing.
                let _ = self.feed.send(Update::lagged(0));
            } else {
                // Nobody serves it: what changes it is a process that writes and lets go
                // between two looks (a quick `heartwood decide`), which the journal's length
                // shows, the session's first write included.
                let len = shared.journal_len(&self.session);
                if seen_len.is_some_and(|seen| seen != len) {
                    let _ = self.feed.send(Update::lagged(0));
                }
                seen_len = Some(len);
            }
        }
    }

    /// Brings followers up to a session this process opened: nothing to send if the journal is
    /// as the relay last saw it, its events if there was no session then, and otherwise
    /// `lagged`.
    fn take_over(
        &self,
        events: Option<Vec<Arc<RecordedEvent>>>,
        seen_len: Option<Option<u64>>,
        opened_len: u64,
    ) {
        match (seen_len.map(|len| len.unwrap_or(0)), events) {
            (Some(seen), _) if seen == opened_len => {}
            (Some(0), Some(events)) => {
                for event in events {
                    let _ = self.feed.send(Update::event(event));
                }
            }
            _ => {
                let _ = self.feed.send(Update::lagged(0));
            }
        }
    }

    /// Forwards `updates` until their source closes (`true`) or the feed has nobody left
    /// (`false`).
    fn forward(&self, mut updates: broadcast::Receiver<Update>) -> bool {
        loop {
            let update = match updates.blocking_recv() {
                Ok(update) => update,
                Err(broadcast::error::RecvError::Lagged(_)) => Update::lagged(0),
                Err(broadcast::error::RecvError::Closed) => return true,
            };
            if self.feed.send(update).is_err() {
                return false;
            }
        }
    }

    /// Whether the feed has no follower left, in which case it is taken out of the map.
    fn nobody_follows(&self, shared: &Shared) -> bool {
        if self.feed.receiver_count() > 0 {
            return false;
        }
        let mut feeds = shared.feeds();
        // Checked again under the map's lock: a follower may have joined meanwhile.
        if self.feed.receiver_count() > 0 {
            return false;
        }
        feeds.remove(&self.session);
        true
    }
}
