//! The Rust verifier and the independent Python one agree on forged but consistent sessions:
//! each case below rewrites a real session the way a forger who recomputes every hash would
//! (the chain links and hashes are all correct), and both verifiers must refuse it; the Python
//! one with "not intact", never a traceback. The untouched session passes both with the same
//! terminal hash.

mod support;

use std::path::Path;

use heartwood_audit::{AuditRecord, Digest, SessionStore, genesis};
use heartwood_events::{CommandId, SessionId};
use serde_json::{Value, json};
use support::{id, message, python_verify};

/// A real session with a command, in a fresh project.
fn genuine() -> (tempfile::TempDir, SessionId) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(dir.path());
    let sid = id("forge-me");
    let (mut writer, _) = store.create_or_open_writer(&sid, "native").expect("create");
    writer
        .append(None, vec![message("first"), message("second")])
        .expect("append");
    let cmd = CommandId::parse("c1").expect("id");
    writer
        .complete_command(&cmd, "note", vec![message("by command")], json!({"ok": 1}))
        .expect("command");
    writer.close();
    (dir, sid)
}

fn session_dir(project: &Path, sid: &SessionId) -> std::path::PathBuf {
    project.join(".heartwood/sessions").join(sid.as_str())
}

/// Rewrites the session's event lines with `forge` and recomputes every audit record, as a
/// forger who knows the format would.
fn forge_events(dir: &Path, sid: &SessionId, forge: impl Fn(usize, Vec<u8>) -> Vec<u8>) {
    let events = std::fs::read(dir.join("events.jsonl")).expect("events");
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).expect("audit");
    let originals: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let mut prev = genesis(sid);
    let (mut new_events, mut new_audit) = (Vec::new(), Vec::new());
    for (i, line) in events
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let line = forge(i + 1, line.to_vec());
        // The record repeats the event's type and time; a forged line keeps the original's.
        let kind = originals[i]["type"].as_str().expect("type").to_owned();
        let time = originals[i]["time"].as_str().expect("time").to_owned();
        let record = AuditRecord::seal((i + 1) as u64, &kind, &time, Digest::of(&line), prev);
        prev = record.hash;
        new_events.extend_from_slice(&line);
        new_events.push(b'\n');
        new_audit.extend_from_slice(&record.to_line());
        new_audit.push(b'\n');
    }
    std::fs::write(dir.join("events.jsonl"), new_events).expect("write");
    std::fs::write(dir.join("audit.jsonl"), new_audit).expect("write");
}

fn replace(line: Vec<u8>, from: &str, to: &[u8]) -> Vec<u8> {
    let text = line;
    let at = text
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap_or_else(|| panic!("{from} not in {}", String::from_utf8_lossy(&text)));
    let mut out = text[..at].to_vec();
    out.extend_from_slice(to);
    out.extend_from_slice(&text[at + from.len()..]);
    out
}

fn edit_meta(dir: &Path, edit: impl Fn(&mut Value)) {
    let path = dir.join("meta.json");
    let mut meta: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("meta")).expect("json");
    edit(&mut meta);
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).expect("json")).expect("write");
}

type Damage = Box<dyn Fn(&Path, &SessionId)>;

#[test]
fn both_verifiers_refuse_every_forged_but_consistent_session() {
    let cases: Vec<(&str, Damage)> = vec![
        (
            "seq with a leading zero",
            Box::new(|d, s| {
                forge_events(d, s, |n, l| {
                    if n == 2 {
                        replace(l, "\"seq\":2", b"\"seq\":02")
                    } else {
                        l
                    }
                });
            }),
        ),
        (
            "seq as a float",
            Box::new(|d, s| {
                forge_events(d, s, |n, l| {
                    if n == 2 {
                        replace(l, "\"seq\":2", b"\"seq\":2.0")
                    } else {
                        l
                    }
                });
            }),
        ),
        (
            "seq as true",
            Box::new(|d, s| {
                forge_events(d, s, |n, l| {
                    if n == 1 {
                        replace(l, "\"seq\":1", b"\"seq\":true")
                    } else {
                        l
                    }
                });
            }),
        ),
        (
            "invalid JSON inside a skipped member",
            Box::new(|d, s| {
                forge_events(d, s, |n, l| {
                    if n == 2 {
                        replace(l, "\"schema\":1", b"\"junk\":{\"a\":tru},\"schema\":1")
                    } else {
                        l
                    }
                });
            }),
        ),
        (
            "NaN inside a skipped member",
            Box::new(|d, s| {
                forge_events(d, s, |n, l| {
                    if n == 2 {
                        replace(l, "\"schema\":1", b"\"junk\":NaN,\"schema\":1")
                    } else {
                        l
                    }
                });
            }),
        ),
        (
            "a 0xFF byte in a string",
            Box::new(|d, s| {
                forge_events(d, s, |n, l| {
                    if n == 2 {
                        replace(l, "first", b"fi\xffrst")
                    } else {
                        l
                    }
                });
            }),
        ),
        (
            "an event line that is an array",
            Box::new(|d, s| {
                forge_events(d, s, |n, l| if n == 2 { b"[2]".to_vec() } else { l });
            }),
        ),
        (
            "meta.json is null",
            Box::new(|d, _| std::fs::write(d.join("meta.json"), "null").expect("write")),
        ),
        (
            "meta.json is an array",
            Box::new(|d, _| std::fs::write(d.join("meta.json"), "[]").expect("write")),
        ),
        (
            "meta.json with an extra field",
            Box::new(|d, _| {
                edit_meta(d, |m| {
                    m["extra"] = json!(1);
                })
            }),
        ),
        (
            "meta.json schema 0",
            Box::new(|d, _| {
                edit_meta(d, |m| {
                    m["schema"] = json!(0);
                })
            }),
        ),
        (
            "meta.json created_at moved",
            Box::new(|d, _| {
                edit_meta(d, |m| {
                    m["created_at"] = json!("2020-01-01T00:00:00.000Z");
                })
            }),
        ),
        (
            "meta.json backend changed",
            Box::new(|d, _| {
                edit_meta(d, |m| {
                    m["backend"] = json!("openhands");
                })
            }),
        ),
        (
            "meta.json workflow added",
            Box::new(|d, _| {
                edit_meta(d, |m| {
                    m["workflow"] = json!("tabular-ols");
                })
            }),
        ),
        (
            "both chain files emptied",
            Box::new(|d, _| {
                std::fs::write(d.join("events.jsonl"), "").expect("write");
                std::fs::write(d.join("audit.jsonl"), "").expect("write");
            }),
        ),
        (
            "both chain files removed",
            Box::new(|d, _| {
                std::fs::remove_file(d.join("events.jsonl")).expect("rm");
                std::fs::remove_file(d.join("audit.jsonl")).expect("rm");
            }),
        ),
        (
            "a receipt appended",
            Box::new(|d, _| {
                let mut r = std::fs::read(d.join("receipts.jsonl")).expect("receipts");
                r.extend_from_slice(b"{\"not\":\"a receipt\"}\n");
                std::fs::write(d.join("receipts.jsonl"), r).expect("write");
            }),
        ),
        (
            "the receipts removed",
            Box::new(|d, _| std::fs::remove_file(d.join("receipts.jsonl")).expect("rm")),
        ),
    ];

    // The control: the genuine session passes both, with the same terminal hash.
    let (project, sid) = genuine();
    let dir = session_dir(project.path(), &sid);
    let rust = SessionStore::new(project.path())
        .reader(&sid)
        .expect("reader")
        .verify()
        .expect("genuine session verifies");
    let (ok, stdout, stderr) = python_verify(&dir);
    assert!(ok, "{stderr}");
    assert!(stdout.contains(&rust.terminal_hash.to_hex()), "{stdout}");

    for (case, damage) in cases {
        let (project, sid) = genuine();
        let dir = session_dir(project.path(), &sid);
        damage(&dir, &sid);
        let rust = SessionStore::new(project.path())
            .reader(&sid)
            .and_then(|r| r.verify());
        let (python_ok, _, stderr) = python_verify(&dir);
        assert!(rust.is_err(), "{case}: the Rust verifier accepted it");
        assert!(!python_ok, "{case}: the Python verifier accepted it");
        assert!(stderr.starts_with("not intact"), "{case}: {stderr}");
        assert!(!stderr.contains("Traceback"), "{case}: {stderr}");
    }
}
