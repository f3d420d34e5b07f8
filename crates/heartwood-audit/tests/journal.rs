//! The session journal's promises, one test each: appends survive reopening, read-only
//! operations create nothing, retried commands act once, exports and checkpoints work, and one
//! process writes at a time.

mod support;

use heartwood_audit::{AuditError, BackendBytes, Checkpoint, DamageKind, Recovery, SessionStore};
use heartwood_events::{CommandId, Event, Outcome};
use serde_json::json;
use support::{id, message, project_with_session, tree};

#[test]
fn a_new_session_is_registered_by_its_first_writer_and_survives_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(dir.path());
    let sid = id("first");
    let (mut writer, recovery) = store.create_or_open_writer(&sid, "native").expect("create");
    assert_eq!(recovery, Recovery::Clean);
    assert_eq!(writer.count(), 1, "registration is the first event");
    writer.append(None, vec![message("hello")]).expect("append");
    writer.close();

    let (writer, recovery) = store.open_writer(&sid).expect("reopen");
    assert_eq!((writer.count(), recovery), (2, Recovery::Clean));
    writer.close();
    let reader = store.reader(&sid).expect("reader");
    let events: Vec<_> = reader
        .events()
        .expect("events")
        .into_iter()
        .map(|e| e.expect("decodes").event)
        .collect();
    assert!(matches!(&events[0], Event::SessionRegistered { backend, .. } if backend == "native"));
    assert_eq!(events[1], message("hello"));
    assert_eq!(reader.verify().expect("intact").count, 2);
}

#[test]
fn read_only_operations_never_create_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(dir.path());
    assert!(store.list().expect("list").is_empty());
    assert!(matches!(
        store.reader(&id("nope")),
        Err(AuditError::NoSession { .. })
    ));
    assert!(matches!(
        store.open_writer(&id("nope")),
        Err(AuditError::NoSession { .. })
    ));
    assert!(
        tree(dir.path()).is_empty(),
        "created {:?}",
        tree(dir.path())
    );

    let (dir, store, sid) = project_with_session(5);
    let before = tree(dir.path());
    let reader = store.reader(&sid).expect("reader");
    reader.verify().expect("verify");
    reader.checkpoint().expect("checkpoint");
    reader.events().expect("events");
    store.list().expect("list");
    assert_eq!(
        tree(dir.path()),
        before,
        "a read-only operation changed the tree"
    );
}

#[test]
fn a_retried_command_returns_its_first_outcome_across_restarts_without_acting_twice() {
    let (_dir, store, sid) = project_with_session(3);
    let cmd = CommandId::parse("cmd-1").expect("id");
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    assert!(writer.receipt_for(&cmd, "note").expect("lookup").is_none());
    let first = writer
        .complete_command(&cmd, "note", vec![message("once")], json!({"ok": 1}))
        .expect("apply");
    assert!(matches!(first.outcome, Outcome::Applied { last_seq: Some(s), .. } if s.get() == 4));
    writer.close();

    let (mut writer, _) = store.open_writer(&sid).expect("reopen");
    let again = writer.receipt_for(&cmd, "note").expect("lookup").cloned();
    assert_eq!(
        again,
        Some(first),
        "the receipt did not survive the restart"
    );
    assert_eq!(
        writer.count(),
        4,
        "nothing was appended by looking up the receipt"
    );
    let reused = writer.complete_command(&cmd, "export", vec![], json!(null));
    assert!(
        matches!(reused, Err(AuditError::CommandIdReused { .. })),
        "{reused:?}"
    );
    writer.close();
    let on_disk = store
        .reader(&sid)
        .expect("reader")
        .events()
        .expect("events");
    let onces = on_disk
        .iter()
        .filter(|e| e.as_ref().is_ok_and(|e| e.event == message("once")))
        .count();
    assert_eq!(onces, 1);
}

#[test]
fn a_refused_command_is_remembered_as_refused() {
    let (_dir, store, sid) = project_with_session(2);
    let cmd = CommandId::parse("cmd-r").expect("id");
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    let stale = heartwood_events::Refusal::NothingPending {
        lifecycle: heartwood_events::Lifecycle::Idle,
    };
    writer
        .refuse_command(&cmd, "decide", None, None, stale.clone())
        .expect("refuse");
    writer.close();
    let (writer, _) = store.open_writer(&sid).expect("reopen");
    let receipt = writer
        .receipt_for(&cmd, "decide")
        .expect("lookup")
        .expect("present");
    assert_eq!(receipt.outcome, Outcome::Refused(stale));
    assert_eq!(writer.count(), 2);
}

/// Receipts on disk from before refusals were typed hold only the words; they still answer a
/// retry, as a refusal of kind `other` keeping those words, and the session still verifies.
#[test]
fn a_refusal_receipt_written_before_refusals_were_typed_still_answers_a_retry() {
    let (dir, store, sid) = project_with_session(2);
    let receipts = dir
        .path()
        .join(".heartwood/sessions")
        .join(sid.as_str())
        .join("receipts.jsonl");
    let old = concat!(
        r#"{"schema":1,"command_id":"cmd-old","command_type":"decide","#,
        r#""time":"2026-01-02T03:04:05Z","outcome":{"status":"refused","#,
        r#""reason":"revision 3 of set s-1 is stale"}}"#,
        "\n"
    );
    let mut bytes = std::fs::read(&receipts).unwrap_or_default();
    bytes.extend_from_slice(old.as_bytes());
    std::fs::write(&receipts, bytes).expect("write the old receipt");
    let (writer, _) = store.open_writer(&sid).expect("reopen");
    let receipt = writer
        .receipt_for(&CommandId::parse("cmd-old").expect("id"), "decide")
        .expect("lookup")
        .expect("the old receipt is read");
    assert_eq!(
        receipt.outcome,
        Outcome::Refused(heartwood_events::Refusal::Other {
            why: "revision 3 of set s-1 is stale".into()
        })
    );
    writer.close();
    let reader = store.reader(&sid).expect("reader");
    reader
        .verify()
        .expect("the session with an old receipt verifies");
}

#[test]
fn an_export_is_a_self_contained_bundle_and_is_itself_recorded() {
    let (_dir, store, sid) = project_with_session(10);
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    let before = writer.checkpoint().expect("checkpoint");
    let (bundle, seq) = writer.export(None).expect("export");
    assert_eq!(seq.get(), 11);
    writer.close();

    for file in [
        "events.jsonl",
        "audit.jsonl",
        "meta.json",
        "checkpoint.json",
    ] {
        assert!(bundle.join(file).is_file(), "bundle lacks {file}");
    }
    let checkpoint: Checkpoint =
        serde_json::from_slice(&std::fs::read(bundle.join("checkpoint.json")).expect("read"))
            .expect("parse");
    assert_eq!(checkpoint, before);
    let session_events = std::fs::read(store.paths(&sid).events).expect("read");
    let bundle_events = std::fs::read(bundle.join("events.jsonl")).expect("read");
    assert!(
        session_events.starts_with(&bundle_events) && bundle_events.len() < session_events.len()
    );

    let last = store
        .reader(&sid)
        .expect("reader")
        .events()
        .expect("events")
        .pop()
        .expect("some")
        .expect("ok");
    let name = bundle
        .file_name()
        .and_then(|n| n.to_str())
        .expect("name")
        .to_owned();
    assert_eq!(
        last.event,
        Event::ExportRecorded {
            bundle: name,
            format: None,
            destination: None,
            count: 10,
            terminal_hash: before.terminal_hash.to_hex()
        }
    );
}

/// An export is written without the session's writer (and, in the gateway, without its lock):
/// events appended after its end was taken are not in it, and its checkpoint is the one the
/// writer would have given at that end.
#[test]
fn an_export_holds_the_journal_up_to_where_it_was_asked_for_whatever_is_appended_meanwhile() {
    let (_dir, store, sid) = project_with_session(10);
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    let at_ten = writer.checkpoint().expect("checkpoint");
    let end = writer.end().expect("the journal's end");
    for n in 0..5 {
        writer
            .append(None, vec![message(format!("later {n}"))])
            .expect("append");
    }
    let (bundle, event) = end.write_bundle().expect("the bundle");
    writer.close();
    let checkpoint: Checkpoint =
        serde_json::from_slice(&std::fs::read(bundle.join("checkpoint.json")).expect("read"))
            .expect("parse");
    assert_eq!(
        checkpoint, at_ten,
        "the checkpoint of the end it was asked at"
    );
    let lines = std::fs::read_to_string(bundle.join("events.jsonl")).expect("read");
    assert_eq!(lines.lines().count(), 10, "{lines}");
    assert!(!lines.contains("later"), "{lines}");
    assert!(
        matches!(event, Event::ExportRecorded { count: 10, ref terminal_hash, .. }
            if *terminal_hash == at_ten.terminal_hash.to_hex()),
        "{event:?}"
    );
}

#[test]
fn a_truncated_suffix_passes_the_chain_but_fails_against_a_retained_checkpoint() {
    let (_dir, store, sid) = project_with_session(20);
    let checkpoint = store
        .reader(&sid)
        .expect("reader")
        .checkpoint()
        .expect("checkpoint");
    let paths = store.paths(&sid);
    for path in [&paths.events, &paths.audit] {
        let bytes = std::fs::read(path).expect("read");
        let starts = support::line_starts(&bytes);
        std::fs::write(path, &bytes[..starts[starts.len() - 4]]).expect("truncate");
    }
    let reader = store.reader(&sid).expect("reader");
    assert_eq!(
        reader
            .verify()
            .expect("the chain alone cannot see it")
            .count,
        17
    );
    let err = reader
        .verify_against(&checkpoint)
        .expect_err("truncation accepted");
    assert!(err.to_string().contains("truncated suffix"), "{err}");
}

#[test]
fn a_grown_log_extends_its_checkpoint_and_a_rewritten_one_does_not() {
    let (dir, store, sid) = project_with_session(20);
    let checkpoint = store
        .reader(&sid)
        .expect("reader")
        .checkpoint()
        .expect("checkpoint");
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    writer
        .append(
            None,
            (0..13).map(|i| message(format!("later {i}"))).collect(),
        )
        .expect("append");
    writer.close();
    let (verified, report) = store
        .reader(&sid)
        .expect("reader")
        .verify_against(&checkpoint)
        .expect("extends");
    assert_eq!((report.checkpoint_count, verified.count), (20, 33));
    assert!(!report.proof.is_empty());

    // A different history of the same length, under the same id, does not extend it.
    std::fs::remove_dir_all(dir.path().join(".heartwood")).expect("remove");
    let (mut writer, _) = store
        .create_or_open_writer(&sid, "native")
        .expect("recreate");
    writer
        .append(
            None,
            (0..40).map(|i| message(format!("other {i}"))).collect(),
        )
        .expect("append");
    writer.close();
    let err = store
        .reader(&sid)
        .expect("reader")
        .verify_against(&checkpoint)
        .expect_err("forked log accepted");
    assert!(
        matches!(err, AuditError::CheckpointMismatch { .. }),
        "{err}"
    );
}

#[test]
fn a_second_writer_is_refused_with_the_owners_pid() {
    let (_dir, store, sid) = project_with_session(2);
    let (writer, _) = store.open_writer(&sid).expect("first writer");
    let err = store.open_writer(&sid).expect_err("second writer admitted");
    assert!(
        matches!(err, AuditError::Owned { pid: Some(pid), .. } if pid == std::process::id()),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    assert!(matches!(store.remove(&sid), Err(AuditError::Owned { .. })));
    writer.close();
    store
        .open_writer(&sid)
        .expect("free again after close")
        .0
        .close();
}

#[test]
fn stale_writer_metadata_does_not_block_a_new_writer() {
    let (_dir, store, sid) = project_with_session(2);
    let paths = store.paths(&sid);
    std::fs::write(
        &paths.writer,
        br#"{"pid":999999,"host":"elsewhere","started":"2026-01-01T00:00:00.000Z"}"#,
    )
    .expect("plant stale metadata");
    let (writer, _) = store
        .open_writer(&sid)
        .expect("stale metadata is not a lease");
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&paths.writer).expect("read")).expect("json");
    assert_eq!(info["pid"], std::process::id());
    writer.close();
}

#[test]
fn an_interrupted_append_is_reported_by_readers_and_completed_by_the_next_writer() {
    let (_dir, store, sid) = project_with_session(5);
    let (writer, _) = store.open_writer(&sid).expect("open");
    writer
        .crash_after_intent(vec![message("in flight")])
        .expect("stage");
    let err = store
        .reader(&sid)
        .expect("reader")
        .verify()
        .expect_err("reader ignored the intent");
    assert!(
        matches!(
            err,
            AuditError::Interrupted {
                first_seq: 6,
                last_seq: 6,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("heartwood sessions recover"),
        "{err}"
    );

    let (writer, recovery) = store.open_writer(&sid).expect("recover");
    assert_eq!(
        recovery,
        Recovery::CompletedAppend {
            first_seq: 6,
            last_seq: 6
        }
    );
    assert_eq!(writer.count(), 6);
    writer.close();
    let (writer, recovery) = store.open_writer(&sid).expect("reopen");
    assert_eq!(
        (recovery, writer.count()),
        (Recovery::Clean, 6),
        "completed twice"
    );
}

/// The data files' lengths at their last sync, as the first pending intent records them.
fn synced_lengths(journal: &std::path::Path) -> [u64; 3] {
    let text = std::fs::read_to_string(journal).expect("journal");
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .expect("a pending intent");
    let intent: serde_json::Value = serde_json::from_str(first).expect("an intent");
    ["events_len", "audit_len", "receipts_len"].map(|k| intent[k].as_u64().expect(k))
}

#[test]
fn acknowledged_appends_survive_the_loss_of_every_unsynced_data_byte() {
    let (_dir, store, sid) = project_with_session(5);
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    let command = CommandId::parse("c-late").expect("id");
    for i in 0..3 {
        writer
            .append(None, vec![message(format!("unsynced {i}"))])
            .expect("append");
    }
    writer
        .complete_command(
            &command,
            "submit_task",
            vec![message("with a receipt")],
            json!(1),
        )
        .expect("command");
    let paths = writer.paths().clone();
    // A reader sees every acknowledged event while the data files wait for their sync.
    let reader = store.reader(&sid).expect("reader");
    assert_eq!(reader.verify().expect("readable while pending").count, 9);
    writer.crash();

    // Power loss: the page cache is gone, so the data files are as they were at their last
    // sync; only the synced intents remember the four appends.
    let lengths = synced_lengths(&paths.journal);
    for (path, len) in [&paths.events, &paths.audit, &paths.receipts]
        .into_iter()
        .zip(lengths)
    {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(len))
            .expect("truncate");
    }
    assert!(
        matches!(
            reader.verify(),
            Err(AuditError::Interrupted {
                first_seq: 6,
                last_seq: 9,
                ..
            })
        ),
        "a reader must not read past appends a crash cut short"
    );

    let (writer, recovery) = store.open_writer(&sid).expect("recover");
    assert_eq!(
        recovery,
        Recovery::CompletedAppend {
            first_seq: 6,
            last_seq: 9
        }
    );
    assert_eq!(writer.count(), 9);
    assert_eq!(
        writer.receipt(&command).map(|r| r.command_type.as_str()),
        Some("submit_task"),
        "the receipt was restored with its events"
    );
    writer.close();
    assert!(
        std::fs::read(&paths.journal)
            .expect("journal")
            .iter()
            .all(u8::is_ascii_whitespace),
        "a closed writer leaves no intent behind"
    );
    let (writer, recovery) = store.open_writer(&sid).expect("reopen");
    assert_eq!((recovery, writer.count()), (Recovery::Clean, 9));
    writer.close();
    assert_eq!(
        store
            .reader(&sid)
            .expect("reader")
            .verify()
            .expect("intact")
            .count,
        9
    );
}

#[test]
fn an_intent_cut_short_after_pending_ones_is_dropped_and_they_are_kept() {
    let (_dir, store, sid) = project_with_session(5);
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    writer
        .append(None, vec![message("pending")])
        .expect("append");
    let paths = writer.paths().clone();
    writer.crash();
    // The crash came while the next intent was being written: half a line, no data.
    let mut journal = std::fs::read(&paths.journal).expect("journal");
    let end = journal
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .expect("an intent")
        + 1;
    journal.truncate(end);
    journal.extend_from_slice(b"\n{\"first_seq\":7,\"last_seq\":7,\"events_len\":");
    std::fs::write(&paths.journal, &journal).expect("write");
    store
        .reader(&sid)
        .expect("reader")
        .verify()
        .expect("the torn intent appended nothing");

    let (writer, recovery) = store.open_writer(&sid).expect("recover");
    assert_eq!((recovery, writer.count()), (Recovery::Clean, 6));
    writer.close();
}

/// Writes `line` to the backend's log as a backend does (before its durability point) and
/// returns the bytes the journal is to make durable.
fn backend_line(paths: &heartwood_audit::SessionPaths, line: &str) -> BackendBytes {
    use std::io::Write;
    std::fs::create_dir_all(&paths.backend).expect("backend dir");
    let path = paths.backend.join("events.jsonl");
    let len = std::fs::metadata(&path).map_or(0, |m| m.len());
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("open");
    file.write_all(line.as_bytes()).expect("write");
    BackendBytes {
        file: "events.jsonl".into(),
        len,
        bytes: line.into(),
    }
}

#[test]
fn a_backend_log_made_durable_by_the_journal_is_restored_after_a_power_loss() {
    let (_dir, store, sid) = project_with_session(5);
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    let paths = writer.paths().clone();
    let log = paths.backend.join("events.jsonl");
    for step in 1..=3u64 {
        let bytes = backend_line(&paths, &format!("{{\"id\":{step}}}\n"));
        let event = heartwood_events::RecordedEvent::new(
            heartwood_events::Seq::new(5 + step).expect("seq"),
            None,
            message(format!("step {step}")),
        );
        writer
            .append_numbered_with(vec![event], Some(bytes))
            .expect("append");
    }
    // The backend went on writing after its last durability point; nothing covers that line.
    backend_line(&paths, "{\"id\":4}\n");
    let whole = std::fs::read(&log).expect("log");
    writer.crash();

    // A process crash keeps the page cache: the log is left exactly as the backend wrote it,
    // the line past the last durability point included.
    let (writer, recovery) = store.open_writer(&sid).expect("reopen");
    assert_eq!((recovery, writer.count()), (Recovery::Clean, 8));
    assert_eq!(std::fs::read(&log).expect("log"), whole);
    drop(writer);

    // A power loss took the log's line written since the last sync: the journal writes it back.
    let (mut writer, _) = store.open_writer(&sid).expect("reopen");
    let bytes = backend_line(&paths, "{\"id\":5}\n");
    let synced = bytes.len;
    writer
        .append_numbered_with(Vec::new(), Some(bytes))
        .expect("an append of backend bytes alone");
    let before = std::fs::read(&log).expect("log");
    writer.crash();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .and_then(|f| f.set_len(synced))
        .expect("truncate");
    assert!(
        store.reader(&sid).expect("reader").verify().is_err(),
        "the lost log is in flight"
    );
    let (writer, recovery) = store.open_writer(&sid).expect("recover");
    assert_eq!(writer.count(), 8);
    assert!(
        matches!(recovery, Recovery::CompletedAppend { .. }),
        "{recovery:?}"
    );
    assert_eq!(std::fs::read(&log).expect("log"), before);
    writer.close();
}

#[test]
fn a_backend_log_name_that_leaves_the_backend_directory_is_refused() {
    let (_dir, store, sid) = project_with_session(2);
    let (mut writer, _) = store.open_writer(&sid).expect("open");
    let bytes = BackendBytes {
        file: "../events.jsonl".into(),
        len: 0,
        bytes: "{}\n".into(),
    };
    assert!(
        writer
            .append_numbered_with(Vec::new(), Some(bytes))
            .is_err()
    );
    writer.close();
    store
        .reader(&sid)
        .expect("reader")
        .verify()
        .expect("nothing was written");
}

#[test]
fn a_damaged_session_refuses_a_writer_and_names_the_line() {
    let (_dir, store, sid) = project_with_session(8);
    let paths = store.paths(&sid);
    let text = std::fs::read_to_string(&paths.events)
        .expect("read")
        .replacen("message 4", "message X", 1);
    std::fs::write(&paths.events, text).expect("tamper");
    let err = store
        .open_writer(&sid)
        .expect_err("damaged session opened for writing");
    match err {
        AuditError::Damaged { damage, .. } => {
            assert_eq!(
                (damage.file, damage.line, damage.kind),
                ("events.jsonl", 4, DamageKind::Modification)
            );
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn listing_shows_sessions_with_counts_most_recent_first() {
    let (_dir, store, sid) = project_with_session(4);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (mut writer, _) = store
        .create_or_open_writer(&id("s2"), "native")
        .expect("create");
    writer.append(None, vec![message("x")]).expect("append");
    let listed = store.list().expect("list");
    assert_eq!(
        listed
            .iter()
            .map(|s| (s.id.as_str(), s.events))
            .collect::<Vec<_>>(),
        [("s2", 2), (sid.as_str(), 4)]
    );
    assert_eq!(
        listed[0].writer.as_ref().map(|w| w.pid),
        Some(std::process::id())
    );
    assert!(listed[1].writer.is_none());
}

#[test]
fn removing_a_session_deletes_everything_in_it() {
    let (dir, store, sid) = project_with_session(3);
    store.remove(&sid).expect("remove");
    assert!(!store.paths(&sid).dir.exists());
    assert!(store.list().expect("list").is_empty());
    assert!(matches!(
        store.remove(&sid),
        Err(AuditError::NoSession { .. })
    ));
    drop(dir);
}

#[test]
fn a_live_session_verifies_while_its_writer_appends_beside_the_reader() {
    let (_dir, store, sid) = project_with_session(3);
    let (mut writer, _) = store.open_writer(&sid).expect("writer");
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for n in 0..300 {
                let command = CommandId::parse(&format!("c{n}")).expect("id");
                writer
                    .complete_command(
                        &command,
                        "note",
                        vec![message(format!("line {n}"))],
                        json!(n),
                    )
                    .expect("append");
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let mut verified = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let reader = store.reader(&sid).expect("reader");
            if let Err(e) = reader.verify() {
                panic!("a live session failed to verify after {verified} verifications: {e}");
            }
            verified += 1;
        }
    });
}
