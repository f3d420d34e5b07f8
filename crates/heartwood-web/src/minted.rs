//! Session ids the API minted: in the format every interface mints (the gateway's, so an id
//! from the page reads like one from the command line), registered the moment they are handed
//! out, and the only new ids the API serves. A command or snapshot for an id that was neither minted here nor is on disk is
//! answered 404, so a caller can never create a session under an id of its choosing.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use heartwood_events::SessionId;

/// How many minted ids are remembered before their first command (the oldest unused ones are
/// forgotten first; a page that mints one per "New session" click never comes close).
pub const REMEMBERED: usize = 4096;

/// The ids minted by this server that may not be on disk yet.
#[derive(Default)]
pub struct MintedIds {
    inner: Mutex<(HashSet<SessionId>, VecDeque<SessionId>)>,
}

impl MintedIds {
    /// Mints and registers a new id.
    pub fn mint(&self) -> SessionId {
        let id = heartwood_gateway::SessionGateway::new_session_id();
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (known, order) = &mut *guard;
        if order.len() >= REMEMBERED
            && let Some(oldest) = order.pop_front()
        {
            known.remove(&oldest);
        }
        known.insert(id.clone());
        order.push_back(id.clone());
        id
    }

    /// Whether this server minted `id`.
    pub fn contains(&self, id: &SessionId) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_differ_read_like_the_command_lines_and_are_remembered() {
        let minted = MintedIds::default();
        let a = minted.mint();
        let b = minted.mint();
        assert_ne!(a, b);
        let parts: Vec<&str> = a.as_str().split('-').collect();
        assert_eq!(parts.len(), 3, "{a}");
        assert_eq!(parts[0].len(), 9, "s and the date: {a}");
        assert_eq!(parts[1].len(), 6, "the time: {a}");
        assert_eq!(parts[2].len(), 8, "32 random bits: {a}");
        assert!(minted.contains(&a) && minted.contains(&b));
        assert!(!minted.contains(&SessionId::parse("s-chosen").expect("id")));
    }

    #[test]
    fn the_oldest_unused_ids_are_forgotten_first() {
        let minted = MintedIds::default();
        let first = minted.mint();
        for _ in 0..REMEMBERED {
            minted.mint();
        }
        assert!(!minted.contains(&first));
    }
}
