//! Fail-closed verification of a session's event and audit files.
//!
//! Both files are read together, one pair of lines at a time, in bounded memory. For pair `k`
//! the event line must be whole, name `seq` k, and hash to the record's `event_sha256`; the
//! audit line must be canonical, name `seq` k with the event's `type` and `time`, link to the
//! previous record's hash (or the session's genesis), and hash correctly; and the two files
//! must hold the same number of lines. Then `receipts.jsonl` must agree with the chain: every
//! command named on an event has exactly one receipt saying it applied, ending at that
//! command's last event (see [`crate::receipts::check`]). The first failure stops verification
//! and is reported with its file, its line and whether it looks like a torn tail or a
//! modification.

use std::io::{self, BufRead, BufReader};
use std::ops::Range;
use std::path::Path;
use std::sync::mpsc;

use heartwood_events::SessionId;

use crate::durable::Source;
use crate::error::IoContext;
use crate::event_head::event_head;
use crate::layout::{AUDIT_FILE, EVENTS_FILE};
use crate::line::{Line, read_line};
use crate::merkle::RootBuilder;
use crate::receipts::{Commands, RECEIPTS_BUF};
use crate::record::{LineProblem, check_line, genesis};
use crate::{AuditError, Damage, DamageKind, Digest, MAX_LINE_BYTES, SessionPaths};

/// What a successful verification established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Number of events (and audit records).
    pub count: u64,
    /// Hash of the last audit record, or the genesis digest for an empty session.
    pub terminal_hash: Digest,
    /// RFC 6962 Merkle root over the audit record hashes, when it was asked for.
    pub merkle_root: Option<Digest>,
    /// Bytes of `events.jsonl` covered.
    pub events_len: u64,
    /// Bytes of `audit.jsonl` covered.
    pub audit_len: u64,
    /// Time of the last event, if any.
    pub last_time: Option<String>,
}

/// What the event-side worker learned from one line of `events.jsonl`. The `type` and `time`
/// texts live in the batch's shared buffer, so a batch costs two allocations, not two per line.
enum EventLine {
    Whole {
        /// The event line's SHA-256 as lowercase hex, as the audit record spells it.
        sha256: [u8; 64],
        head: Result<Head, NotAnEvent>,
        len: u64,
        last: bool,
    },
    Unterminated,
    TooLong,
    End,
}

/// An event line's `seq`, and where its `type`, `time` and `command` sit in the batch text.
type Head = (u64, Range<usize>, Range<usize>, Option<Range<usize>>);

#[derive(Default)]
struct Batch {
    lines: Vec<EventLine>,
    text: String,
}

pub(crate) const BUF: usize = 256 * 1024;
const BATCH: usize = 512;

/// Whether verification also builds the RFC 6962 Merkle tree (for checkpoints), which costs
/// about a sixth more hashing than the checks themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tree {
    /// Checks only.
    Skip,
    /// Checks, and the Merkle root.
    Build,
}

/// Verifies a session's files. When `leaves` is given, every record hash is pushed onto it.
/// With [`Tree::Build`] it also returns the compact Merkle state, from which a writer continues.
///
/// Verification is bound by SHA-256, so the work is spread over threads: one hashes and parses
/// event lines, this one checks audit records and the chain, and (when asked) a third builds the
/// Merkle tree from the record hashes.
pub(crate) fn verify_session(
    id: &SessionId,
    paths: &SessionPaths,
    leaves: Option<&mut Vec<Digest>>,
    tree: Tree,
) -> Result<(Verified, Option<RootBuilder>), AuditError> {
    verify_sources(id, paths, Sources::files(paths)?, leaves, tree)
}

/// [`verify_session`] over `sources`: the files as they are, or as recovery will complete
/// them (see [`crate::intent::completed_sources`]).
pub(crate) fn verify_sources(
    id: &SessionId,
    paths: &SessionPaths,
    sources: Sources,
    leaves: Option<&mut Vec<Digest>>,
    tree: Tree,
) -> Result<(Verified, Option<RootBuilder>), AuditError> {
    let Sources {
        events,
        audit,
        receipts,
    } = sources;
    let (verified, root, commands) = verify_chain_of(id, paths, events, audit, leaves, tree)?;
    crate::meta::check(id, paths, verified.count)?;
    crate::receipts::check(id, &paths.receipts, receipts, &commands)?;
    Ok((verified, root))
}

/// What verification reads in place of `events.jsonl`, `audit.jsonl` and `receipts.jsonl`.
pub(crate) struct Sources {
    pub events: Source,
    pub audit: Source,
    pub receipts: Source,
}

impl Sources {
    /// The three files as they are.
    pub fn files(paths: &SessionPaths) -> Result<Sources, AuditError> {
        Ok(Sources {
            events: open_or_empty(&paths.events)?,
            audit: open_or_empty(&paths.audit)?,
            receipts: crate::durable::read_or_empty(&paths.receipts, RECEIPTS_BUF)?,
        })
    }
}

/// [`verify_session`] without the receipts: the chain alone, and every command named on an
/// event with its last event (from which damaged receipts are rebuilt).
pub(crate) fn verify_chain(
    id: &SessionId,
    paths: &SessionPaths,
    leaves: Option<&mut Vec<Digest>>,
    tree: Tree,
) -> Result<(Verified, Option<RootBuilder>, Commands), AuditError> {
    let events = open_or_empty(&paths.events)?;
    let audit = open_or_empty(&paths.audit)?;
    verify_chain_of(id, paths, events, audit, leaves, tree)
}

fn verify_chain_of(
    id: &SessionId,
    paths: &SessionPaths,
    events: Source,
    audit: Source,
    leaves: Option<&mut Vec<Digest>>,
    tree: Tree,
) -> Result<(Verified, Option<RootBuilder>, Commands), AuditError> {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<io::Result<Batch>>(4);
        scope.spawn(move || read_events(events, tx));
        let (tree_tx, tree_rx) = mpsc::sync_channel::<Vec<Digest>>(4);
        let builder = (tree == Tree::Build).then(|| {
            scope.spawn(move || {
                let mut root = RootBuilder::default();
                for hashes in tree_rx {
                    hashes.iter().for_each(|h| root.push(h));
                }
                root
            })
        });
        let mut feed = EventFeed {
            rx,
            batch: Batch::default(),
            next: 0,
        };
        let tree_tx = builder.is_some().then_some(tree_tx);
        let (verified, commands) = check_chain(id, paths, &mut feed, audit, leaves, tree_tx)?;
        let Some(builder) = builder else {
            return Ok((verified, None, commands));
        };
        let root = builder.join().map_err(|_| AuditError::Io {
            action: "verify",
            path: paths.audit.clone(),
            source: io::Error::other("the Merkle tree worker panicked"),
        })?;
        Ok((
            Verified {
                merkle_root: Some(root.root()),
                ..verified
            },
            Some(root),
            commands,
        ))
    })
}

/// The checker's end of the event worker's channel.
struct EventFeed {
    rx: mpsc::Receiver<io::Result<Batch>>,
    batch: Batch,
    next: usize,
}

impl EventFeed {
    /// The next event line, with the batch text its ranges point into.
    fn next(&mut self) -> io::Result<(EventLine, &str)> {
        if self.next == self.batch.lines.len() {
            match self.rx.recv() {
                Ok(batch) => self.batch = batch?,
                // The worker stops after the last line; past that the file has ended.
                Err(_) => return Ok((EventLine::End, "")),
            }
            self.next = 0;
        }
        let line = std::mem::replace(&mut self.batch.lines[self.next], EventLine::End);
        self.next += 1;
        Ok((line, &self.batch.text))
    }
}

/// The event-side worker: reads, hashes and parses event lines in batches.
fn read_events(
    mut events: BufReader<Box<dyn io::Read + Send>>,
    tx: mpsc::SyncSender<io::Result<Batch>>,
) {
    let mut buf = Vec::new();
    let mut batch = Batch::default();
    loop {
        let item = match read_line(&mut events, &mut buf, MAX_LINE_BYTES) {
            Ok(Line::Complete) => {
                let head = valid_json(&buf)
                    .and_then(|()| event_head(&buf).map_err(NotAnEvent::Json))
                    .map(|h| {
                        let kind = push_text(&mut batch.text, &h.kind);
                        let time = push_text(&mut batch.text, &h.time);
                        let command = h.command.map(|c| push_text(&mut batch.text, &c));
                        (h.seq, kind, time, command)
                    });
                match at_end(&mut events) {
                    Ok(last) => Ok(EventLine::Whole {
                        sha256: Digest::of(&buf).hex_array(),
                        head,
                        len: buf.len() as u64 + 1,
                        last,
                    }),
                    Err(e) => Err(e),
                }
            }
            Ok(Line::Unterminated) => Ok(EventLine::Unterminated),
            Ok(Line::TooLong) => Ok(EventLine::TooLong),
            Ok(Line::End) => Ok(EventLine::End),
            Err(e) => Err(e),
        };
        let item = match item {
            Ok(item) => item,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let stop = !matches!(item, EventLine::Whole { .. });
        batch.lines.push(item);
        if stop || batch.lines.len() == BATCH {
            // A closed channel means the checker stopped early; there is nothing left to do.
            if tx.send(Ok(std::mem::take(&mut batch))).is_err() || stop {
                return;
            }
        }
    }
}

/// Whether an event line is one JSON value in UTF-8. The head scanner skips what it does not
/// need, and a forger who recomputes every hash can put anything there; an independent
/// verifier parses the whole line, so this one must refuse what a JSON parser refuses.
fn valid_json(line: &[u8]) -> Result<(), NotAnEvent> {
    std::str::from_utf8(line).map_err(NotAnEvent::NotUtf8)?;
    serde_json::from_slice::<serde::de::IgnoredAny>(line)
        .map(|_| ())
        .map_err(NotAnEvent::Json)
}

/// Why an event line is not an event (said inside "event is not valid (…)").
#[derive(Debug, thiserror::Error)]
enum NotAnEvent {
    /// Not UTF-8.
    #[error("not UTF-8: {0}")]
    NotUtf8(std::str::Utf8Error),
    /// Not one JSON value, or without the fields the audit record repeats.
    #[error("{0}")]
    Json(serde_json::Error),
}

fn push_text(text: &mut String, s: &str) -> Range<usize> {
    let start = text.len();
    text.push_str(s);
    start..text.len()
}

/// The audit side: pairs each event line with its record and checks the chain.
fn check_chain(
    id: &SessionId,
    paths: &SessionPaths,
    feed: &mut EventFeed,
    mut audit: BufReader<Box<dyn io::Read + Send>>,
    mut leaves: Option<&mut Vec<Digest>>,
    tree: Option<mpsc::SyncSender<Vec<Digest>>>,
) -> Result<(Verified, Commands), AuditError> {
    let damaged = |damage: Damage| AuditError::Damaged {
        id: id.clone(),
        damage,
    };
    let mut prev = genesis(id);
    let mut pending_leaves = Vec::with_capacity(BATCH);
    let mut au_buf = Vec::new();
    let (mut events_len, mut audit_len) = (0u64, 0u64);
    let mut last_time = None;
    let mut commands = Commands::new();
    let mut k: u64 = 0;
    loop {
        k += 1;
        let (ev, text) = feed.next().ctx("read", &paths.events)?;
        let au = read_line(&mut audit, &mut au_buf, MAX_LINE_BYTES).ctx("read", &paths.audit)?;
        let audit_done = at_end(&mut audit).ctx("read", &paths.audit)?;
        let damage = |file, what: &str, torn: bool| Damage {
            file,
            line: k,
            what: what.to_owned(),
            kind: if torn {
                DamageKind::TornTail
            } else {
                DamageKind::Modification
            },
        };
        let (sha256, head, len, events_done) = match paired(ev, au) {
            Paired::Both(pair) => pair,
            Paired::End => break,
            Paired::Damaged(file, what, torn) => return Err(damaged(damage(file, what, torn))),
        };
        let (seq, kind, time, command) = head.map_err(|e| {
            damaged(damage(
                EVENTS_FILE,
                &format!("event is not valid ({e})"),
                false,
            ))
        })?;
        let (kind, time) = (&text[kind], &text[time]);
        let record = match check_line(&au_buf, &prev) {
            Ok(record) => record,
            Err(LineProblem::Invalid(what)) => {
                return Err(damaged(damage(AUDIT_FILE, &what.to_string(), false)));
            }
            Err(LineProblem::Unlinked) => {
                let what = "record does not link to the previous record's hash";
                return Err(damaged(damage(AUDIT_FILE, what, false)));
            }
        };
        let mismatch = mismatch(k, seq, &sha256, kind, time, &record);
        if let Some((file, what)) = mismatch {
            return Err(damaged(damage(file, &what, false)));
        }
        if let Some(command) = command {
            commands.insert(text[command].to_owned(), k);
        }
        prev = record.hash;
        if let Some(tree) = &tree {
            pending_leaves.push(record.hash);
            if pending_leaves.len() == BATCH {
                // If the tree worker is gone, the join in `verify_session` reports it.
                let _ = tree.send(std::mem::replace(
                    &mut pending_leaves,
                    Vec::with_capacity(BATCH),
                ));
            }
        }
        if let Some(leaves) = leaves.as_deref_mut() {
            leaves.push(record.hash);
        }
        events_len += len;
        audit_len += au_buf.len() as u64 + 1;
        if events_done && audit_done {
            last_time = Some(time.to_owned());
        }
    }
    if let Some(tree) = tree {
        let _ = tree.send(pending_leaves);
    }
    let verified = Verified {
        count: k - 1,
        terminal_hash: prev,
        merkle_root: None, // filled in from the tree worker, when there is one
        events_len,
        audit_len,
        last_time,
    };
    Ok((verified, commands))
}

/// An event line and its audit record, read side by side.
enum Paired {
    /// Both whole: the event's digest, head, length, and whether it was the file's last line.
    Both(([u8; 64], Result<Head, NotAnEvent>, u64, bool)),
    /// Both files ended together.
    End,
    /// The file at fault, what is wrong, and whether it looks like a torn tail.
    Damaged(&'static str, &'static str, bool),
}

/// Pairs the next event line with the next audit record; any other combination is damage.
fn paired(ev: EventLine, au: Line) -> Paired {
    match (ev, au) {
        (EventLine::End, Line::End) => Paired::End,
        (EventLine::TooLong, _) => {
            Paired::Damaged(EVENTS_FILE, "line exceeds the size limit", false)
        }
        (_, Line::TooLong) => Paired::Damaged(AUDIT_FILE, "line exceeds the size limit", false),
        (EventLine::End, _) => Paired::Damaged(
            AUDIT_FILE,
            "audit record has no event (events.jsonl ends before it)",
            false,
        ),
        (EventLine::Unterminated, au) => Paired::Damaged(
            EVENTS_FILE,
            "event line is incomplete (no newline at the end of the file)",
            au == Line::End,
        ),
        (EventLine::Whole { last, .. }, Line::End) => Paired::Damaged(
            AUDIT_FILE,
            "event has no audit record (audit.jsonl ends before it)",
            last,
        ),
        (EventLine::Whole { last, .. }, Line::Unterminated) => Paired::Damaged(
            AUDIT_FILE,
            "audit record is incomplete (no newline at the end of the file)",
            last,
        ),
        (
            EventLine::Whole {
                sha256,
                head,
                len,
                last,
            },
            Line::Complete,
        ) => Paired::Both((sha256, head, len, last)),
    }
}

/// Where the `k`th event and its linked record disagree (sequence, digest, type, time), if
/// anywhere: the file at fault and what differs.
fn mismatch(
    k: u64,
    seq: u64,
    sha256: &[u8; 64],
    kind: &str,
    time: &str,
    record: &crate::record::Linked<'_>,
) -> Option<(&'static str, String)> {
    if seq != k {
        Some((
            EVENTS_FILE,
            format!("event has seq {seq} where {k} belongs"),
        ))
    } else if record.seq != k {
        Some((
            AUDIT_FILE,
            format!("record has seq {} where {k} belongs", record.seq),
        ))
    } else if record.event_hex != *sha256 {
        Some((
            EVENTS_FILE,
            "event bytes do not match the hash in its audit record".into(),
        ))
    } else if record.kind != kind {
        Some((
            AUDIT_FILE,
            format!("record type {:?} differs from the event's", record.kind),
        ))
    } else if record.time != time {
        Some((
            AUDIT_FILE,
            format!("record time {:?} differs from the event's", record.time),
        ))
    } else {
        None
    }
}

fn open_or_empty(path: &Path) -> Result<BufReader<Box<dyn io::Read + Send>>, AuditError> {
    crate::durable::read_or_empty(path, BUF)
}

fn at_end(reader: &mut impl BufRead) -> io::Result<bool> {
    Ok(reader.fill_buf()?.is_empty())
}
