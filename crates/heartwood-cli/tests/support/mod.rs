//! Running the real `heartwood` binary in a project directory, shared by the CLI tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

/// Runs `heartwood ARGS` with `project` as the current directory.
pub fn heartwood(project: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(args)
        .current_dir(project)
        .output()
        .expect("run heartwood")
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `heartwood ARGS` without blocking the async runtime (the scripted model server runs on
/// it while the binary talks to it).
pub async fn heartwood_async(project: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(args)
        .current_dir(project)
        .output()
        .await
        .expect("run heartwood")
}

/// Runs `heartwood model connect` for an OpenAI-compatible route at `base_url`.
pub fn connect(project: &Path, base_url: &str, key_env: Option<&str>) -> Output {
    let mut args = vec![
        "model",
        "connect",
        "--category",
        "compatible",
        "--base-url",
        base_url,
        "--model",
        "qwen2.5-coder",
    ];
    if let Some(env) = key_env {
        args.extend(["--api-key-env", env]);
    }
    heartwood(project, &args)
}

/// Connects `project` to the scripted model server at `base_url`.
pub fn connect_scripted(project: &Path, base_url: &str) {
    let out = connect(project, base_url, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A fresh project connected to a scripted model server following `script`.
pub async fn project_with(
    script: heartwood_testkit::Script,
) -> (tempfile::TempDir, heartwood_testkit::ScriptedModelServer) {
    let project = tempfile::tempdir().expect("project");
    let server = heartwood_testkit::ScriptedModelServer::start(script)
        .await
        .expect("server");
    connect_scripted(project.path(), &server.base_url());
    (project, server)
}

/// A reply proposing two terminal actions that each append a line to `ran.txt`.
pub fn two_actions() -> heartwood_testkit::Turn {
    heartwood_testkit::Turn::calls(&[
        (
            "terminal",
            serde_json::json!({"command": "echo one >> ran.txt"}),
        ),
        (
            "terminal",
            serde_json::json!({"command": "echo two >> ran.txt"}),
        ),
    ])
}

/// A reply that finishes with `message`.
pub fn finish(message: &str) -> heartwood_testkit::Turn {
    heartwood_testkit::Turn::calls(&[("finish", serde_json::json!({"message": message}))])
}

/// The session id `exec` printed.
pub fn session_of(out: &Output) -> String {
    text(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .expect("session line")
        .trim()
        .to_owned()
}

/// The process's exit code (-1 when a signal ended it).
pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}
