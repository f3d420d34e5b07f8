//! Session ids the API minted: unguessable (128 random bits after a time prefix, so they still
//! sort by creation), registered the moment they are handed out, and the only new ids the API
//! serves. A command or snapshot for an id that was neither minted here nor is on disk is
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
    pub fn mint(&self) -> Result<SessionId, getrandom::Error> {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random)?;
        let time = heartwood_events::Timestamp::now().digits();
        let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let id = SessionId::parse(&format!("s{time}-{hex}"))
            .expect("digits, hex and '-' form a valid id");
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (known, order) = &mut *guard;
        if order.len() >= REMEMBERED
            && let Some(oldest) = order.pop_front()
        {
            known.remove(&oldest);
        }
        known.insert(id.clone());
        order.push_back(id.clone());
        Ok(id)
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
    fn minted_ids_differ_carry_128_random_bits_and_are_remembered() {
        let minted = MintedIds::default();
        let a = minted.mint().expect("mint");
        let b = minted.mint().expect("mint");
        assert_ne!(a, b);
        let random = a.as_str().rsplit('-').next().expect("random part");
        assert_eq!(random.len(), 32, "{a}");
        assert!(minted.contains(&a) && minted.contains(&b));
        assert!(!minted.contains(&SessionId::parse("s-chosen").expect("id")));
    }

    #[test]
    fn the_oldest_unused_ids_are_forgotten_first() {
        let minted = MintedIds::default();
        let first = minted.mint().expect("mint");
        for _ in 0..REMEMBERED {
            minted.mint().expect("mint");
        }
        assert!(!minted.contains(&first));
    }
}
