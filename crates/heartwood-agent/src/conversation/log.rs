//! The conversation's persistence: one JSON event per line in `events.jsonl` under the
//! directory the caller gives.
//!
//! Appends go to the file at once; [`EventLog::sync`] makes everything appended so far durable.
//! The conversation syncs where a crash would otherwise change what happens next: before a tool
//! runs (so a restart never runs it again) and before control returns to the caller (so a
//! pending decision survives a closed terminal).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::{AgentEvent, EventKind};

/// Why the log could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A file operation failed.
    #[error("conversation log {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A whole line did not parse.
    #[error("conversation log {} line {line} is not a valid event ({detail}); the conversation cannot be restored", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// What failed.
        detail: String,
    },
}

static SYNCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times this process's conversation logs were synced (for the benchmarks, which hold
/// durability to its contract by counting).
pub fn sync_calls() -> u64 {
    SYNCS.load(std::sync::atomic::Ordering::Relaxed)
}

/// The log's bytes appended since its last durability point, for a host that makes them
/// durable in its own write-ahead record instead of syncing the log (one sync a step, not two).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTail {
    /// The log's file name in the conversation's directory.
    pub file: &'static str,
    /// The file's length before these bytes.
    pub offset: u64,
    /// Whole lines, as written.
    pub bytes: Vec<u8>,
}

/// The log's file name in the conversation's directory.
pub const LOG_FILE: &str = "events.jsonl";

/// The append-only log and its events in memory.
pub struct EventLog {
    path: PathBuf,
    file: File,
    events: Vec<AgentEvent>,
    /// SHA-256 of each event's line as stored (without its newline), in order.
    digests: Vec<[u8; 32]>,
    /// The file's length at its last durability point, and the bytes written since.
    unsynced: (u64, Vec<u8>),
}

fn digest(line: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(line).into()
}

impl EventLog {
    /// Opens (or starts) the log in `dir`. A final line without a newline is the remains of a
    /// write cut short by a crash before the engine acted on it, and is dropped.
    pub fn open(dir: &Path) -> Result<Self, LogError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| LogError::Io { path, source }
        };
        crate::private::create_dir(dir).map_err(io(dir))?;
        let path = dir.join(LOG_FILE);
        let mut events = Vec::new();
        let mut digests = Vec::new();
        let mut good_len = 0u64;
        if let Ok(file) = File::open(&path) {
            let mut reader = BufReader::new(file);
            let mut line = Vec::new();
            let mut number = 0;
            loop {
                line.clear();
                let n = reader.read_until(b'\n', &mut line).map_err(io(&path))?;
                if n == 0 || !line.ends_with(b"\n") {
                    break;
                }
                number += 1;
                let event: AgentEvent =
                    serde_json::from_slice(&line).map_err(|e| LogError::Corrupt {
                        path: path.clone(),
                        line: number,
                        detail: e.to_string(),
                    })?;
                good_len += n as u64;
                events.push(event);
                digests.push(digest(&line[..line.len() - 1]));
            }
        }
        let file = crate::private::append(&path).map_err(io(&path))?;
        if file.metadata().map_err(io(&path))?.len() > good_len {
            file.set_len(good_len).map_err(io(&path))?;
        }
        Ok(EventLog {
            path,
            file,
            events,
            digests,
            unsynced: (good_len, Vec::new()),
        })
    }

    /// Makes every appended event durable.
    pub fn sync(&mut self) -> Result<(), LogError> {
        SYNCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.file.sync_data().map_err(|source| LogError::Io {
            path: self.path.clone(),
            source,
        })?;
        self.take_tail();
        Ok(())
    }

    /// The bytes appended since the last durability point, which the caller makes durable
    /// (or, if it cannot, stops: the log is then not durable past the previous point).
    pub fn take_tail(&mut self) -> LogTail {
        let (offset, bytes) = std::mem::take(&mut self.unsynced);
        self.unsynced.0 = offset + bytes.len() as u64;
        LogTail {
            file: LOG_FILE,
            offset,
            bytes,
        }
    }

    /// Every event, in order.
    pub fn events(&self) -> &[AgentEvent] {
        &self.events
    }

    /// SHA-256 (hex) of event `id`'s line as stored, so a record kept elsewhere can name
    /// exactly which event it came from.
    pub fn digest_of(&self, id: u64) -> Option<String> {
        let index = usize::try_from(id).ok()?.checked_sub(1)?;
        let bytes = self.digests.get(index)?;
        let mut hex = String::with_capacity(64);
        for b in bytes {
            use std::fmt::Write;
            let _ = write!(hex, "{b:02x}");
        }
        Some(hex)
    }

    /// Appends an event (durable after the next [`EventLog::sync`]) and returns it.
    pub fn append(&mut self, kind: EventKind) -> Result<&AgentEvent, LogError> {
        let event = AgentEvent {
            id: self.events.len() as u64 + 1,
            kind,
        };
        let mut line = serde_json::to_vec(&event).map_err(|e| LogError::Corrupt {
            path: self.path.clone(),
            line: self.events.len() + 1,
            detail: e.to_string(),
        })?;
        let line_digest = digest(&line);
        line.push(b'\n');
        let io = |source| LogError::Io {
            path: self.path.clone(),
            source,
        };
        // Not synced here: the conversation syncs where a crash would change what happens
        // next (see the module documentation).
        self.file.write_all(&line).map_err(io)?;
        self.unsynced.1.extend_from_slice(&line);
        self.events.push(event);
        self.digests.push(line_digest);
        Ok(self.events.last().expect("just pushed"))
    }
}
