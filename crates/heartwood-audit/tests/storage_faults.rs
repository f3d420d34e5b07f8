//! Injected storage faults at every write point of an append, of the sync of the data files
//! that follows every few appends, and of an export: a full disk, an I/O error, a short write
//! and a failed fsync. Each fails the operation with an
//! error that names the file and the cause; nothing acknowledged before is lost; the session
//! reopens (completing or discarding the interrupted append, never leaving it half) and
//! verifies; and the next append after the fault works. The number of points covered is
//! printed (`cargo test -p heartwood-audit --test storage_faults -- --nocapture`).

mod support;

use heartwood_audit::SessionStore;
use heartwood_audit::faults::{self, StorageFault};
use heartwood_events::{CommandId, Event};
use support::{id, message};

const FAULTS: [StorageFault; 4] = [
    StorageFault::NoSpace,
    StorageFault::Io,
    StorageFault::ShortWrite,
    StorageFault::FailedSync,
];

/// A session holding the registration and three acknowledged messages.
fn session() -> (tempfile::TempDir, SessionStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(dir.path());
    let (mut writer, _) = store
        .create_or_open_writer(&id("s1"), "native")
        .expect("create");
    for i in 1..=3 {
        writer
            .append(None, vec![message(format!("acknowledged {i}"))])
            .expect("append");
    }
    writer.close();
    (dir, store)
}

fn messages(store: &SessionStore) -> Vec<Event> {
    store
        .reader(&id("s1"))
        .expect("reader")
        .events()
        .expect("events")
        .into_iter()
        .map(|e| e.expect("every line decodes").event)
        .collect()
}

/// What a command's append writes (events, audit lines and a receipt), then the sync of the
/// data files that every few appends and a closing writer make. `Ok(false)` when the append
/// was acknowledged and the sync failed.
fn append_with_command(writer: &mut heartwood_audit::SessionWriter) -> Result<bool, String> {
    let command = CommandId::parse("c-pending").expect("id");
    writer
        .complete_command(
            &command,
            "submit_task",
            vec![message("pending")],
            serde_json::Value::Null,
        )
        .map_err(|e| e.to_string())?;
    Ok(writer.sync().is_ok())
}

#[test]
fn every_write_point_of_an_append_fails_cleanly_and_loses_nothing_acknowledged() {
    // Count the write points of one clean append (with a receipt: all three files).
    let (_dir, store) = session();
    let (mut writer, _) = store.open_writer(&id("s1")).expect("open");
    faults::reset();
    append_with_command(&mut writer).expect("a clean append");
    let points = faults::points_seen();
    writer.close();
    assert!(
        points >= 9,
        "an append and a sync pass {points} write points"
    );

    let mut covered = 0;
    for fault in FAULTS {
        for at in 0..points {
            let (_dir, store) = session();
            let before = messages(&store);
            let (mut writer, _) = store.open_writer(&id("s1")).expect("open");
            faults::reset();
            faults::inject(at, fault);
            let outcome = append_with_command(&mut writer);
            faults::reset();
            let acknowledged = match outcome {
                Ok(synced) => {
                    assert!(!synced, "{fault:?} at point {at} went unnoticed");
                    true
                }
                Err(why) => {
                    assert!(
                        why.contains("sessions/s1/"),
                        "{fault:?} at {at}: the error names no file: {why}"
                    );
                    if fault == StorageFault::NoSpace {
                        assert!(why.contains("No space left"), "{why}");
                    }
                    false
                }
            };
            // The writer that failed refuses to go on; a new one (a new process) reopens.
            assert!(writer.append(None, vec![message("refused")]).is_err());
            writer.close();
            // Before anyone reopens it, a reader finds it intact, or intact with the failed
            // append waiting for recovery; never damaged.
            match store.reader(&id("s1")).expect("reader").verify() {
                Ok(_) | Err(heartwood_audit::AuditError::Interrupted { .. }) => {}
                Err(e) => panic!("{fault:?} at {at}: a reader found {e}"),
            }
            let (mut reopened, recovery) = store
                .open_writer(&id("s1"))
                .unwrap_or_else(|e| panic!("{fault:?} at {at}: cannot reopen: {e}"));
            let after = messages(&store);
            assert_eq!(
                after[..before.len()],
                before[..],
                "{fault:?} at {at}: an acknowledged event changed"
            );
            // The interrupted append is either whole or absent, never half ({recovery:?}).
            match after.len() - before.len() {
                0 => assert!(
                    !acknowledged,
                    "{fault:?} at {at}: an acknowledged append was lost"
                ),
                1 => assert_eq!(after[before.len()], message("pending")),
                n => panic!("{fault:?} at {at}: {n} events appeared"),
            }
            reopened
                .append(None, vec![message("after the fault")])
                .unwrap_or_else(|e| panic!("{fault:?} at {at}: the next append failed: {e}"));
            reopened.close();
            let verified = store.reader(&id("s1")).expect("reader").verify();
            assert!(
                verified.is_ok(),
                "{fault:?} at {at} ({recovery:?}): {verified:?}"
            );
            covered += 1;
        }
    }
    println!("storage faults: {covered} (fault, write point) pairs of a paired append covered");
}

#[test]
fn a_failed_export_leaves_nothing_half_made_and_the_next_one_works() {
    let (_dir, store) = session();
    let (mut writer, _) = store.open_writer(&id("s1")).expect("open");
    faults::reset();
    writer.write_export_bundle().expect("a clean export");
    let points = faults::points_seen();
    writer.close();
    let exports = |store: &SessionStore| {
        let dir = store.paths(&id("s1")).exports;
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let mut covered = 0;
    for fault in FAULTS {
        for at in 0..points {
            let (_dir, store) = session();
            let (mut writer, _) = store.open_writer(&id("s1")).expect("open");
            faults::reset();
            faults::inject(at, fault);
            let failed = writer.write_export_bundle();
            faults::reset();
            assert!(failed.is_err(), "{fault:?} at point {at} went unnoticed");
            writer.close();
            let left = exports(&store);
            assert!(
                left.iter()
                    .all(|n| !n.to_string_lossy().starts_with(".staging")),
                "{fault:?} at {at}: {left:?}"
            );
            let (mut reopened, _) = store.open_writer(&id("s1")).expect("reopen");
            reopened
                .write_export_bundle()
                .unwrap_or_else(|e| panic!("{fault:?} at {at}: the next export failed: {e}"));
            reopened.close();
            assert!(store.reader(&id("s1")).expect("reader").verify().is_ok());
            covered += 1;
        }
    }
    println!("storage faults: {covered} (fault, write point) pairs of an export covered");
}
