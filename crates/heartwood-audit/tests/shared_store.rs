//! The shared (PostgreSQL) session store's promises, against a real PostgreSQL started by the
//! test: the same bytes as the file store, one writer across replicas by a fenced lease, a
//! takeover that continues the chain, and an unreachable store that acknowledges nothing.

mod support;

use std::time::Duration;

use heartwood_audit::{AuditError, SessionImage, SessionStore, SharedStore};
use heartwood_events::{CommandId, Event};
use heartwood_testkit::postgres::PgServer;
use serde_json::json;
use support::{id, message, project_with_session, python_verify};

/// A replica's view of the store: its own holder name, its own project folder.
fn replica(server: &PgServer, lease: Duration) -> (tempfile::TempDir, SessionStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = SharedStore::new(&server.url())
        .expect("url")
        .with_lease(lease);
    let store = SessionStore::in_shared(dir.path(), shared);
    (dir, store)
}

fn command(name: &str) -> CommandId {
    CommandId::parse(name).expect("command id")
}

/// Runs the shared store's SQL directly, as an operator (or a partition) would affect it.
fn sql(server: &PgServer, statement: &str) {
    let mut client =
        postgres::Client::connect(&server.url(), postgres::NoTls).expect("connect to the store");
    client.batch_execute(statement).expect("statement");
}

#[test]
fn a_session_copied_to_postgres_and_back_keeps_every_byte_and_verifies() {
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (files_dir, files, sid) = project_with_session(40);
    {
        let (mut writer, _) = files.open_writer(&sid).expect("open");
        writer
            .complete_command(&command("c1"), "say", vec![message("after")], json!({}))
            .expect("command");
    }
    let (_replica_dir, shared) = replica(&server, Duration::from_secs(5));
    let copied = files.copy_to(&sid, &shared).expect("copy to postgres");
    assert_eq!(copied.count, 41);

    let original = SessionImage::read_files(&files.paths(&sid)).expect("read files");
    let kept = shared.shared().expect("shared").image(&sid).expect("image");
    assert_eq!(
        kept, original,
        "the store holds the file store's bytes exactly"
    );

    let back_dir = tempfile::tempdir().expect("tempdir");
    let back = SessionStore::new(back_dir.path());
    shared.copy_to(&sid, &back).expect("copy back to files");
    let returned = SessionImage::read_files(&back.paths(&sid)).expect("read copy");
    assert_eq!(returned, original);
    let (accepted, out, err) = python_verify(&back.paths(&sid).dir);
    assert!(
        accepted,
        "the independent verifier refused the copy: {out} {err}"
    );

    let again = files.copy_to(&sid, &shared);
    assert!(
        matches!(again, Err(AuditError::AlreadyExists { .. })),
        "{again:?}"
    );
    drop(files_dir);
}

#[test]
fn appends_to_a_session_in_postgres_chain_like_files_and_keep_their_receipts() {
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (_dir, store) = replica(&server, Duration::from_secs(5));
    let sid = id("shared-appends");
    assert!(store.list().expect("list").is_empty());
    let (mut writer, _) = store.create_or_open_writer(&sid, "native").expect("create");
    assert!(writer.fencing_token().is_some());
    writer
        .append(None, vec![message("one"), message("two")])
        .expect("append");
    writer
        .complete_command(
            &command("c-1"),
            "say",
            vec![message("three")],
            json!({"ok": 1}),
        )
        .expect("command");
    writer.close();

    let reader = store.reader(&sid).expect("reader");
    assert_eq!(reader.verify().expect("verifies").count, 4);
    assert_eq!(reader.receipts().expect("receipts").len(), 1);
    let listed = store.list().expect("list");
    assert_eq!((listed.len(), listed[0].events), (1, 4));

    // Another replica opens it and finds the receipt: a retry is answered, not run again.
    let (_other_dir, other) = replica(&server, Duration::from_secs(5));
    let (writer, _) = other.open_writer(&sid).expect("another replica opens it");
    assert_eq!(writer.count(), 4);
    assert!(writer.receipt(&command("c-1")).is_some());
}

#[test]
fn a_replica_whose_lease_expired_cannot_append_after_another_took_the_session() {
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (_a_dir, a) = replica(&server, Duration::from_secs(30));
    let (_b_dir, b) = replica(&server, Duration::from_secs(30));
    let sid = id("fenced");
    let (mut paused, _) = a.create_or_open_writer(&sid, "native").expect("a creates");
    paused
        .append(None, vec![message("from a")])
        .expect("a appends");
    assert!(matches!(b.open_writer(&sid), Err(AuditError::Owned { .. })));

    // Replica a is paused past its lease (its renewals stop reaching the store).
    sql(
        &server,
        "UPDATE heartwood_leases SET expires_at = now() - interval '1 second'",
    );
    let (mut taker, _) = b.open_writer(&sid).expect("b takes the expired lease");
    assert!(taker.previous_writer_crashed());
    assert!(taker.fencing_token() > paused.fencing_token());
    taker
        .append(None, vec![message("from b")])
        .expect("b appends");

    let refused = paused.append(None, vec![message("late from a")]);
    assert!(
        matches!(refused, Err(AuditError::LeaseLost { .. })),
        "{refused:?}"
    );
    drop(paused);
    taker.close();
    let reader = b.reader(&sid).expect("reader");
    assert_eq!(reader.verify().expect("verifies").count, 3);
    let texts: Vec<Event> = reader
        .events()
        .expect("events")
        .into_iter()
        .map(|e| e.expect("decodes").event)
        .collect();
    assert_eq!(texts[1..], [message("from a"), message("from b")]);
}

#[test]
fn of_replicas_racing_for_one_lease_exactly_one_writes() {
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (_dir, first) = replica(&server, Duration::from_secs(30));
    let sid = id("raced");
    first
        .create_or_open_writer(&sid, "native")
        .expect("create")
        .0
        .close();
    let replicas: Vec<_> = (0..6)
        .map(|_| replica(&server, Duration::from_secs(30)))
        .collect();
    let barrier = std::sync::Barrier::new(replicas.len());
    let outcomes: Vec<Result<u64, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = replicas
            .iter()
            .map(|(_, store)| {
                let (barrier, sid) = (&barrier, &sid);
                scope.spawn(move || {
                    barrier.wait();
                    match store.open_writer(sid) {
                        Ok((mut writer, _)) => {
                            let seq = writer.append(None, vec![message("winner")]);
                            // Held until every racer has tried.
                            std::thread::sleep(Duration::from_millis(200));
                            seq.map(|s| s.get()).map_err(|e| e.to_string())
                        }
                        Err(e) => Err(e.to_string()),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("racer"))
            .collect()
    });
    let winners: Vec<_> = outcomes.iter().filter(|o| o.is_ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .filter(|o| o.is_err())
            .all(|e| e.as_ref().err().is_some_and(|e| e.contains("is owned by")))
    );
    let reader = first.reader(&sid).expect("reader");
    assert_eq!(reader.verify().expect("verifies").count, 2);
}

#[test]
fn a_replica_that_crashed_is_taken_over_and_the_chain_continues() {
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (_a_dir, a) = replica(&server, Duration::from_secs(30));
    let (_b_dir, b) = replica(&server, Duration::from_secs(30));
    let sid = id("taken-over");
    let (mut writer, _) = a.create_or_open_writer(&sid, "native").expect("create");
    writer
        .complete_command(
            &command("c-ran"),
            "say",
            vec![message("ran once")],
            json!({}),
        )
        .expect("command");
    writer.crash();

    let (mut next, _) = b.open_writer(&sid).expect("b takes over");
    assert!(next.previous_writer_crashed());
    assert_eq!(next.count(), 2);
    assert!(
        next.receipt(&command("c-ran")).is_some(),
        "the receipt came along"
    );
    next.append(None, vec![message("continued")])
        .expect("append");
    next.close();
    assert_eq!(
        b.reader(&sid).expect("reader").verify().expect("ok").count,
        3
    );
}

#[test]
fn an_unreachable_store_refuses_appends_and_loses_nothing_acknowledged() {
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (_dir, store) = replica(&server, Duration::from_secs(30));
    let sid = id("outage");
    let (mut writer, _) = store.create_or_open_writer(&sid, "native").expect("create");
    writer.append(None, vec![message("kept")]).expect("append");

    server.stop();
    let refused = writer.append(None, vec![message("not acknowledged")]);
    assert!(
        matches!(refused, Err(AuditError::StoreUnavailable { .. })),
        "{refused:?}"
    );
    assert!(matches!(
        store.list(),
        Err(AuditError::StoreUnavailable { .. })
    ));
    drop(writer);

    server.resume().expect("restart the store");
    // The dead writer could not release its lease: it is taken over once it expires.
    sql(
        &server,
        "UPDATE heartwood_leases SET expires_at = now() - interval '1 second'",
    );
    let (writer, _) = store.open_writer(&sid).expect("reopen after the outage");
    assert_eq!(writer.count(), 2, "everything acknowledged, nothing else");
}
