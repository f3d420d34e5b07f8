//! Real recorded sessions for tests of the interfaces, which reach sessions only through the
//! gateway and so cannot create them directly.

use std::path::Path;

use heartwood_audit::SessionStore;
use heartwood_events::{Event, Role, SessionId};

/// A new temporary project holding sessions `ids`, each registered and then given `messages`
/// researcher messages (`note 0`, `note 1`, ...).
pub fn project_with_sessions(ids: &[&str], messages: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temporary directory: {e}"));
    let store = SessionStore::new(dir.path());
    for id in ids {
        let id = SessionId::parse(id).unwrap_or_else(|e| panic!("{e}"));
        let (mut writer, _) = store
            .create_or_open_writer(&id, "native")
            .unwrap_or_else(|e| panic!("{e}"));
        let events: Vec<Event> = (0..messages)
            .map(|i| Event::Message {
                role: Role::Researcher,
                text: format!("note {i}"),
            })
            .collect();
        if !events.is_empty() {
            writer
                .append(None, events)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        writer.close();
    }
    dir
}

/// Leaves session `id` in `project` as a crash right after the recovery intent was written
/// would: an append described but not yet made.
pub fn interrupt_an_append(project: &Path, id: &str) {
    let store = SessionStore::new(project);
    let id = SessionId::parse(id).unwrap_or_else(|e| panic!("{e}"));
    let (writer, _) = store
        .create_or_open_writer(&id, "native")
        .unwrap_or_else(|e| panic!("{e}"));
    writer
        .crash_after_intent(vec![Event::SessionClosed {}])
        .unwrap_or_else(|e| panic!("{e}"));
}
