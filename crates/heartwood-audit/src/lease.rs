//! The one-writer-per-session lease: an OS lock on `writer.lock`, held from the first mutating
//! command until the writer closes, plus `writer.json` naming the holder.
//!
//! The lock is `flock(2)` through `std::fs::File::try_lock` rather than the `fd-lock` crate:
//! `fd-lock` hands out a guard that borrows its lock, which a long-lived writer would have to
//! store beside the lock it borrows from (a self-referential struct); std's lock is the same
//! `flock` and lives exactly as long as the open file. The kernel releases it when the process
//! dies, so `writer.json` left behind by a dead process is stale, and it is only ever treated as
//! stale by the process that has just acquired the lock.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use heartwood_events::{SessionId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::{AuditError, SessionPaths, durable};

/// Who holds (or last held) a session's writer lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterInfo {
    /// The holder's process id.
    pub pid: u32,
    /// The holder's host name.
    pub host: String,
    /// When the holder took the lease.
    pub started: Timestamp,
}

impl WriterInfo {
    /// Reads `writer.json`, if present and readable.
    pub(crate) fn read(path: &Path) -> Option<WriterInfo> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Whether the recorded process is still running on this host. A heuristic for display
    /// only; ownership is decided by the lock alone.
    pub fn looks_alive(&self) -> bool {
        self.host == host_name() && Path::new(&format!("/proc/{}", self.pid)).exists()
    }
}

/// A held writer lease. Dropping it removes `writer.json` and releases the lock.
pub(crate) struct WriterLease {
    lock: File,
    info_path: PathBuf,
    /// `writer.json` was there when the lock was taken: its holder ended without closing.
    inherited_from_crash: bool,
    /// Keep `writer.json` on release: the session was left as a crash would leave it.
    unclean: bool,
}

impl WriterLease {
    /// Takes the lease or reports who holds it.
    pub fn acquire(id: &SessionId, paths: &SessionPaths) -> Result<Self, AuditError> {
        let lock = durable::open_read_write(&paths.lock)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let owner = WriterInfo::read(&paths.writer);
                return Err(AuditError::Owned {
                    id: id.clone(),
                    pid: owner.as_ref().map(|o| o.pid),
                    host: owner.map(|o| o.host),
                });
            }
            Err(TryLockError::Error(e)) => return Err(e).ctx("lock", &paths.lock),
        }
        // A holder that closes removes `writer.json`; one left behind under a free lock means
        // the holder died (or its removal failed, which errs on the side of "crashed").
        let inherited_from_crash = paths.writer.exists();
        let info = WriterInfo {
            pid: std::process::id(),
            host: host_name(),
            started: Timestamp::now(),
        };
        let bytes = serde_json::to_vec(&info).unwrap_or_default();
        durable::write_atomic(&paths.writer, &bytes)?;
        Ok(WriterLease {
            lock,
            info_path: paths.writer.clone(),
            inherited_from_crash,
            // Whatever a crash left unreconciled stays flagged until a holder reconciles it.
            unclean: inherited_from_crash,
        })
    }

    /// Releases the lease as a crash would: `writer.json` stays, so the next holder treats
    /// what other logs hold beyond the journal as a crash's remains.
    pub fn mark_unclean(&mut self) {
        self.unclean = true;
    }

    /// Whatever the previous holder left behind has been reconciled: release normally.
    pub fn mark_clean(&mut self) {
        self.unclean = false;
    }

    /// Whether the session is to be released as a crash would leave it.
    pub fn is_unclean(&self) -> bool {
        self.unclean
    }

    /// Whether the previous holder ended without closing the session (a crash or a kill).
    pub fn inherited_from_crash(&self) -> bool {
        self.inherited_from_crash
    }
}

impl Drop for WriterLease {
    fn drop(&mut self) {
        // Best effort: a leftover writer.json is harmless, since the lock decides ownership.
        if !self.unclean {
            let _ = std::fs::remove_file(&self.info_path);
        }
        // Unlock explicitly rather than only closing the file: a child process forked by another
        // thread at this moment holds a duplicate of the descriptor until it execs, and the
        // lock belongs to the shared open file, so closing ours alone would leave the session
        // locked for that window.
        let _ = self.lock.unlock();
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown-host".to_owned())
}
