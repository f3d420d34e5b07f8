//! Real processes against one session: a writer SIGKILLed at random moments loses nothing it
//! acknowledged and duplicates nothing, and of two processes racing for a session exactly one
//! becomes its writer.
//!
//! The child roles are this same test binary re-run with an environment variable naming the
//! role, so the children run the real library code in a separate process.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use heartwood_audit::{AuditError, SessionStore};
use heartwood_events::Event;
use support::{id, message};

const ROLE: &str = "HEARTWOOD_TEST_ROLE";
const PROJECT: &str = "HEARTWOOD_TEST_PROJECT";
const KILLS: usize = 200;

/// Re-runs this test binary as `role` (one of the `child_*` tests below) in `project`.
fn spawn_child(role: &str, project: &Path) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([role, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(PROJECT, project)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child")
}

fn child_context(role: &str) -> Option<SessionStore> {
    if std::env::var(ROLE).ok()? != role {
        return None;
    }
    Some(SessionStore::new(Path::new(&std::env::var(PROJECT).ok()?)))
}

/// Child role: append forever, printing `ack <text>` after each append returns.
#[test]
fn child_appender() {
    let Some(store) = child_context("child_appender") else {
        return;
    };
    let run = std::process::id();
    let (mut writer, _) = store
        .create_or_open_writer(&id("crash"), "native")
        .expect("open");
    for i in 0.. {
        let text = format!("run {run} append {i}");
        // Batches of one to three events: a kill can land inside any of them.
        let events: Vec<Event> = (0..=(i % 3))
            .map(|j| message(format!("{text}.{j}")))
            .collect();
        writer.append(None, events).expect("append");
        println!("@@ack {text}");
    }
}

/// Child role: try to become the writer; report the outcome and hold the lease a while.
#[test]
fn child_racer() {
    let Some(store) = child_context("child_racer") else {
        return;
    };
    match store.create_or_open_writer(&id("race"), "native") {
        Ok((writer, _)) => {
            println!("@@outcome writer {}", std::process::id());
            std::thread::sleep(Duration::from_millis(400));
            writer.close();
        }
        Err(AuditError::Owned { .. }) => println!("@@outcome refused"),
        Err(other) => println!("@@outcome error {other}"),
    }
}

/// Child role: make session "stalled" (its registration and three messages, acknowledged), then
/// start one more append of two events and stop at write point `HEARTWOOD_TEST_STALL_AT` of it
/// (2: after the intent's fsync, before any data byte; 3: after the events, before their audit
/// records), holding the lease, until the parent kills it.
#[test]
fn child_stalls_mid_append() {
    let Some(store) = child_context("child_stalls_mid_append") else {
        return;
    };
    let at: usize = std::env::var("HEARTWOOD_TEST_STALL_AT")
        .ok()
        .and_then(|v| v.parse().ok())
        .expect("a write point");
    let (mut writer, _) = store
        .create_or_open_writer(&id("stalled"), "native")
        .expect("open");
    writer
        .append(
            None,
            (1..=3).map(|i| message(format!("kept {i}"))).collect(),
        )
        .expect("append");
    println!("@@stalling");
    heartwood_audit::faults::reset();
    heartwood_audit::faults::inject(at, heartwood_audit::faults::StorageFault::Stall);
    writer
        .append(None, vec![message("pending 1"), message("pending 2")])
        .expect("the stall never returns");
    unreachable!("the append stalls until the process is killed");
}

/// The text after `marker` on a line (libtest may print the test name before it).
fn marked(line: &str, marker: &str) -> Option<String> {
    line.split_once(marker).map(|(_, rest)| rest.to_owned())
}

fn outcome_lines(child: Child, prefix: &str) -> Vec<String> {
    let stdout = child.stdout.expect("piped");
    BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| marked(&l, prefix))
        .collect()
}

#[test]
fn a_writer_killed_at_random_moments_loses_and_duplicates_nothing_it_acknowledged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(dir.path());
    let sid = id("crash");
    let mut acknowledged = Vec::new();
    let mut recoveries = 0;
    let mut waiting = 0;
    for kill in 0..KILLS {
        let mut child = spawn_child("child_appender", dir.path());
        let stdout = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| marked(&l, "@@ack "))
                .collect::<Vec<_>>()
        });
        std::thread::sleep(Duration::from_micros(fastrand::u64(2_000..40_000)));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        let acks = reader.join().expect("reader thread");

        // Another process looking before anyone takes the session over finds it intact, or
        // intact with an append waiting for recovery; never damaged. (Every fourth kill: a
        // waiting append is looked at for a second before it is reported.)
        if kill % 4 == 0 {
            match store.reader(&sid).map(|r| r.verify()) {
                Ok(Ok(_)) | Err(AuditError::NoSession { .. }) => {}
                Ok(Err(AuditError::Interrupted { .. })) => waiting += 1,
                Ok(Err(e)) | Err(e) => panic!("after kill {kill}, a reader found: {e}"),
            }
        }

        // Reopening completes any interrupted append and verifies the whole session.
        let (writer, recovery) = store
            .open_writer(&sid)
            .or_else(|e| match e {
                // Killed before registering: nothing to recover yet.
                AuditError::NoSession { .. } => store.create_or_open_writer(&sid, "native"),
                other => Err(other),
            })
            .unwrap_or_else(|e| panic!("after kill {kill}: {e}"));
        if recovery != heartwood_audit::Recovery::Clean {
            recoveries += 1;
        }
        writer.close();
        acknowledged.extend(acks);
    }

    let texts: Vec<String> = store
        .reader(&sid)
        .expect("reader")
        .events()
        .expect("events")
        .into_iter()
        .filter_map(|e| match e.expect("decodes").event {
            Event::Message { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    let mut counts = std::collections::HashMap::<&str, usize>::new();
    for text in &texts {
        *counts.entry(text.as_str()).or_default() += 1;
    }
    assert!(
        counts.values().all(|&n| n == 1),
        "an event was recorded twice"
    );
    for ack in &acknowledged {
        assert!(
            counts.contains_key(format!("{ack}.0").as_str()),
            "acknowledged {ack:?} is missing"
        );
    }
    assert!(
        acknowledged.len() > KILLS,
        "the children barely ran ({} acks)",
        acknowledged.len()
    );
    let verified = store
        .reader(&sid)
        .expect("reader")
        .verify()
        .expect("intact after all kills");
    eprintln!(
        "{KILLS} kills, {} acknowledged appends, {} events, {recoveries} recoveries, \
         {waiting} of {} looked at first by a reader found waiting for recovery",
        acknowledged.len(),
        verified.count,
        KILLS / 4
    );
}

#[test]
fn of_two_processes_racing_for_one_session_exactly_one_becomes_the_writer() {
    for round in 0..10 {
        let dir = tempfile::tempdir().expect("tempdir");
        let children = [
            spawn_child("child_racer", dir.path()),
            spawn_child("child_racer", dir.path()),
        ];
        let outcomes: Vec<String> = children
            .into_iter()
            .flat_map(|c| outcome_lines(c, "@@outcome "))
            .collect();
        assert_eq!(outcomes.len(), 2, "round {round}: {outcomes:?}");
        let writers = outcomes.iter().filter(|o| o.starts_with("writer")).count();
        let refused = outcomes.iter().filter(|o| *o == "refused").count();
        assert_eq!((writers, refused), (1, 1), "round {round}: {outcomes:?}");
        let store = SessionStore::new(dir.path());
        assert_eq!(
            store
                .reader(&id("race"))
                .expect("reader")
                .verify()
                .expect("intact")
                .count,
            1
        );
    }
}

/// Kills a `child_stalls_mid_append` stopped at write point `at` of its second append and
/// returns the project it wrote.
fn kill_mid_append(at: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "child_stalls_mid_append",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "child_stalls_mid_append")
        .env(PROJECT, dir.path())
        .env("HEARTWOOD_TEST_STALL_AT", at.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("piped");
    let stalling = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("@@stalling"));
    assert!(stalling, "the child ended before its second append");
    // The stall is the next write point after the marker: wait until the intent is on disk
    // (and, at point 3, the events), so the kill lands exactly between intent and data.
    let journal = dir.path().join(".heartwood/sessions/stalled/journal.json");
    let events = dir.path().join(".heartwood/sessions/stalled/events.jsonl");
    let waited = std::time::Instant::now();
    loop {
        let intent = std::fs::read_to_string(&journal).unwrap_or_default();
        let events = std::fs::read_to_string(&events).unwrap_or_default();
        let placed = if at == 2 {
            intent.contains("pending 2")
        } else {
            events.contains("pending 2")
        };
        if placed {
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the child never reached point {at}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        child.try_wait().expect("poll").is_none(),
        "the child stopped by itself"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    dir
}

#[test]
fn a_process_killed_between_intent_and_data_leaves_a_session_verified_intact_and_waiting_for_recovery()
 {
    for at in [2, 3] {
        let dir = kill_mid_append(at);
        let store = SessionStore::new(dir.path());
        let sid = id("stalled");
        // Another process looks: the four acknowledged events are intact, the two pending ones
        // wait whole in the intent and continue the chain; that is not damage.
        let err = store
            .reader(&sid)
            .expect("reader")
            .verify()
            .expect_err("an append is waiting");
        assert!(
            matches!(
                err,
                AuditError::Interrupted {
                    first_seq: 5,
                    last_seq: 6,
                    ..
                }
            ),
            "point {at}: {err}"
        );
        let said = err.to_string();
        assert!(said.contains("intact through event 4"), "{said}");
        assert!(
            said.contains("heartwood sessions recover stalled"),
            "{said}"
        );

        // Tampering is still tampering: a changed acknowledged event, or a changed pending
        // one, is damage, not an append waiting for recovery.
        let paths = store.paths(&sid);
        let original = std::fs::read_to_string(&paths.events).expect("events");
        std::fs::write(&paths.events, original.replacen("kept 2", "kept 9", 1)).expect("write");
        let tampered = store.reader(&sid).expect("reader").verify();
        assert!(
            matches!(&tampered, Err(AuditError::Damaged { damage, .. }) if damage.line == 3),
            "point {at}: {tampered:?}"
        );
        std::fs::write(&paths.events, &original).expect("restore");
        let intent = std::fs::read_to_string(&paths.journal).expect("journal");
        std::fs::write(&paths.journal, intent.replacen("pending 2", "pending 9", 1))
            .expect("write");
        let tampered = store.reader(&sid).expect("reader").verify();
        assert!(
            matches!(&tampered, Err(AuditError::Damaged { damage, .. })
                if damage.line >= 5 && damage.what.contains("interrupted append")),
            "point {at}: {tampered:?}"
        );
        std::fs::write(&paths.journal, &intent).expect("restore");

        // The next writer completes it, exactly once.
        let (writer, recovery) = store.open_writer(&sid).expect("take over");
        assert_eq!(
            recovery,
            heartwood_audit::Recovery::CompletedAppend {
                first_seq: 5,
                last_seq: 6
            },
            "point {at}"
        );
        writer.close();
        let verified = store
            .reader(&sid)
            .expect("reader")
            .verify()
            .expect("intact");
        assert_eq!(verified.count, 6, "point {at}");
    }
}
