//! The recovery intent: `journal.json` describes an append before any of its bytes reach the
//! event, audit or receipt files, so a crash at any point can be completed exactly once.
//!
//! The file is created once per session and then only overwritten in place: it holds only
//! whitespace when no append is in flight. Keeping it (instead of creating and deleting it per
//! append) saves a directory fsync per append, and overwriting without changing its length
//! (the intent is padded with spaces to the file's size) lets `fdatasync` skip the metadata
//! commit, so the intent costs about one data-block write.
//!
//! Order per append: write the intent and `fdatasync` it; append to the data files; `fdatasync`
//! each; blank the intent with spaces. A crash mid-way through writing the intent leaves text
//! that does not parse as an intent, and no data byte has been written yet at that point. The intent records each file's length before the
//! append and the exact bytes to add, so completion is: check that whatever follows the old
//! length is a prefix of those bytes (anything else is damage and is refused), then write the
//! rest.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::{AuditError, durable};

/// One append in flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Intent {
    pub first_seq: u64,
    pub last_seq: u64,
    pub events_len: u64,
    pub audit_len: u64,
    pub receipts_len: u64,
    /// Exact bytes to append to `events.jsonl` (whole lines).
    pub events: String,
    /// Exact bytes to append to `audit.jsonl` (whole lines).
    pub audit: String,
    /// Exact bytes to append to `receipts.jsonl` (empty when the append carries no receipt).
    #[serde(default)]
    pub receipts: String,
}

/// What a read of `journal.json` found.
#[derive(Debug)]
pub(crate) enum Pending {
    /// No append in flight.
    None,
    /// An append was in flight.
    Intent(Intent),
    /// The intent itself was cut short: a crash while writing it, before any data was appended.
    Unreadable,
}

/// Reads `journal.json` without creating or changing it.
pub(crate) fn read_pending(path: &Path) -> Result<Pending, AuditError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pending::None),
        Err(e) => return Err(e).ctx("read", path),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Pending::None);
    }
    Ok(match serde_json::from_slice(&bytes) {
        Ok(intent) => Pending::Intent(intent),
        Err(_) => Pending::Unreadable,
    })
}

/// The writer's handle on `journal.json`.
pub(crate) struct IntentFile {
    file: File,
    path: PathBuf,
    /// How many leading bytes may hold non-space text.
    dirty: usize,
}

impl IntentFile {
    /// Opens (creating if needed) the intent file. The caller syncs the directory if it created
    /// the file.
    pub fn open(path: &Path) -> Result<(Self, bool), AuditError> {
        let existed = path.exists();
        let file = durable::open_read_write(path)?;
        let len = file.metadata().ctx("inspect", path)?.len() as usize;
        Ok((
            IntentFile {
                file,
                path: path.to_owned(),
                dirty: len,
            },
            !existed,
        ))
    }

    /// Makes `intent` durable before any data byte is written.
    pub fn record(&mut self, intent: &Intent) -> Result<(), AuditError> {
        let mut bytes = serde_json::to_vec(intent).map_err(|e| AuditError::BadFile {
            path: self.path.clone(),
            detail: e.to_string(),
        })?;
        let text_len = bytes.len();
        if text_len < self.dirty {
            bytes.resize(self.dirty, b' ');
        }
        crate::durable::write_at(&self.file, &bytes, 0).ctx("write", &self.path)?;
        self.dirty = text_len;
        crate::durable::sync_data(&self.file).ctx("sync", &self.path)
    }

    /// Marks the append complete. Not synced: if this is lost in a crash, the next open finds
    /// every byte already in place and only clears the intent again.
    pub fn clear(&mut self) -> Result<(), AuditError> {
        if self.dirty > 0 {
            crate::durable::write_at(&self.file, &vec![b' '; self.dirty], 0)
                .ctx("clear", &self.path)?;
            self.dirty = 0;
        }
        Ok(())
    }

    /// Clears the intent durably (used after recovery, before new appends build on it).
    pub fn clear_durably(&mut self) -> Result<(), AuditError> {
        self.clear()?;
        crate::durable::sync_data(&self.file).ctx("sync", &self.path)
    }
}

/// Brings `path` to exactly `len_before` bytes followed by `expected`, if what follows
/// `len_before` now is a prefix of `expected`. Returns a description of the mismatch otherwise,
/// leaving the file untouched so the evidence is kept.
pub(crate) fn complete_file(
    path: &Path,
    len_before: u64,
    expected: &[u8],
) -> Result<Result<(), String>, AuditError> {
    if expected.is_empty() {
        return Ok(Ok(()));
    }
    let file = durable::open_read_write(path)?;
    let len = file.metadata().ctx("inspect", path)?.len();
    if len < len_before {
        return Ok(Err(format!(
            "is {len} bytes, shorter than the {len_before} it had before the append"
        )));
    }
    let tail_len = len - len_before;
    if tail_len > expected.len() as u64 {
        return Ok(Err(
            "holds more bytes than the interrupted append would have written".into(),
        ));
    }
    let mut tail = vec![0u8; tail_len as usize];
    file.read_exact_at(&mut tail, len_before)
        .ctx("read", path)?;
    if !expected.starts_with(&tail) {
        return Ok(Err("its last bytes are not the interrupted append's".into()));
    }
    if tail.len() < expected.len() {
        // Appending at the end: `len` is exactly where the intended bytes resume.
        file.write_all_at(&expected[tail.len()..], len)
            .ctx("write", path)?;
    }
    crate::durable::sync_data(&file).ctx("sync", path)?;
    Ok(Ok(()))
}
