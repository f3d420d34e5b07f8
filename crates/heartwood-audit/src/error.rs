//! The one error type of this crate. Every message says what happened and what to do next.

use std::fmt;
use std::io;
use std::path::PathBuf;

use heartwood_events::{CanonicalError, SessionId};

/// Whether damage looks like an interrupted write or like a change made afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DamageKind {
    /// Confined to the end of a file, as a crash mid-append leaves it.
    TornTail,
    /// Anything else: the record was changed, reordered, removed or added after it was written.
    Modification,
}

/// The first problem verification found. Nothing after it was trusted or skipped past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// `events.jsonl`, `audit.jsonl` or `receipts.jsonl`.
    pub file: &'static str,
    /// 1-based line number of the first bad line.
    pub line: u64,
    /// What did not match.
    pub what: String,
    /// How the damage looks.
    pub kind: DamageKind,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} line {}: {}; ", self.file, self.line, self.what)?;
        match self.kind {
            DamageKind::TornTail => f.write_str(
                "this looks like a torn tail left by a crash mid-append, with no recovery intent \
                 to complete it; it is not repaired automatically: recovery required \
                 (`heartwood sessions recover` cuts the incomplete append, keeping its bytes)",
            ),
            DamageKind::Modification => f.write_str(
                "this looks like a modification made after the record was written; \
                 the session cannot be trusted",
            ),
        }
    }
}

/// Everything that can go wrong reading or writing a session.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A file operation failed.
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        /// What Heartwood was doing, as a verb phrase.
        action: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The project has no session with this id.
    #[error("no session \"{id}\" in this project; `heartwood sessions ls` lists the sessions")]
    NoSession {
        /// The id that was asked for.
        id: SessionId,
    },
    /// Another process holds the session's writer lease.
    #[error(
        "session \"{id}\" is owned by {}; close Heartwood there first, or use another session",
        owner_text(*pid, host.as_deref())
    )]
    Owned {
        /// The session.
        id: SessionId,
        /// The owning process, when its metadata could be read.
        pid: Option<u32>,
        /// The owning host, when its metadata could be read.
        host: Option<String>,
    },
    /// Verification failed: the session is damaged and is refused.
    #[error("session \"{id}\" failed verification: {damage}")]
    Damaged {
        /// The session.
        id: SessionId,
        /// The first problem found.
        damage: Damage,
    },
    /// An append a crash interrupted waits to be completed, and everything else verified:
    /// the events before it are intact in the files, and its bytes, durable in the recovery
    /// journal, continue the chain intact. The next writer of the session completes it (as
    /// `heartwood sessions recover` does); nothing is damaged.
    #[error(
        "session \"{id}\" is intact through event {intact}, with an interrupted append waiting \
         for recovery: events {first_seq}..={last_seq} are held whole in its recovery journal \
         (journal.json) and continue the chain intact, but a crash stopped their writer before \
         they all reached the event and audit files. Run `heartwood sessions recover {id}` to \
         complete it (the next command that acts on the session completes it too)",
        intact = .first_seq.saturating_sub(1)
    )]
    Interrupted {
        /// The session.
        id: SessionId,
        /// First event of the interrupted append not wholly in the files.
        first_seq: u64,
        /// Last event of the interrupted append.
        last_seq: u64,
    },
    /// The log no longer contains everything an earlier checkpoint covered, or differs from it.
    #[error("session \"{id}\" does not match the checkpoint: {detail}")]
    CheckpointMismatch {
        /// The session.
        id: SessionId,
        /// What differs.
        detail: String,
    },
    /// An earlier write by this writer failed; it refuses to write again.
    #[error(
        "a write to session \"{id}\" failed ({cause}); Heartwood stopped writing to it so \
         nothing is recorded twice or out of order. Fix the cause (free disk space, say), then \
         run `heartwood sessions recover {id}` to complete the interrupted write and continue"
    )]
    WriterFailed {
        /// The session.
        id: SessionId,
        /// The first failure.
        cause: String,
    },
    /// A command id was reused for a different kind of command.
    #[error(
        "command id \"{command_id}\" was already used for a {first} command; a retry must \
         repeat the same command exactly, a new command needs a new id"
    )]
    CommandIdReused {
        /// The reused id.
        command_id: String,
        /// The command type it first named.
        first: String,
    },
    /// A value could not be encoded in canonical form.
    #[error(transparent)]
    Encode(#[from] CanonicalError),
    /// A line would exceed [`crate::MAX_LINE_BYTES`].
    #[error("an event of {len} bytes exceeds the {max}-byte limit; store large content as a file")]
    TooLarge {
        /// The encoded size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The shared session store (PostgreSQL) could not be reached or refused the request.
    /// Nothing this request would have recorded was acknowledged.
    #[error(
        "the session store {store} cannot be reached ({detail}); nothing of this request was \
         recorded. Check that the store is running and reachable, then retry: a retried \
         command id is answered once"
    )]
    StoreUnavailable {
        /// The store, without its password.
        store: String,
        /// What the client reported.
        detail: String,
    },
    /// This process no longer holds the session's lease in the shared store (it expired while
    /// the process was paused or cut off, or another replica took it over): it cannot append.
    #[error(
        "this replica no longer holds session \"{id}\" ({detail}); nothing more was recorded \
         here. Another replica drives it now, or the next request takes it over"
    )]
    LeaseLost {
        /// The session.
        id: SessionId,
        /// Why the store refused the append.
        detail: String,
    },
    /// A copy's destination holds a session with this id already.
    #[error(
        "the destination already holds a session \"{id}\"; it was left as it was (remove it \
         there first to copy this one over it)"
    )]
    AlreadyExists {
        /// The session.
        id: SessionId,
    },
    /// An operation that repairs files in place was asked of a session kept in the shared
    /// store, where appends are transactions and nothing is torn.
    #[error(
        "`{action}` works on sessions kept in files; a session in the shared store is written \
         in transactions and needs no repair (copy it to files with `heartwood sessions copy` \
         to inspect it there)"
    )]
    FilesOnly {
        /// What was asked.
        action: &'static str,
    },
    /// A metadata or checkpoint file is not what it should be.
    #[error("{} is not valid: {detail}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}

fn owner_text(pid: Option<u32>, host: Option<&str>) -> String {
    match (pid, host) {
        (Some(pid), Some(host)) => format!("pid {pid} on {host}"),
        (Some(pid), None) => format!("pid {pid}"),
        _ => "another process (its pid is not recorded yet)".to_owned(),
    }
}

/// Attaches an action and a path to an I/O error.
pub(crate) trait IoContext<T> {
    fn ctx(self, action: &'static str, path: &std::path::Path) -> Result<T, AuditError>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx(self, action: &'static str, path: &std::path::Path) -> Result<T, AuditError> {
        self.map_err(|source| AuditError::Io {
            action,
            path: path.to_owned(),
            source,
        })
    }
}
