//! Export bundles: a self-contained copy of a verified session under `exports/<name>/` holding
//! `meta.json`, `events.jsonl`, `audit.jsonl` and `checkpoint.json`, which any verifier can check
//! without the rest of the project. The bundle is staged under a hidden name and renamed into
//! place, so a crash never leaves a half-written bundle under a real name.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::IoContext;
use crate::{AuditError, Checkpoint, SessionPaths, Verified, durable};

/// Writes a bundle of the first `verified.count` events and returns its directory name.
pub(crate) fn write_bundle(
    paths: &SessionPaths,
    verified: &Verified,
    checkpoint: &Checkpoint,
) -> Result<String, AuditError> {
    durable::create_private_dir(&paths.exports)?;
    let stamp: String = heartwood_events::Timestamp::now()
        .as_str()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let name = format!("export-{:06}-{stamp}", verified.count);
    let staging = paths.exports.join(format!(".staging-{name}"));
    durable::create_private_dir(&staging)?;
    let staged = (|| {
        copy_prefix(
            &paths.events,
            &staging.join("events.jsonl"),
            verified.events_len,
        )?;
        copy_prefix(
            &paths.audit,
            &staging.join("audit.jsonl"),
            verified.audit_len,
        )?;
        copy_prefix(&paths.meta, &staging.join("meta.json"), u64::MAX)?;
        let mut text = serde_json::to_vec_pretty(checkpoint).unwrap_or_default();
        text.push(b'\n');
        durable::write_atomic(&staging.join("checkpoint.json"), &text)?;
        durable::sync_dir(&staging)
    })();
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
    /// Reads the bundle at `dir` (a directory [`SessionWriter::write_export_bundle`] returned).
    ///
    /// [`SessionWriter::write_export_bundle`]: crate::SessionWriter::write_export_bundle
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
