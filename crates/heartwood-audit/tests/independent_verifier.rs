//! An independent verifier: a short Python script using only `hashlib` and `json` verifies a
//! session written by the Rust code, so a session can be audited without Heartwood.

mod support;

use std::path::Path;

use heartwood_audit::SessionStore;
use heartwood_events::{CommandId, Event, Role};
use serde_json::{Value, json};
use support::{id, message};

/// The Python verifier's verdict on `dir`, its result parsed as JSON, and its standard error.
fn python_verify(dir: &Path) -> (bool, Value, String) {
    let (ok, stdout, stderr) = support::python_verify(dir);
    (
        ok,
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stderr,
    )
}

#[test]
fn python_verifies_a_rust_written_session_and_its_export_and_agrees_on_every_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(dir.path());
    let sid = id("audit-me");
    let (mut writer, _) = store.create_or_open_writer(&sid, "native").expect("create");
    let awkward = [
        "plain",
        "naïve café — ünïcode, 中文, emoji 🧪",
        "quotes \" and backslashes \\ and slash /",
        "control \u{1} \u{1f} \t tab \n newline \r return \u{7f} del",
        "line separator \u{2028} paragraph \u{2029}",
        "",
    ];
    writer
        .append(None, awkward.iter().map(|t| message(*t)).collect())
        .expect("append");
    writer
        .append(
            None,
            vec![Event::Message {
                role: Role::Researcher,
                text: "x".repeat(10_000),
            }],
        )
        .expect("append");
    let cmd = CommandId::parse("c1").expect("id");
    writer
        .complete_command(
            &cmd,
            "note",
            vec![message("with a command")],
            json!({"n": 1}),
        )
        .expect("command");
    let (bundle, _) = writer.export(None).expect("export");
    writer.close();

    let checkpoint = store
        .reader(&sid)
        .expect("reader")
        .checkpoint()
        .expect("checkpoint");
    let (ok, result, stderr) = python_verify(&store.paths(&sid).dir);
    assert!(ok, "python refused the session: {stderr}");
    assert_eq!(result["count"], checkpoint.count);
    assert_eq!(result["terminal_hash"], checkpoint.terminal_hash.to_hex());
    assert_eq!(result["merkle_root"], checkpoint.merkle_root.to_hex());

    let (ok, result, stderr) = python_verify(&bundle);
    assert!(ok, "python refused the export bundle: {stderr}");
    assert_eq!(
        result["count"],
        checkpoint.count - 1,
        "the bundle precedes its export event"
    );
}

#[test]
fn python_refuses_a_tampered_session() {
    let (_dir, store, sid) = support::project_with_session(30);
    let paths = store.paths(&sid);
    let text = std::fs::read_to_string(&paths.events)
        .expect("read")
        .replacen("message 7", "message 8", 1);
    std::fs::write(&paths.events, text).expect("tamper");
    let (ok, _, stderr) = python_verify(&paths.dir);
    assert!(!ok);
    assert!(stderr.contains("line 7"), "{stderr}");
}
