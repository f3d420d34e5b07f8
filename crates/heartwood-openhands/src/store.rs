//! The agent server's conversation store, read directly from disk: the conversation's log is
//! its `events/event-NNNNN-<uuid>.json` files, one per event, written atomically by the server.
//!
//! Reading the store needs no running server, so a session's record can be reconciled with
//! the engine's log (and a waiting set shown again) without starting Python. Entries are
//! numbered from 1 in the server's own order (`NNNNN` + 1), and each keeps the SHA-256 of its
//! stored bytes: the identity the journal names as an event's origin.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::OpenHandsError;
use crate::events::Event;

/// One stored event.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Its place in the log, from 1.
    pub index: u64,
    /// The SHA-256 of its file, in hex.
    pub sha256: String,
    /// The server's id for it.
    pub id: String,
    /// What it says.
    pub event: Event,
}

/// The conversations directory the server was given (`OH_CONVERSATIONS_PATH`), holding at most
/// one conversation: Heartwood starts one per session.
#[derive(Debug, Clone)]
pub struct ConversationStore {
    root: PathBuf,
}

impl ConversationStore {
    /// The store under `root` (which need not exist yet).
    pub fn new(root: &Path) -> ConversationStore {
        ConversationStore {
            root: root.to_path_buf(),
        }
    }

    /// Where the store is.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The conversation's id (its directory's name), if one was started. More than one is
    /// refused: something other than Heartwood wrote here.
    pub fn conversation(&self) -> Result<Option<String>, OpenHandsError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read_error(&self.root, &e)),
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| read_error(&self.root, &e))?;
            if entry.path().join("meta.json").is_file() {
                found.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.pop()),
            n => Err(OpenHandsError::Store(format!(
                "{} holds {n} conversations where Heartwood keeps one per session",
                self.root.display()
            ))),
        }
    }

    /// The events directory of conversation `id`.
    pub fn events_dir(&self, id: &str) -> PathBuf {
        self.root.join(id).join("events")
    }

    /// The stored events of conversation `id` from index `from` (1-based) on, in order. A gap
    /// in the numbering is refused: the log was truncated or edited.
    pub fn read_from(&self, id: &str, from: u64) -> Result<Vec<StoredEvent>, OpenHandsError> {
        let dir = self.events_dir(id);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(read_error(&dir, &e)),
        };
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| read_error(&dir, &e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some((index, event_id)) = parse_name(&name)
                && index >= from
            {
                files.push((index, event_id, entry.path()));
            }
        }
        files.sort_by_key(|(index, ..)| *index);
        let mut events = Vec::with_capacity(files.len());
        for (n, (index, id, path)) in files.into_iter().enumerate() {
            if index != from + n as u64 {
                return Err(OpenHandsError::Store(format!(
                    "{} has no event {} (the log was truncated or edited)",
                    dir.display(),
                    from + n as u64
                )));
            }
            let bytes = std::fs::read(&path).map_err(|e| read_error(&path, &e))?;
            let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
                OpenHandsError::Store(format!("{} is not an event: {e}", path.display()))
            })?;
            events.push(StoredEvent {
                index,
                sha256: hex(&Sha256::digest(&bytes)),
                id,
                event: Event::from_value(value),
            });
        }
        Ok(events)
    }
}

/// `event-NNNNN-<uuid>.json` → (NNNNN + 1, uuid).
fn parse_name(name: &str) -> Option<(u64, String)> {
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    let (index, id) = rest.split_once('-')?;
    if index.len() < 5 || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((index.parse::<u64>().ok()?.checked_add(1)?, id.to_owned()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_error(path: &Path, e: &std::io::Error) -> OpenHandsError {
    OpenHandsError::Store(format!("cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, index: u64, body: &str) {
        std::fs::create_dir_all(dir).expect("test fixture");
        std::fs::write(
            dir.join(format!(
                "event-{index:05}-0a1b2c3d-0000-0000-0000-00000000000{index}.json"
            )),
            body,
        )
        .expect("test fixture");
    }

    #[test]
    fn events_are_read_in_order_from_an_index_with_their_digests() {
        let root = tempfile::tempdir().expect("test fixture");
        let store = ConversationStore::new(root.path());
        assert_eq!(store.conversation().expect("test fixture"), None);
        let conversation = root.path().join("c0ffee");
        std::fs::create_dir_all(&conversation).expect("test fixture");
        std::fs::write(conversation.join("meta.json"), "{}").expect("test fixture");
        let events = store.events_dir("c0ffee");
        for index in [1, 0, 2] {
            write(
                &events,
                index,
                &format!(r#"{{"kind":"X{index}","id":"e{index}"}}"#),
            );
        }
        std::fs::write(events.join(".eventlog.lock"), "").expect("test fixture");
        assert_eq!(
            store.conversation().expect("test fixture").as_deref(),
            Some("c0ffee")
        );
        let read = store.read_from("c0ffee", 2).expect("test fixture");
        assert_eq!(read.iter().map(|e| e.index).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(
            read[0].event,
            Event::Other {
                id: "e1".into(),
                kind: "X1".into()
            }
        );
        assert_eq!(
            read[0].sha256,
            hex(&Sha256::digest(br#"{"kind":"X1","id":"e1"}"#))
        );
        std::fs::remove_file(events.join("event-00001-0a1b2c3d-0000-0000-0000-000000000001.json"))
            .expect("test fixture");
        assert!(store.read_from("c0ffee", 1).is_err(), "a gap is refused");
    }
}
