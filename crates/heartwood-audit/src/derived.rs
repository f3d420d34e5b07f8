//! `derived.json`: a cache a session's writer may leave beside the journal (the gateway keeps
//! its projection there, so listing sessions does not verify and replay each one), bound to
//! where the journal ended when it was written.
//!
//! A reader gets the payload back only while both chain files still have the recorded lengths
//! and the last audit record still has the recorded hash: any append, truncation or rewrite of
//! the tail makes the cache stale and it is ignored. A rewrite in the middle that keeps both
//! lengths and the last record is not seen here; the cache is never evidence, only a summary,
//! and everything that shows or checks a session (snapshot, show, verify, export) still
//! verifies the whole chain. It is written without `fsync` and deleting it costs only the time
//! to derive it again.

use std::io::{Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::SessionPaths;

const DERIVED_FILE: &str = "derived.json";

/// The longest audit line the tail check reads back (records are about 250 bytes).
const TAIL_BYTES: u64 = 4096;

#[derive(Serialize, Deserialize)]
struct Derived<P> {
    events_len: u64,
    audit_len: u64,
    terminal_hash: String,
    payload: P,
}

/// Writes `payload` bound to the chain's end (file lengths and last record hash).
pub(crate) fn store(
    paths: &SessionPaths,
    events_len: u64,
    audit_len: u64,
    terminal_hash: String,
    payload: Value,
) -> std::io::Result<()> {
    let derived = Derived {
        events_len,
        audit_len,
        terminal_hash,
        payload,
    };
    let bytes = serde_json::to_vec(&derived).map_err(std::io::Error::other)?;
    let path = paths.dir.join(DERIVED_FILE);
    let tmp = paths
        .dir
        .join(format!(".{DERIVED_FILE}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// The payload as a `P`, if the journal still ends where it did when the payload was stored
/// (decoded straight from the file's bytes: a projection of a long session is megabytes, and
/// going through a `Value` first doubled the time a listing took).
pub(crate) fn load<P: serde::de::DeserializeOwned>(paths: &SessionPaths) -> Option<P> {
    let bytes = std::fs::read(paths.dir.join(DERIVED_FILE)).ok()?;
    let derived: Derived<P> = serde_json::from_slice(&bytes).ok()?;
    let len = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| m.len());
    if len(&paths.events)? != derived.events_len || len(&paths.audit)? != derived.audit_len {
        return None;
    }
    (last_record_hash(&paths.audit, derived.audit_len)? == derived.terminal_hash)
        .then_some(derived.payload)
}

/// The `hash` member of the last line of `audit.jsonl`.
fn last_record_hash(path: &std::path::Path, len: u64) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let from = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut tail).ok()?;
    let body = tail.strip_suffix(b"\n")?;
    let line = body.rsplit(|b| *b == b'\n').next()?;
    let record: Value = serde_json::from_slice(line).ok()?;
    record.get("hash")?.as_str().map(str::to_owned)
}
