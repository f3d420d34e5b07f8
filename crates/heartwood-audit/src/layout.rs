//! Where a session's files live. Building these paths creates nothing.

use std::path::{Path, PathBuf};

use heartwood_events::SessionId;

/// The directory under the project root that holds Heartwood's private state.
pub const STATE_DIR: &str = ".heartwood";
/// The directory under [`STATE_DIR`] that holds one directory per session.
pub const SESSIONS_DIR: &str = "sessions";
pub(crate) const EVENTS_FILE: &str = "events.jsonl";
pub(crate) const AUDIT_FILE: &str = "audit.jsonl";
pub(crate) const META_FILE: &str = "meta.json";
/// The command receipts' file name, as damage reports name it.
pub const RECEIPTS_FILE: &str = "receipts.jsonl";
/// The directory, inside a session directory, that holds export bundles.
pub const EXPORTS_DIR: &str = "exports";

/// The files of one session directory, `.heartwood/sessions/<id>/`.
#[derive(Debug, Clone)]
pub struct SessionPaths {
    /// The session directory.
    pub dir: PathBuf,
    /// `meta.json`: id, creation time, backend, workflow.
    pub meta: PathBuf,
    /// `events.jsonl`: one durable event per line.
    pub events: PathBuf,
    /// `audit.jsonl`: one hash-chained audit record per event.
    pub audit: PathBuf,
    /// `journal.json`: the write-ahead intents of the appends whose data files are not synced yet.
    pub journal: PathBuf,
    /// `receipts.jsonl`: command outcomes, for idempotent retries.
    pub receipts: PathBuf,
    /// `writer.lock`: the file the writer lease locks.
    pub lock: PathBuf,
    /// `writer.json`: who holds the lease.
    pub writer: PathBuf,
    /// `exports/`: export bundles.
    pub exports: PathBuf,
    /// `backend/`: the agent engine's own persistence, private to the engine.
    pub backend: PathBuf,
    /// `channel.sock`: the command channel the lease holder serves (see heartwood-gateway).
    pub channel: PathBuf,
}

impl SessionPaths {
    /// The paths of session `id` under `sessions_root` (`<project>/.heartwood/sessions`).
    pub fn new(sessions_root: &Path, id: &SessionId) -> Self {
        Self::in_dir(sessions_root.join(id.as_str()))
    }

    /// The paths of a session's files kept in `dir` (a session's folder, or a copy of one).
    pub(crate) fn in_dir(dir: PathBuf) -> Self {
        SessionPaths {
            meta: dir.join(META_FILE),
            events: dir.join(EVENTS_FILE),
            audit: dir.join(AUDIT_FILE),
            journal: dir.join("journal.json"),
            receipts: dir.join(RECEIPTS_FILE),
            lock: dir.join("writer.lock"),
            writer: dir.join("writer.json"),
            exports: dir.join(EXPORTS_DIR),
            backend: dir.join("backend"),
            channel: dir.join("channel.sock"),
            dir,
        }
    }
}
