//! The write-ahead intents: `journal.json` describes each append before any of its bytes reach
//! the event, audit or receipt files, so a crash at any point can be completed exactly once.
//!
//! An append is durable once its intent is: the intent is written after the ones still pending
//! and `fdatasync`ed (the append's one sync), then the data files are appended to without a
//! sync of their own. Every [`SYNC_EVERY`] appends (and when the writer closes) the data files
//! are synced together and the intents blanked with spaces, so a step of the agent costs one
//! sync and the data files' syncs are shared by many appends.
//!
//! The file is created once per session and then only overwritten in place (the blanking does
//! not shorten it), which saves a directory fsync per append and, once the file has reached its
//! working size, lets `fdatasync` skip the metadata commit. Each intent records each file's
//! length before its append and the exact bytes to add, so completion is: check that whatever
//! follows the first pending intent's lengths is a prefix of the pending bytes (anything else
//! is damage and is refused), then write the rest.
//!
//! What a crash can leave: intents whose bytes are all in the data files (a process that died,
//! the page cache kept), intents whose bytes were lost with the page cache (power loss: they
//! are written again), and a last intent cut short while it was written (its data was never
//! appended: it is dropped). The blanking is not synced: if it is lost, the intents it covered
//! come back, and their bytes are already in place.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::{AuditError, SessionPaths, durable};

/// Appends whose data files are synced together; a larger number saves syncs, a smaller one
/// keeps `journal.json` and the replay after a power loss short.
pub(crate) const SYNC_EVERY: usize = 32;

/// Pending intents past this many bytes have the data files synced early (a few large appends,
/// a pasted data file say, should not make a long journal).
const SYNC_PAST_BYTES: usize = 1 << 20;

/// One append whose data files may not be synced yet.
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
    /// The backend's own log lines this append makes durable with it (the backend wrote them
    /// already; they are written again only if a crash lost them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<BackendBytes>,
}

/// Bytes of a log in the session's `backend/` directory, written by the backend before its
/// durability point and made durable by the journal's intent instead of a sync of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendBytes {
    /// The log's file name in `backend/` (a plain name: no directory part).
    pub file: String,
    /// The log's length before these bytes.
    pub len: u64,
    /// Whole lines (the backend's logs are UTF-8 JSON lines).
    pub bytes: String,
}

impl BackendBytes {
    /// Where the log is, if its name is a plain file name (a name that could leave
    /// `backend/` names damage, never a path to write to).
    pub(crate) fn path(&self, paths: &SessionPaths) -> Option<PathBuf> {
        let plain = !self.file.is_empty()
            && !self.file.contains('/')
            && self.file != "."
            && self.file != "..";
        plain.then(|| paths.backend.join(&self.file))
    }
}

/// An intent naming a backend log outside `backend/` (said after "the file").
#[derive(Debug, thiserror::Error)]
#[error("names a backend log outside backend/: {0:?}")]
pub struct OutsideBackend(pub String);

impl Intent {
    /// Each data file with its length before this append and the bytes the append adds: the
    /// journal's three files, then the backend's log (an empty part when the append carries
    /// none). `Err` names a backend log outside `backend/`.
    pub fn targets<'a>(
        &'a self,
        paths: &'a SessionPaths,
    ) -> Result<[Target<'a>; 4], OutsideBackend> {
        let backend = match &self.backend {
            None => None,
            Some(b) => Some((
                b.path(paths)
                    .ok_or_else(|| OutsideBackend(b.file.clone()))?,
                b,
            )),
        };
        Ok([
            Target::journal(
                &paths.events,
                crate::layout::EVENTS_FILE,
                self.events_len,
                &self.events,
            ),
            Target::journal(
                &paths.audit,
                crate::layout::AUDIT_FILE,
                self.audit_len,
                &self.audit,
            ),
            Target::journal(
                &paths.receipts,
                crate::layout::RECEIPTS_FILE,
                self.receipts_len,
                &self.receipts,
            ),
            Target {
                path: backend.as_ref().map(|(path, _)| Cow::Owned(path.clone())),
                file: "backend log",
                len_before: backend.as_ref().map_or(0, |(_, b)| b.len),
                bytes: backend.map_or(&[][..], |(_, b)| b.bytes.as_bytes()),
                may_run_on: true,
            },
        ])
    }
}

/// One data file's part of an append.
pub(crate) struct Target<'a> {
    /// `None` for a backend part the append does not carry.
    pub path: Option<Cow<'a, Path>>,
    pub file: &'static str,
    pub len_before: u64,
    pub bytes: &'a [u8],
    /// The file may hold bytes past this part that no intent covers yet (a backend writes its
    /// log before its durability point); the journal's files never do.
    pub may_run_on: bool,
}

impl<'a> Target<'a> {
    fn journal(path: &'a Path, file: &'static str, len_before: u64, bytes: &'a str) -> Self {
        Target {
            path: Some(Cow::Borrowed(path)),
            file,
            len_before,
            bytes: bytes.as_bytes(),
            may_run_on: false,
        }
    }

    /// Whether the file lacks some of this part's bytes.
    fn is_short(&self) -> bool {
        match &self.path {
            Some(path) if !self.bytes.is_empty() => std::fs::metadata(path).map_or(true, |m| {
                m.len() < self.len_before + self.bytes.len() as u64
            }),
            _ => false,
        }
    }
}

/// What a read of `journal.json` found.
#[derive(Debug)]
pub(crate) enum Pending {
    /// No append is pending.
    None,
    /// Appends whose data files were not synced, oldest first; a last intent cut short while
    /// it was written (its data was never appended) is left out.
    Intents(Vec<Intent>),
    /// Text that is not a run of intents: a crash while the file was being blanked or written,
    /// after the data it described was synced or before any of it was appended.
    Unreadable,
}

impl Pending {
    /// The pending appends the data files do not hold yet: an append in flight in a live
    /// writer, or one a crash cut short. Intents whose bytes are all in place wait only for
    /// their sync, and readers may read past them.
    ///
    /// Returns the first event not wholly in the files and the last pending one.
    pub fn in_flight(&self, paths: &SessionPaths) -> Option<(u64, u64)> {
        let Pending::Intents(intents) = self else {
            return None;
        };
        let last = intents.last()?;
        let short = |intent: &Intent| {
            intent
                .targets(paths)
                .map_or(true, |targets| targets.iter().any(Target::is_short))
        };
        if !short(last) {
            return None;
        }
        let first = intents.iter().find(|i| short(i)).unwrap_or(last);
        Some((first.first_seq, last.last_seq))
    }
}

/// The journal's three files as recovery will complete them from `intents` (the pending ones,
/// oldest first), read without changing anything: each file up to the first intent's recorded
/// length, then every pending intent's bytes. `Ok(Err(damage))` when a file cannot be completed
/// that way (what follows the recorded length is not a prefix of the pending bytes), which
/// recovery would refuse as damage too.
pub(crate) fn completed_sources(
    paths: &SessionPaths,
    intents: &[Intent],
) -> Result<Result<crate::verify::Sources, crate::Damage>, AuditError> {
    let Some(first) = intents.first() else {
        return crate::verify::Sources::files(paths).map(Ok);
    };
    let files = [
        (&paths.events, crate::layout::EVENTS_FILE, first.events_len),
        (&paths.audit, crate::layout::AUDIT_FILE, first.audit_len),
        (
            &paths.receipts,
            crate::layout::RECEIPTS_FILE,
            first.receipts_len,
        ),
    ];
    let mut sources = Vec::with_capacity(3);
    for (i, (path, name, len_before)) in files.into_iter().enumerate() {
        let expected: Vec<u8> = intents
            .iter()
            .flat_map(|intent| {
                let bytes = match i {
                    0 => &intent.events,
                    1 => &intent.audit,
                    _ => &intent.receipts,
                };
                bytes.as_bytes().iter().copied()
            })
            .collect();
        let file = match File::open(path) {
            Ok(file) => Some(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).ctx("open", path),
        };
        let tail = match &file {
            Some(file) => {
                let len = file.metadata().ctx("inspect", path)?.len();
                tail_within(file, len, len_before, &expected, false).ctx("read", path)?
            }
            None if len_before == 0 => Ok(0),
            None => Err(Mismatch::Missing),
        };
        if let Err(what) = tail {
            // The line where the files part from the pending bytes (one event or record a
            // line; receipts are numbered from the file's start, so they are not).
            let line = match (&file, i) {
                (Some(file), 0 | 1) => {
                    let seen = crate::durable::read_tail(file, len_before, expected.len())
                        .ctx("read", path)?;
                    let differs = seen
                        .iter()
                        .zip(&expected)
                        .position(|(a, b)| a != b)
                        .unwrap_or(seen.len().min(expected.len()));
                    first.first_seq
                        + memchr::memchr_iter(b'\n', &expected[..differs]).count() as u64
                }
                _ => first.first_seq,
            };
            return Ok(Err(crate::Damage {
                file: name,
                line,
                what: format!("an interrupted append cannot be completed: the file {what}"),
                kind: crate::DamageKind::Modification,
            }));
        }
        let before: Box<dyn std::io::Read + Send> = match file {
            Some(file) => Box::new(std::io::Read::take(file, len_before)),
            None => Box::new(std::io::empty()),
        };
        let completed = std::io::Read::chain(before, std::io::Cursor::new(expected));
        sources.push(std::io::BufReader::with_capacity(
            crate::verify::BUF,
            Box::new(completed) as Box<dyn std::io::Read + Send>,
        ));
    }
    let mut sources = sources.into_iter();
    match (sources.next(), sources.next(), sources.next()) {
        (Some(events), Some(audit), Some(receipts)) => Ok(Ok(crate::verify::Sources {
            events,
            audit,
            receipts,
        })),
        _ => crate::verify::Sources::files(paths).map(Ok),
    }
}

/// Why a file cannot be completed with an interrupted append's bytes (said after "the file").
#[derive(Debug, thiserror::Error)]
pub(crate) enum Mismatch {
    /// The file is gone.
    #[error("is missing")]
    Missing,
    /// Shorter than before the append.
    #[error("is {len} bytes, shorter than the {before} it had before the append")]
    Shorter {
        /// Its length now.
        len: u64,
        /// Its length before the append.
        before: u64,
    },
    /// Longer than the append would have made it.
    #[error("holds more bytes than the interrupted append would have written")]
    Longer,
    /// Its last bytes are other bytes.
    #[error("its last bytes are not the interrupted append's")]
    Different,
}

/// How many of `expected`'s bytes `file` (of `len` bytes) already holds after `len_before`,
/// or why it cannot be completed with them: it is shorter than before the append, holds more
/// than the append would write (unless it `may_run_on`), or its last bytes differ.
fn tail_within(
    file: &File,
    len: u64,
    len_before: u64,
    expected: &[u8],
    may_run_on: bool,
) -> std::io::Result<Result<usize, Mismatch>> {
    if len < len_before {
        return Ok(Err(Mismatch::Shorter {
            len,
            before: len_before,
        }));
    }
    let mut tail_len = len - len_before;
    if may_run_on {
        tail_len = tail_len.min(expected.len() as u64);
    }
    if tail_len > expected.len() as u64 {
        return Ok(Err(Mismatch::Longer));
    }
    let mut tail = vec![0u8; tail_len as usize];
    file.read_exact_at(&mut tail, len_before)?;
    if !expected.starts_with(&tail) {
        return Ok(Err(Mismatch::Different));
    }
    Ok(Ok(tail.len()))
}

/// Reads `journal.json` without creating or changing it.
pub(crate) fn read_pending(path: &Path) -> Result<Pending, AuditError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pending::None),
        Err(e) => return Err(e).ctx("read", path),
    };
    Ok(parse(&bytes))
}

fn parse(bytes: &[u8]) -> Pending {
    let lines: Vec<&[u8]> = bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .collect();
    if lines.is_empty() {
        return Pending::None;
    }
    let mut intents = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_slice::<Intent>(line) {
            Ok(intent) => intents.push(intent),
            // The last intent was being written when the crash came: nothing of its append
            // reached the data files, since they are written only after it is synced.
            Err(_) if i + 1 == lines.len() && i > 0 => break,
            Err(_) => return Pending::Unreadable,
        }
    }
    Pending::Intents(intents)
}

/// The writer's handle on `journal.json`.
pub(crate) struct IntentFile {
    file: File,
    path: PathBuf,
    /// Where the next intent is written: the end of the pending ones.
    used: usize,
    /// How many leading bytes may hold non-space text.
    dirty: usize,
    /// Intents written since the last blanking.
    pending: usize,
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
                used: 0,
                dirty: len,
                pending: 0,
            },
            !existed,
        ))
    }

    /// Makes `intent` durable, after the pending ones, before any of its data byte is written.
    pub fn record(&mut self, intent: &Intent) -> Result<(), AuditError> {
        let mut bytes = serde_json::to_vec(intent).map_err(|e| AuditError::BadFile {
            path: self.path.clone(),
            detail: e.to_string(),
        })?;
        bytes.push(b'\n');
        crate::durable::write_at(&self.file, &bytes, self.used as u64).ctx("write", &self.path)?;
        self.used += bytes.len();
        self.dirty = self.dirty.max(self.used);
        self.pending += 1;
        crate::durable::sync_data(&self.file).ctx("sync", &self.path)
    }

    /// Whether the data files should be synced now, so the pending intents can be blanked.
    pub fn wants_sync(&self) -> bool {
        self.pending >= SYNC_EVERY || self.used >= SYNC_PAST_BYTES
    }

    /// Whether any intent waits for the data files' sync.
    pub fn has_pending(&self) -> bool {
        self.pending > 0
    }

    /// Blanks the intents once the data files they describe are synced. Not synced itself: if
    /// this is lost in a crash, the next open finds every byte already in place and only
    /// blanks them again.
    pub fn clear(&mut self) -> Result<(), AuditError> {
        if self.dirty > 0 {
            crate::durable::write_at(&self.file, &vec![b' '; self.dirty], 0)
                .ctx("clear", &self.path)?;
        }
        self.dirty = 0;
        self.used = 0;
        self.pending = 0;
        Ok(())
    }

    /// Clears the intents durably (used after recovery, before new appends build on it).
    pub fn clear_durably(&mut self) -> Result<(), AuditError> {
        self.clear()?;
        crate::durable::sync_data(&self.file).ctx("sync", &self.path)
    }
}

/// What completing one file found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Completion {
    /// Every byte was in place already.
    InPlace,
    /// Some bytes were missing and were written.
    Written,
}

/// Brings `path` to exactly `len_before` bytes followed by `expected` (and, when it
/// `may_run_on`, whatever follows them), if what follows `len_before` now is a prefix of
/// `expected`, and syncs it. Returns a description of the
/// mismatch otherwise, leaving the file untouched so the evidence is kept.
pub(crate) fn complete_file(
    path: &Path,
    len_before: u64,
    expected: &[u8],
    may_run_on: bool,
) -> Result<Result<Completion, Mismatch>, AuditError> {
    if expected.is_empty() {
        return Ok(Ok(Completion::InPlace));
    }
    let file = durable::open_read_write(path)?;
    let len = file.metadata().ctx("inspect", path)?.len();
    let in_place =
        match tail_within(&file, len, len_before, expected, may_run_on).ctx("read", path)? {
            Ok(in_place) => in_place,
            Err(what) => return Ok(Err(what)),
        };
    let completion = if in_place < expected.len() {
        // Appending at the end: `len` is exactly where the intended bytes resume (a file that
        // may run on is this short only when it ends inside them).
        file.write_all_at(&expected[in_place..], len)
            .ctx("write", path)?;
        Completion::Written
    } else {
        Completion::InPlace
    };
    crate::durable::sync_data(&file).ctx("sync", path)?;
    Ok(Ok(completion))
}
