//! A session's bytes as one value: what moves between the file store and the shared store
//! (`heartwood sessions copy`), and what a replica materializes into a working copy.

use std::path::Path;

use crate::error::IoContext;
use crate::layout::{AUDIT_FILE, EVENTS_FILE, META_FILE, RECEIPTS_FILE};
use crate::{AuditError, SessionPaths, durable};

/// Every byte a session's record is made of, exactly as the file store holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionImage {
    /// `meta.json`.
    pub meta: Vec<u8>,
    /// `events.jsonl`: whole lines.
    pub events: Vec<u8>,
    /// `audit.jsonl`: whole lines.
    pub audit: Vec<u8>,
    /// `receipts.jsonl`: whole lines.
    pub receipts: Vec<u8>,
    /// The engine's logs in `backend/` (plain file names), in name order.
    pub backend: Vec<(String, Vec<u8>)>,
}

/// The bounded size of one engine log read into an image.
const MAX_BACKEND_LOG: u64 = 256 * 1024 * 1024;

impl SessionImage {
    /// Reads the session whose files are at `paths`. The caller verifies it first: this only
    /// reads.
    pub fn read_files(paths: &SessionPaths) -> Result<Self, AuditError> {
        let read = |path: &Path| match std::fs::read(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            other => other.ctx("read", path),
        };
        let mut backend = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&paths.backend) {
            for entry in entries {
                let entry = entry.ctx("list", &paths.backend)?;
                let meta = entry.metadata().ctx("read", &entry.path())?;
                // Only the engine's flat logs travel; they are what the journal's intents name.
                if !meta.is_file() || meta.len() > MAX_BACKEND_LOG {
                    continue;
                }
                if let Some(name) = entry.file_name().to_str() {
                    backend.push((name.to_owned(), read(&entry.path())?));
                }
            }
        }
        backend.sort();
        Ok(SessionImage {
            meta: read(&paths.meta)?,
            events: read(&paths.events)?,
            audit: read(&paths.audit)?,
            receipts: read(&paths.receipts)?,
            backend,
        })
    }

    /// Writes the image into `dir` (created private, or emptied of the journal's files first),
    /// as the file store lays a session out.
    pub fn write_files(&self, dir: &Path) -> Result<(), AuditError> {
        durable::create_private_dir_all(dir)?;
        for (name, bytes) in [
            (META_FILE, &self.meta),
            (EVENTS_FILE, &self.events),
            (AUDIT_FILE, &self.audit),
        ] {
            durable::write_atomic(&dir.join(name), bytes)?;
        }
        // A new session has no receipts file until its writer opens; an image keeps that so.
        if !self.receipts.is_empty() {
            durable::write_atomic(&dir.join(RECEIPTS_FILE), &self.receipts)?;
        }
        if !self.backend.is_empty() {
            let backend = dir.join("backend");
            durable::create_private_dir(&backend)?;
            for (name, bytes) in &self.backend {
                durable::write_atomic(&backend.join(name), bytes)?;
            }
        }
        Ok(())
    }

    /// The event and audit lines, paired by position (without their newlines).
    pub(crate) fn journal_lines(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        lines(&self.events).zip(lines(&self.audit))
    }
}

/// The newline-terminated lines of `bytes`, without their newlines.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\n").unwrap_or(l))
}
