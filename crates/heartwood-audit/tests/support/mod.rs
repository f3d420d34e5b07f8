//! Helpers shared by the journal's integration tests: real sessions in real temporary projects.
#![allow(dead_code, missing_docs)]

use std::path::{Path, PathBuf};

use heartwood_audit::{SessionPaths, SessionStore};
use heartwood_events::{Event, Role, SessionId};

pub fn id(s: &str) -> SessionId {
    SessionId::parse(s).expect("valid id")
}

pub fn message(text: impl Into<String>) -> Event {
    Event::Message {
        role: Role::Agent,
        text: text.into(),
    }
}

/// A project directory with one session of `count` events (the registration plus messages).
pub fn project_with_session(count: usize) -> (tempfile::TempDir, SessionStore, SessionId) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(dir.path());
    let sid = id("s1");
    let (mut writer, _) = store.create_or_open_writer(&sid, "native").expect("create");
    let messages: Vec<Event> = (2..=count)
        .map(|i| message(format!("message {i} «ünïcode» \"quoted\"\n")))
        .collect();
    for chunk in messages.chunks(50) {
        writer.append(None, chunk.to_vec()).expect("append");
    }
    assert_eq!(writer.count(), count as u64);
    writer.close();
    (dir, store, sid)
}

/// Every file and directory under `root`, relative, sorted.
pub fn tree(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(root).expect("under root").to_path_buf());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Byte offsets where each line of `bytes` starts, plus the total length.
pub fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1),
    );
    starts
}

pub fn paths(store: &SessionStore, sid: &SessionId) -> SessionPaths {
    store.paths(sid)
}

/// Runs the independent Python verifier on `dir`: whether it accepted it, its standard output
/// (the result as JSON) and its standard error.
pub fn python_verify(dir: &Path) -> (bool, String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/verify_session.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .output()
        .expect("python3 is required for this test");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
