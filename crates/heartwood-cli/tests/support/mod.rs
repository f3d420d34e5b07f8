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

/// Runs `heartwood model connect` for an OpenAI-compatible route at `base_url` (the model is
/// `scripted`, which the scripted server lists).
pub fn connect(project: &Path, base_url: &str, key_env: Option<&str>) -> Output {
    connect_with(project, base_url, key_env, &[])
}

/// [`connect`] with `--save-anyway`: a route the test wants saved although it cannot be
/// reached (exit code 3).
pub fn connect_anyway(project: &Path, base_url: &str) -> Output {
    connect_with(project, base_url, None, &["--save-anyway"])
}

fn connect_with(project: &Path, base_url: &str, key_env: Option<&str>, extra: &[&str]) -> Output {
    let mut args = vec![
        "model",
        "connect",
        "--category",
        "compatible",
        "--base-url",
        base_url,
        "--model",
        "scripted",
    ];
    if let Some(env) = key_env {
        args.extend(["--api-key-env", env]);
    }
    args.extend(extra);
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

/// A `heartwood serve` process and what its first lines told: the port and the capability.
pub struct Served {
    /// The server process (killed when dropped).
    pub child: std::process::Child,
    /// The loopback port it listens on.
    pub port: u16,
    /// The launch capability from the printed URL.
    pub token: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `heartwood serve` in `project` and reads the URL it prints.
pub fn serve(project: &Path) -> Served {
    serve_with(project, &[], &[])
}

/// [`serve`] with more arguments and environment variables.
pub fn serve_with(project: &Path, args: &[&str], vars: &[(&str, &Path)]) -> Served {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .arg("serve")
        .args(args)
        .envs(vars.iter().copied())
        .current_dir(project)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("serve");
    let stdout = child.stdout.take().expect("stdout");
    let url = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.trim()
                .strip_prefix("http://127.0.0.1:")
                .map(str::to_owned)
        })
        .expect("a URL");
    let (port, rest) = url.split_once('/').expect("port");
    Served {
        child,
        port: port.parse().expect("port number"),
        token: rest.strip_prefix("?token=").expect("token").to_owned(),
    }
}

/// One HTTP request to a local server (`auth` as a bearer capability); the whole response.
pub fn http(port: u16, method: &str, path: &str, auth: Option<&str>, body: Option<&str>) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let auth = auth
        .map(|a| format!("Authorization: Bearer {a}\r\n"))
        .unwrap_or_default();
    let body = body.unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// Puts `project`'s new sessions on the OpenHands engine, if it is installed. Without it, says
/// the test was skipped and returns false, unless `HEARTWOOD_REQUIRE_OPENHANDS` is set (as CI
/// does), where that is a failure.
pub fn use_openhands(project: &Path) -> bool {
    let shown = text(&heartwood(project, &["backend", "show"]).stdout);
    if !shown.contains("OpenHands         installed") {
        assert!(
            std::env::var_os("HEARTWOOD_REQUIRE_OPENHANDS").is_none(),
            "HEARTWOOD_REQUIRE_OPENHANDS is set, and: {shown}"
        );
        eprintln!("skipped: {shown}");
        return false;
    }
    let chosen = heartwood(project, &["backend", "use", "openhands"]);
    assert!(chosen.status.success(), "{}", text(&chosen.stderr));
    true
}

/// The last lines of every OpenHands agent server log under `project`'s sessions, for a
/// failure message.
#[allow(dead_code)]
pub fn agent_server_log_tail(project: &Path) -> String {
    let mut out = String::new();
    let mut logs = Vec::new();
    let mut dirs = vec![project.join(".heartwood")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(_) if entry.file_name() == "agent-server.log" => logs.push(path),
                _ => {}
            }
        }
    }
    for log in logs {
        let Ok(text) = std::fs::read_to_string(&log) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        out.push_str(&format!("== {}\n", log.display()));
        for line in &lines[lines.len().saturating_sub(40)..] {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
pub mod batch;
pub mod replicas;
pub mod rocrate;
pub mod tmux;

/// The `node_modules` holding playwright-core, for the page's Chromium tests; `None` (the test
/// skips, saying why) where it is missing outside CI, which always has it (`.ci/run`).
pub fn node_path() -> Option<String> {
    let node_path = std::env::var("HEARTWOOD_NODE_PATH").unwrap_or_default();
    if std::path::Path::new(&node_path)
        .join("playwright-core")
        .is_dir()
    {
        return Some(node_path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "HEARTWOOD_NODE_PATH must name a node_modules with playwright-core"
    );
    eprintln!("skipped: no playwright-core; run .ci/run once, or set HEARTWOOD_NODE_PATH");
    None
}
