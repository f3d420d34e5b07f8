//! Mutation suite over a generated 200-event session: every single-byte change in either file,
//! every swap of two lines, every deleted line, and a truncation at every byte offset of the
//! last pair must each be refused; a torn tail covered by a recovery intent must be completed.
//! Zero mutations may be accepted.

mod support;

use std::path::Path;

use heartwood_audit::{AuditError, DamageKind, Recovery, SessionReader, SessionStore};
use heartwood_events::SessionId;
use support::{line_starts, project_with_session};

const EVENTS: usize = 200;

/// A session plus pristine copies of its two files, restored between mutations.
struct Fixture {
    _dir: tempfile::TempDir,
    store: SessionStore,
    sid: SessionId,
    events: Vec<u8>,
    audit: Vec<u8>,
}

impl Fixture {
    fn new() -> Self {
        let (dir, store, sid) = project_with_session(EVENTS);
        let paths = store.paths(&sid);
        let events = std::fs::read(&paths.events).expect("read");
        let audit = std::fs::read(&paths.audit).expect("read");
        Fixture {
            _dir: dir,
            store,
            sid,
            events,
            audit,
        }
    }

    fn reader(&self) -> SessionReader {
        self.store.reader(&self.sid).expect("reader")
    }

    /// Writes the given file contents, verifies, and restores the originals.
    fn verify_with(&self, events: &[u8], audit: &[u8]) -> Result<u64, AuditError> {
        let paths = self.store.paths(&self.sid);
        let changed = [
            (&paths.events, events, &self.events),
            (&paths.audit, audit, &self.audit),
        ];
        for (path, bytes, original) in changed {
            if bytes != &original[..] {
                write(path, bytes);
            }
        }
        let result = self.reader().verify().map(|v| v.count);
        for (path, bytes, original) in changed {
            if bytes != &original[..] {
                write(path, original);
            }
        }
        result
    }

    /// Applies `mutate` to one file's bytes and requires verification to refuse the result.
    fn assert_refused(&self, in_events: bool, what: &str, mutated: &[u8]) {
        let result = if in_events {
            self.verify_with(mutated, &self.audit)
        } else {
            self.verify_with(&self.events, mutated)
        };
        let file = if in_events {
            "events.jsonl"
        } else {
            "audit.jsonl"
        };
        match result {
            Err(AuditError::Damaged { .. }) => {}
            other => panic!("{file}: {what} was not refused: {other:?}"),
        }
    }
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write");
}

fn files(f: &Fixture) -> [(bool, &Vec<u8>); 2] {
    [(true, &f.events), (false, &f.audit)]
}

#[test]
fn the_pristine_session_verifies() {
    let f = Fixture::new();
    assert_eq!(
        f.verify_with(&f.events, &f.audit).expect("intact"),
        EVENTS as u64
    );
}

#[test]
fn every_single_byte_change_is_refused() {
    let f = Fixture::new();
    let mut refused = 0usize;
    for (in_events, original) in files(&f) {
        let mut bytes = original.clone();
        for i in 0..bytes.len() {
            // Flip the lowest bit everywhere; also flip letter case, which a case-insensitive
            // hex comparison would wrongly accept.
            let mut changes = vec![bytes[i] ^ 0x01];
            if bytes[i].is_ascii_alphabetic() {
                changes.push(bytes[i] ^ 0x20);
            }
            for changed in changes {
                let saved = bytes[i];
                bytes[i] = changed;
                f.assert_refused(
                    in_events,
                    &format!("byte {i} changed to {changed:#04x}"),
                    &bytes,
                );
                bytes[i] = saved;
                refused += 1;
            }
        }
    }
    assert!(
        refused > 2 * EVENTS * 100,
        "only {refused} mutations were tried"
    );
}

#[test]
fn every_swap_of_two_lines_is_refused() {
    let f = Fixture::new();
    for (in_events, original) in files(&f) {
        let lines: Vec<&[u8]> = original.split_inclusive(|&b| b == b'\n').collect();
        assert_eq!(lines.len(), EVENTS);
        for i in 0..lines.len() {
            for j in i + 1..lines.len() {
                let mut swapped = lines.clone();
                swapped.swap(i, j);
                f.assert_refused(
                    in_events,
                    &format!("lines {} and {} swapped", i + 1, j + 1),
                    &swapped.concat(),
                );
            }
        }
    }
}

#[test]
fn every_deleted_line_is_refused() {
    let f = Fixture::new();
    for (in_events, original) in files(&f) {
        let lines: Vec<&[u8]> = original.split_inclusive(|&b| b == b'\n').collect();
        for i in 0..lines.len() {
            let mut shorter = lines.clone();
            shorter.remove(i);
            f.assert_refused(
                in_events,
                &format!("line {} deleted", i + 1),
                &shorter.concat(),
            );
        }
    }
}

#[test]
fn truncation_at_every_offset_of_the_last_pair_is_refused_and_named_as_torn() {
    let f = Fixture::new();
    for (in_events, original) in files(&f) {
        let starts = line_starts(original);
        let last_line_start = starts[starts.len() - 2];
        for cut in last_line_start..original.len() {
            let result = if in_events {
                f.verify_with(&original[..cut], &f.audit)
            } else {
                f.verify_with(&f.events, &original[..cut])
            };
            match result {
                Err(AuditError::Damaged { damage, .. }) => {
                    assert_eq!(damage.line, EVENTS as u64, "cut at {cut}");
                    // Only the audit side can be torn by a crash: events are written first.
                    if !in_events {
                        assert_eq!(damage.kind, DamageKind::TornTail, "cut at {cut}: {damage}");
                    }
                }
                other => panic!("truncation at byte {cut} was not refused: {other:?}"),
            }
        }
    }
}

#[test]
fn a_torn_tail_covered_by_an_intent_is_completed_exactly_once_at_every_offset() {
    let f = Fixture::new();
    let paths = f.store.paths(&f.sid);
    let (writer, _) = f.store.open_writer(&f.sid).expect("open");
    writer
        .crash_after_intent(vec![support::message("the interrupted append")])
        .expect("stage");
    let journal = std::fs::read(&paths.journal).expect("journal");
    // The files as recovery must leave them, from one completion.
    let (writer, _) = f.store.open_writer(&f.sid).expect("complete once");
    writer.close();
    let full_events = std::fs::read(&paths.events).expect("read");
    let full_audit = std::fs::read(&paths.audit).expect("read");
    let (ev_line, au_line) = (&full_events[f.events.len()..], &full_audit[f.audit.len()..]);

    // Events are appended before audit records, but either may reach the disk first, so
    // every prefix of each is tried with the other absent or whole.
    let mut cases = Vec::new();
    for e in 0..=ev_line.len() {
        cases.push((e, 0));
        cases.push((e, au_line.len()));
    }
    for a in 0..=au_line.len() {
        cases.push((ev_line.len(), a));
        cases.push((0, a));
    }
    for (e, a) in cases {
        write(&paths.events, &[&f.events[..], &ev_line[..e]].concat());
        write(&paths.audit, &[&f.audit[..], &au_line[..a]].concat());
        write(&paths.journal, &journal);
        let (writer, recovery) = f
            .store
            .open_writer(&f.sid)
            .unwrap_or_else(|err| panic!("events +{e}, audit +{a}: {err}"));
        // Bytes all in place waited only for their sync: nothing was interrupted.
        let expected = if (e, a) == (ev_line.len(), au_line.len()) {
            Recovery::Clean
        } else {
            Recovery::CompletedAppend {
                first_seq: 201,
                last_seq: 201,
            }
        };
        assert_eq!(recovery, expected, "events +{e}, audit +{a}");
        writer.close();
        assert_eq!(
            std::fs::read(&paths.events).expect("read"),
            full_events,
            "events +{e}, audit +{a}"
        );
        assert_eq!(
            std::fs::read(&paths.audit).expect("read"),
            full_audit,
            "events +{e}, audit +{a}"
        );
    }
}

#[test]
fn an_intent_does_not_excuse_bytes_that_are_not_the_intended_ones() {
    let f = Fixture::new();
    let paths = f.store.paths(&f.sid);
    let (writer, _) = f.store.open_writer(&f.sid).expect("open");
    writer
        .crash_after_intent(vec![support::message("intended")])
        .expect("stage");
    let mut events = f.events.clone();
    events.extend_from_slice(b"{\"something\":\"else\"}\n");
    write(&paths.events, &events);
    let err = f
        .store
        .open_writer(&f.sid)
        .expect_err("foreign bytes completed");
    assert!(matches!(err, AuditError::Damaged { .. }), "{err}");
    assert_eq!(
        std::fs::read(&paths.events).expect("read"),
        events,
        "evidence was not kept"
    );
}
