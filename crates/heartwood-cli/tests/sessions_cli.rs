//! `heartwood sessions …` run as a real process in a real project directory.

use std::path::Path;

mod support;
use support::{heartwood, text};

fn project_with(ids: &[&str], messages: usize) -> tempfile::TempDir {
    heartwood_testkit::sessions::project_with_sessions(ids, messages)
}

fn entries(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walk(dir)
        .into_iter()
        .map(|p| p.strip_prefix(dir).expect("under").display().to_string())
        .collect();
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[test]
fn read_only_commands_in_a_fresh_project_create_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ls = heartwood(dir.path(), &["sessions", "ls"]);
    assert!(ls.status.success());
    assert!(
        text(&ls.stdout).contains("no sessions"),
        "{}",
        text(&ls.stdout)
    );
    for args in [
        &["sessions", "show", "abc"][..],
        &["sessions", "verify", "abc"],
        &["sessions", "checkpoint", "abc"],
        &["sessions", "ls", "--json"],
    ] {
        heartwood(dir.path(), args);
    }
    assert!(
        entries(dir.path()).is_empty(),
        "created {:?}",
        entries(dir.path())
    );
}

#[test]
fn bad_ids_and_missing_sessions_give_one_clear_line_and_fail() {
    let dir = project_with(&["real"], 1);
    for (args, expected) in [
        (&["sessions", "show", "../etc"][..], "contains '.'"),
        (&["sessions", "verify", ""], "empty"),
        (&["sessions", "rm", "ghost"], "no session \"ghost\""),
        (&["sessions", "export", "ghost"], "heartwood sessions ls"),
    ] {
        let out = heartwood(dir.path(), args);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn ls_lists_sessions_and_respects_the_limit() {
    let dir = project_with(&["alpha", "beta", "gamma"], 2);
    let out = heartwood(dir.path(), &["sessions", "ls", "--json", "--limit", "2"]);
    assert!(out.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = rows.as_array().expect("array");
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r["events"] == 3 && r["backend"] == "native")
    );
    let table = text(&heartwood(dir.path(), &["sessions", "ls"]).stdout);
    for id in ["alpha", "beta", "gamma"] {
        assert!(table.contains(id), "{table}");
    }
}

#[test]
fn show_prints_events_and_integrity() {
    let dir = project_with(&["s"], 2);
    let out = heartwood(dir.path(), &["sessions", "show", "s"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("integrity intact: 3 events"), "{stdout}");
    assert!(stdout.contains("researcher: note 1"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_slice(&heartwood(dir.path(), &["sessions", "show", "s", "--json"]).stdout)
            .expect("json");
    assert_eq!(json["events"].as_array().map(Vec::len), Some(3));
    assert_eq!(json["integrity"]["intact"], true);
}

#[test]
fn verify_exits_zero_only_when_intact_and_names_the_damaged_line() {
    let dir = project_with(&["s"], 5);
    assert!(
        heartwood(dir.path(), &["sessions", "verify", "s"])
            .status
            .success()
    );
    let audit = dir.path().join(".heartwood/sessions/s/audit.jsonl");
    let tampered =
        std::fs::read_to_string(&audit)
            .expect("read")
            .replacen("\"seq\":3", "\"seq\":4", 1);
    std::fs::write(&audit, tampered).expect("write");
    let out = heartwood(dir.path(), &["sessions", "verify", "s"]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("audit.jsonl line 3") && err.contains("modification"),
        "{err}"
    );
    assert!(
        !heartwood(dir.path(), &["sessions", "show", "s"])
            .status
            .success()
    );
}

#[test]
fn a_retained_checkpoint_catches_truncation_and_accepts_growth() {
    let dir = project_with(&["s"], 6);
    let out = heartwood(dir.path(), &["sessions", "checkpoint", "s"]);
    assert!(out.status.success());
    let kept = tempfile::NamedTempFile::new().expect("file");
    std::fs::write(kept.path(), &out.stdout).expect("keep checkpoint");
    let kept_path = kept.path().to_str().expect("utf-8 path");

    // Grow the session through an export; the retained checkpoint is still a prefix.
    let export = heartwood(dir.path(), &["sessions", "export", "s"]);
    assert!(export.status.success(), "{}", text(&export.stderr));
    assert!(
        text(&export.stdout).contains("recorded as event 8"),
        "{}",
        text(&export.stdout)
    );
    let out = heartwood(
        dir.path(),
        &["sessions", "verify", "s", "--checkpoint", kept_path],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("extends the checkpoint of 7 events"),
        "{}",
        text(&out.stdout)
    );

    // Drop the last two pairs: the chain still verifies, the checkpoint does not.
    let session = dir.path().join(".heartwood/sessions/s");
    for file in ["events.jsonl", "audit.jsonl"] {
        let path = session.join(file);
        let content = std::fs::read_to_string(&path).expect("read");
        let kept_lines: Vec<&str> = content.lines().take(5).collect();
        std::fs::write(&path, kept_lines.join("\n") + "\n").expect("truncate");
    }
    assert!(
        heartwood(dir.path(), &["sessions", "verify", "s"])
            .status
            .success()
    );
    let out = heartwood(
        dir.path(),
        &["sessions", "verify", "s", "--checkpoint", kept_path],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("truncated suffix"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn rm_deletes_the_session_only_when_confirmed() {
    let dir = project_with(&["gone", "kept"], 1);
    // Not a terminal, so nobody can be asked: without --yes nothing is removed.
    let out = heartwood(dir.path(), &["sessions", "rm", "gone"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--yes"), "{}", text(&out.stderr));
    assert!(dir.path().join(".heartwood/sessions/gone").exists());
    let out = heartwood(dir.path(), &["sessions", "rm", "gone", "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dir.path().join(".heartwood/sessions/gone").exists());
    assert!(dir.path().join(".heartwood/sessions/kept").exists());
}

#[test]
fn recover_completes_nothing_on_a_clean_session() {
    let dir = project_with(&["s"], 1);
    let out = heartwood(dir.path(), &["sessions", "recover", "s"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("nothing to recover; 2 events intact"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn recover_cuts_a_torn_tail_that_verify_calls_recovery_required_and_keeps_the_bytes() {
    let dir = project_with(&["s"], 3);
    let session = dir.path().join(".heartwood/sessions/s");
    let verified = |dir: &Path| heartwood(dir, &["sessions", "verify", "s"]);
    assert!(verified(dir.path()).status.success());
    let before = std::fs::read(session.join("events.jsonl")).expect("events");
    // A crash mid-append with no intent: half of one more event line, no audit record.
    let torn = br#"{"seq":5,"time":"2026-01-01T00:00:00Z","type":"guid"#;
    let mut damaged = before.clone();
    damaged.extend_from_slice(torn);
    std::fs::write(session.join("events.jsonl"), &damaged).expect("write");
    let out = verified(dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("recovery required"),
        "{}",
        text(&out.stderr)
    );

    let out = heartwood(dir.path(), &["sessions", "recover", "s"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("cut a torn tail from event 5"), "{said}");
    assert_eq!(
        std::fs::read(session.join("events.jsonl")).expect("events"),
        before,
        "exactly the torn bytes were cut"
    );
    let kept = std::fs::read(session.join("torn-tail-5.bin")).expect("kept bytes");
    assert!(
        kept.windows(torn.len()).any(|w| w == torn),
        "the cut bytes are kept"
    );
    assert!(verified(dir.path()).status.success());

    // A modification is not a torn tail: recover refuses it and changes nothing.
    let events = session.join("events.jsonl");
    let tampered = String::from_utf8(before)
        .expect("utf-8")
        .replacen("\"seq\":2", "\"seq\":7", 1);
    std::fs::write(&events, &tampered).expect("write");
    let out = heartwood(dir.path(), &["sessions", "recover", "s"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("modification"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&events).expect("events"), tampered);
}

#[test]
fn an_interrupted_append_verifies_intact_and_waiting_with_exit_3_until_a_writer_completes_it() {
    let dir = project_with(&["s"], 3);
    // The audit crate's own writer, stopped right after the intent's fsync as a kill there
    // leaves it: event 5 is described, not written.
    heartwood_testkit::sessions::interrupt_an_append(dir.path(), "s");
    let verify = |dir: &Path| heartwood(dir, &["sessions", "verify", "s"]);

    let out = verify(dir.path());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("intact through event 4"), "{said}");
    assert!(said.contains("events 5..=5"), "{said}");
    assert!(said.contains("`heartwood sessions recover s`"), "{said}");
    let show = heartwood(dir.path(), &["sessions", "show", "s"]);
    assert_eq!(show.status.code(), Some(3));
    assert!(
        text(&show.stdout).contains("integrity intact, waiting for recovery"),
        "{}",
        text(&show.stdout)
    );
    let listed = heartwood(dir.path(), &["sessions", "ls"]);
    assert!(
        text(&listed.stdout).contains("waiting for recovery"),
        "{}",
        text(&listed.stdout)
    );

    // Tampering with an acknowledged event is damage (exit 1), not a wait for recovery.
    let events = dir.path().join(".heartwood/sessions/s/events.jsonl");
    let original = std::fs::read_to_string(&events).expect("events");
    let tampered = original.replacen("\"seq\":2", "\"seq\":7", 1);
    std::fs::write(&events, tampered).expect("write");
    let out = verify(dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("modification"),
        "{}",
        text(&out.stderr)
    );
    std::fs::write(&events, original).expect("restore");

    // The next writer completes it, exactly once; then the session verifies clean.
    let out = heartwood(dir.path(), &["sessions", "recover", "s"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("completed the interrupted append of events 5..=5"),
        "{}",
        text(&out.stdout)
    );
    let out = verify(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("intact: 5 events"));
}

/// Copies `fixtures/journals/<name>` into a fresh directory, so running against it changes
/// nothing in the repository.
fn fixture(name: &str) -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read fixture").flatten() {
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).expect("copy");
            }
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/journals")
            .join(name),
        dir.path(),
    );
    dir
}

#[test]
fn sessions_written_by_earlier_builds_still_verify_and_damage_is_classified() {
    let intact = fixture("intact");
    let out = heartwood(intact.path(), &["sessions", "verify", "example"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("intact: 4 events"),
        "{}",
        text(&out.stdout)
    );

    let tampered = fixture("tampered");
    let err = text(&heartwood(tampered.path(), &["sessions", "verify", "example"]).stderr);
    assert!(
        err.contains("events.jsonl line 3") && err.contains("modification"),
        "{err}"
    );

    let torn = fixture("torn-tail");
    let out = heartwood(torn.path(), &["sessions", "verify", "example"]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("audit.jsonl line 4") && err.contains("torn tail"),
        "{err}"
    );
}
