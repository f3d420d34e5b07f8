//! Following a session without serving it: one feed of updates per session in this process,
//! relayed from wherever the session is served at the moment.
//!
//! Watching a session is not acting on it, so a subscriber does not take the session's writer
//! lease. A relay thread per followed session forwards the updates of whoever serves it: this
//! process (its live session), another process (through that process's command channel), or
//! nobody (the relay then watches the journal's length and says when it moved). Whenever the
//! source changes — a session released here, an owner that ended, a lease taken elsewhere — the
//! feed says `lagged`: a subscriber takes a snapshot and carries on, on the same receiver.
//!
//! The channel's own subscription only ever carries its process's live updates (never a relayed
//! feed), so two processes following each other cannot echo updates back and forth.

use std::sync::{Arc, Weak};
use std::time::Duration;

use heartwood_events::{Change, SessionId, Update};
use tokio::sync::broadcast;

use crate::gateway::Shared;
use crate::live::UPDATE_QUEUE;

/// How often a relay looks again at a session nobody serves.
const IDLE_POLL: Duration = Duration::from_millis(250);

/// A receiver of `session`'s updates in this process, from now on.
pub(crate) fn subscribe(shared: &Arc<Shared>, session: &SessionId) -> broadcast::Receiver<Update> {
    let mut feeds = shared.feeds();
    if let Some(feed) = feeds.get(session) {
        return feed.subscribe();
    }
    let (feed, receiver) = broadcast::channel(UPDATE_QUEUE);
    feeds.insert(session.clone(), feed.clone());
    drop(feeds);
    // The first source is found before returning, so updates of a session served here reach
    // a subscriber from its first moment.
    let first = source(shared, session);
    let shared = Arc::downgrade(shared);
    let session = session.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("heartwood-follow-{session}"))
        .spawn(move || relay(&shared, &session, &feed, first));
    if spawned.is_err() {
        // Without a relay the receiver closes at once; the caller's snapshots still work.
        return broadcast::channel(1).1;
    }
    receiver
}

/// Where `session`'s updates come from now: this process's live session, or the channel of the
/// process serving it; `None` when nobody serves it.
fn source(shared: &Arc<Shared>, session: &SessionId) -> Option<broadcast::Receiver<Update>> {
    shared
        .served_updates(session)
        .or_else(|| shared.remote(session)?.subscribe().ok())
}

fn relay(
    shared: &Weak<Shared>,
    session: &SessionId,
    feed: &broadcast::Sender<Update>,
    mut next: Option<broadcast::Receiver<Update>>,
) {
    // The journal's length at the last look while nobody served the session (`None`: no look
    // yet since a source went away; `Some(None)`: there was no session then).
    let mut seen_len: Option<Option<u64>> = None;
    loop {
        if let Some(mut updates) = next.take() {
            seen_len = None;
            loop {
                let update = match updates.blocking_recv() {
                    Ok(update) => update,
                    Err(broadcast::error::RecvError::Lagged(_)) => lagged(),
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                if feed.send(update).is_err() {
                    break;
                }
            }
            // Whoever served the session stopped serving it: look at it afresh (after a pause,
            // so a source that keeps closing at once cannot spin).
            let _ = feed.send(lagged());
            std::thread::sleep(IDLE_POLL);
        } else {
            std::thread::sleep(IDLE_POLL);
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if feed.receiver_count() == 0 {
            let mut feeds = shared.feeds();
            // Checked again under the map's lock: a subscriber may have joined meanwhile.
            if feed.receiver_count() == 0 {
                feeds.remove(session);
                return;
            }
        }
        next = source(&shared, session);
        if next.is_some() {
            // A source found now may have sent updates before it was subscribed to (a session
            // first served here between two looks runs its first steps at once): subscribed
            // first, then told to take a snapshot, a subscriber misses nothing.
            let _ = feed.send(lagged());
        } else {
            // Nobody serves it: what changes it is a process that writes and lets go between
            // two looks (a quick `heartwood decide`), which the journal's length shows, the
            // session's first write included.
            let len = shared.journal_len(session);
            if seen_len.is_some_and(|seen| seen != len) {
                let _ = feed.send(lagged());
            }
            seen_len = Some(len);
        }
    }
}

/// "Take a snapshot": what a subscriber is told when it may have missed something.
fn lagged() -> Update {
    Update {
        revision: 0,
        transient_revision: 0,
        change: Change::Lagged {},
    }
}
