//! Cutting a torn tail: the last, incomplete append of a session that a crash left without a
//! recovery intent to complete it (a filesystem that lost the intent, or a copy taken mid-write).
//!
//! Such bytes were never acknowledged (an append is acknowledged only once its event, its audit
//! record and the cleared intent are all durable), so the session's trustworthy content is the
//! verified prefix before them. Only damage that verification classifies as a torn tail is cut;
//! anything that looks like a modification is refused as before. The cut bytes are kept beside
//! the session (`torn-tail-<seq>.bin`), never silently thrown away.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use heartwood_events::SessionId;

use crate::error::IoContext;
use crate::intent::IntentFile;
use crate::layout::{AUDIT_FILE, EVENTS_FILE, SessionPaths};
use crate::lease::WriterLease;
use crate::verify::{Tree, verify_session};
use crate::{AuditError, DamageKind, Recovery, durable};

/// What [`cut_torn_tail`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTailCut {
    /// The sequence number of the first event that was not kept.
    pub from_seq: u64,
    /// Bytes cut from `events.jsonl` and `audit.jsonl`, together.
    pub bytes: u64,
    /// Where the cut bytes were kept.
    pub kept_at: std::path::PathBuf,
}

/// Cuts session `id`'s torn tail, under its lease, after completing any interrupted append the
/// intent describes; returns what that completion did, and the cut: `None` when there is no
/// torn tail of `events.jsonl` and `audit.jsonl` to cut (other damage is left as it is, for its
/// own repair or refusal).
pub(crate) fn cut_torn_tail(
    id: &SessionId,
    paths: &SessionPaths,
) -> Result<(Recovery, Option<TornTailCut>), AuditError> {
    let _lease = WriterLease::acquire(id, paths)?;
    let (mut intent, _) = IntentFile::open(&paths.journal)?;
    let recovery = crate::recovery::recover(id, paths, &mut intent)?;
    let damage = match verify_session(id, paths, None, Tree::Skip) {
        Ok(_) => return Ok((recovery, None)),
        Err(AuditError::Damaged { damage, .. })
            if damage.kind == DamageKind::TornTail
                && (damage.file == EVENTS_FILE || damage.file == AUDIT_FILE) =>
        {
            damage
        }
        // Other damage is not cut here: receipts are rebuilt by their own repair, and anything
        // that looks like a modification is refused by whoever opens the session next.
        Err(AuditError::Damaged { .. }) => return Ok((recovery, None)),
        Err(e) => return Err(e),
    };
    // Line `damage.line` of both files is where the torn append began: keep the lines before it.
    let keep = damage.line.saturating_sub(1);
    let mut cut = Vec::new();
    let mut bytes = 0;
    for path in [&paths.events, &paths.audit] {
        let content = std::fs::read(path).ctx("read", path)?;
        let at = prefix_len(&content, keep);
        cut.extend_from_slice(format!("--- {} from byte {at}\n", file_name(path)).as_bytes());
        cut.extend_from_slice(&content[at..]);
        cut.push(b'\n');
        bytes += (content.len() - at) as u64;
    }
    // Kept first: if the cut fails half-way, the bytes are still somewhere.
    let kept_at = keep_file(&paths.dir, damage.line, &cut)?;
    for path in [&paths.events, &paths.audit] {
        let content = std::fs::read(path).ctx("read", path)?;
        let file = durable::open_read_write(path)?;
        file.set_len(prefix_len(&content, keep) as u64)
            .ctx("truncate", path)?;
        durable::sync_data(&file).ctx("sync", path)?;
    }
    durable::sync_dir(&paths.dir)?;
    verify_session(id, paths, None, Tree::Skip)?;
    Ok((
        recovery,
        Some(TornTailCut {
            from_seq: damage.line,
            bytes,
            kept_at,
        }),
    ))
}

/// The length of the first `lines` newline-terminated lines of `content` (all of it if fewer).
fn prefix_len(content: &[u8], lines: u64) -> usize {
    if lines == 0 {
        return 0;
    }
    let mut seen = 0;
    for (i, b) in content.iter().enumerate() {
        if *b == b'\n' {
            seen += 1;
            if seen == lines {
                return i + 1;
            }
        }
    }
    content.len()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes `bytes` to a new `torn-tail-<seq>[-n].bin` in `dir`, never over an earlier one.
fn keep_file(dir: &Path, seq: u64, bytes: &[u8]) -> Result<std::path::PathBuf, AuditError> {
    let mut n = 0;
    loop {
        let path = match n {
            0 => dir.join(format!("torn-tail-{seq}.bin")),
            n => dir.join(format!("torn-tail-{seq}-{n}.bin")),
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(bytes).ctx("write", &path)?;
                durable::sync_data(&file).ctx("sync", &path)?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e).ctx("create", &path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_len;

    #[test]
    fn the_prefix_ends_after_the_last_kept_newline() {
        assert_eq!(prefix_len(b"a\nb\nc", 0), 0);
        assert_eq!(prefix_len(b"a\nb\nc", 1), 2);
        assert_eq!(prefix_len(b"a\nb\nc", 2), 4);
        assert_eq!(prefix_len(b"a\nb\nc", 3), 5);
    }
}
