//! Export bundles: a self-contained copy of a verified session under `exports/<name>/` holding
//! `meta.json`, `events.jsonl`, `audit.jsonl` and `checkpoint.json`, which any verifier can check
//! without the rest of the project. The bundle is staged under a hidden name and renamed into
//! place, so a crash never leaves a half-written bundle under a real name.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use heartwood_events::{Event, SessionId};

use crate::error::IoContext;
use crate::verify::Tree;
use crate::{AuditError, Checkpoint, Digest, SessionPaths, Verified, durable};

/// Where a session's journal ends at one moment, read from its writer without touching a file.
/// The journal only grows, so a bundle made from it later, without the writer (and without the
/// session's lock), holds exactly what the writer had written then.
#[derive(Debug, Clone)]
pub struct JournalEnd {
    id: SessionId,
    paths: SessionPaths,
    end: Verified,
}

impl JournalEnd {
    pub(crate) fn new(id: SessionId, paths: SessionPaths, end: Verified) -> Self {
        JournalEnd { id, paths, end }
    }

    /// Events up to this end.
    pub fn count(&self) -> u64 {
        self.end.count
    }

    /// The hash of the last audit record up to this end.
    pub fn terminal_hash(&self) -> Digest {
        self.end.terminal_hash
    }

    /// Writes a bundle of the journal up to this end and returns its directory with the
    /// `export_recorded` event the caller appends (with a command's receipt, say). The copy is
    /// verified as copied, which also builds its checkpoint's Merkle root: a copy that does not
    /// end where the writer did is refused and nothing is left behind.
    pub fn write_bundle(&self) -> Result<(PathBuf, Event), AuditError> {
        let name = write_bundle(&self.id, &self.paths, &self.end)?;
        let event = Event::ExportRecorded {
            bundle: name.clone(),
            format: None,
            destination: None,
            count: self.end.count,
            terminal_hash: self.end.terminal_hash.to_hex(),
        };
        Ok((self.paths.exports.join(name), event))
    }
}

/// Writes a bundle of the journal up to `end` and returns its directory name.
fn write_bundle(
    id: &SessionId,
    paths: &SessionPaths,
    end: &Verified,
) -> Result<String, AuditError> {
    durable::create_private_dir(&paths.exports)?;
    let stamp: String = heartwood_events::Timestamp::now()
        .as_str()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let name = format!("export-{:06}-{stamp}", end.count);
    let staging = paths.exports.join(format!(".staging-{name}"));
    durable::create_private_dir(&staging)?;
    let staged = stage(id, paths, end, &staging);
    if staged.is_err() {
        // A failed export leaves nothing half-made: the next one starts clean.
        let _ = fs::remove_dir_all(&staging);
    }
    staged?;
    let target = paths.exports.join(&name);
    fs::rename(&staging, &target).ctx("rename into place", &target)?;
    durable::sync_dir(&paths.exports)?;
    Ok(name)
}

/// Copies the journal's prefix into `staging`, verifies the copy against `end` and writes its
/// checkpoint.
fn stage(
    id: &SessionId,
    paths: &SessionPaths,
    end: &Verified,
    staging: &Path,
) -> Result<(), AuditError> {
    let copied = SessionPaths::in_dir(staging.to_owned());
    copy_prefix(&paths.events, &copied.events, end.events_len)?;
    copy_prefix(&paths.audit, &copied.audit, end.audit_len)?;
    copy_prefix(&paths.meta, &copied.meta, u64::MAX)?;
    let (verified, root, _) = crate::verify::verify_chain(id, &copied, None, Tree::Build)?;
    let same = verified.count == end.count
        && verified.terminal_hash == end.terminal_hash
        && verified.events_len == end.events_len
        && verified.audit_len == end.audit_len;
    let root = match root {
        Some(root) if same => root.root(),
        _ => {
            return Err(AuditError::CheckpointMismatch {
                id: id.clone(),
                detail: format!(
                    "the exported copy ends at event {} ({}), not where the writer did ({}, {})",
                    verified.count,
                    verified.terminal_hash.to_hex(),
                    end.count,
                    end.terminal_hash.to_hex()
                ),
            });
        }
    };
    let checkpoint = Checkpoint::of(id, &verified, root);
    let mut text = serde_json::to_vec_pretty(&checkpoint).unwrap_or_default();
    text.push(b'\n');
    durable::write_atomic(&staging.join("checkpoint.json"), &text)?;
    durable::sync_dir(staging)
}

fn copy_prefix(from: &Path, to: &Path, len: u64) -> Result<(), AuditError> {
    let source = match File::open(from) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound && len == 0 => return Ok(()),
        Err(e) => return Err(e).ctx("open", from),
    };
    let mut dest = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(to)
        .ctx("create", to)?;
    // In bounded chunks, each a write point for injected faults in tests.
    let mut source = source.take(len);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = source.read(&mut chunk).ctx("read", from)?;
        if n == 0 {
            break;
        }
        durable::append(&mut dest, &chunk[..n]).ctx("copy into", to)?;
    }
    durable::sync_data(&dest).ctx("sync", to)
}

/// The files of an export bundle, read back whole for a derived export (an RO-Crate).
#[derive(Debug, Clone)]
pub struct BundleFiles {
    /// `meta.json`.
    pub meta: Vec<u8>,
    /// `events.jsonl`.
    pub events: Vec<u8>,
    /// `audit.jsonl`.
    pub audit: Vec<u8>,
    /// `checkpoint.json`.
    pub checkpoint: Vec<u8>,
}

impl BundleFiles {
    /// Reads the bundle at `dir` (a directory [`JournalEnd::write_bundle`] returned).
    pub fn read(dir: &Path) -> Result<Self, AuditError> {
        let read = |name: &str| {
            let path = dir.join(name);
            fs::read(&path).ctx("read", &path)
        };
        Ok(BundleFiles {
            meta: read("meta.json")?,
            events: read("events.jsonl")?,
            audit: read("audit.jsonl")?,
            checkpoint: read("checkpoint.json")?,
        })
    }
}
