//! Model faults end to end, through the real binary and the gateway against the scripted
//! server: each ends (or survives) the run with a classified message in the conversation,
//! loses nothing, and the session takes the next task and verifies.

mod support;

use std::path::Path;

use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::{code, connect_scripted, finish, heartwood, heartwood_async, text};

/// Connects `project` to `server` with a deadline of `seconds` for one model call.
fn connect(project: &Path, server: &ScriptedModelServer, seconds: &str) {
    let out = heartwood(
        project,
        &[
            "model",
            "connect",
            "--category",
            "compatible",
            "--base-url",
            &server.base_url(),
            "--model",
            "scripted",
            "--timeout-secs",
            seconds,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn status(code: u16) -> Turn {
    Turn::fault(Fault::Status {
        status: code,
        body: None,
        retry_after_secs: None,
    })
}

/// The conversation's system entries of the latest session.
fn said(project: &Path) -> String {
    let shown = heartwood(project, &["sessions", "show", "last", "--json"]);
    let view: Value = serde_json::from_slice(&shown.stdout).expect("json");
    view["projection"]["conversation"]
        .as_array()
        .expect("conversation")
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs one task against `faults` then a finishing turn, and checks the outcome: `ends` says
/// whether the run fails (with `words` in the conversation) or carries on to the finish.
async fn case(name: &str, faults: Vec<Turn>, ends: bool, words: &str) {
    let project = tempfile::tempdir().expect("project");
    let mut script = faults;
    script.push(finish("recovered"));
    script.push(finish("next task done"));
    let server = ScriptedModelServer::start(Script::of(script))
        .await
        .expect("server");
    // A short deadline where the fault is a stall; room for the retries' backoff elsewhere.
    let deadline = if name.contains("stalls") { "3" } else { "30" };
    connect(project.path(), &server, deadline);
    let out = heartwood_async(project.path(), &["exec", "--policy", "low-risk", "go"]).await;
    let printed = format!("{}{}", text(&out.stdout), text(&out.stderr));
    if ends {
        assert_eq!(code(&out), 1, "{name}: {printed}");
        let said = said(project.path());
        assert!(
            said.contains(words),
            "{name}: the conversation says {said:?}"
        );
        // The session takes the next task (the finishing turn answers it).
        let next = heartwood_async(project.path(), &["exec", "--last", "again"]).await;
        assert_eq!(code(&next), 0, "{name}: {}", text(&next.stdout));
    } else {
        assert_eq!(code(&out), 0, "{name}: {printed}");
        assert!(printed.contains(words), "{name}: {printed}");
    }
    let verified = heartwood(project.path(), &["sessions", "verify", "last"]);
    assert!(
        verified.status.success(),
        "{name}: {}",
        text(&verified.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_model_fault_is_classified_and_the_session_carries_on() {
    let retry_after = Turn::fault(Fault::Status {
        status: 429,
        body: None,
        retry_after_secs: Some(1),
    });
    case(
        "429 with Retry-After",
        vec![retry_after],
        false,
        "recovered",
    )
    .await;
    case(
        "500 on every attempt",
        vec![status(500), status(500), status(500), status(500)],
        true,
        "failed with HTTP 500",
    )
    .await;
    case(
        "a stream cut after text arrived",
        vec![Turn::text("partial answer that goes on").with_fault(Fault::CutAfterChunks(2))],
        true,
        "ended before it was complete",
    )
    .await;
    case(
        "a service that stalls past the deadline",
        vec![Turn::fault(Fault::Silent)],
        true,
        "did not complete within 3s",
    )
    .await;
    case(
        "tool-call arguments that are not an object",
        vec![Turn::calls(&[("terminal", json!("not an object"))])],
        false,
        "recovered",
    )
    .await;
    case(
        "an unknown tool",
        vec![Turn::calls(&[("format_disk", json!({}))])],
        false,
        "recovered",
    )
    .await;
    case(
        "a 10 MB reply",
        vec![Turn::text(&"x".repeat(10 * 1024 * 1024))],
        true,
        "too large",
    )
    .await;
    let many: Vec<(&str, Value)> = (0..1000)
        .map(|i| ("think", json!({"thought": format!("t{i}")})))
        .collect();
    case(
        "1,000 tool calls",
        vec![Turn::calls(&many)],
        true,
        "1000 tool calls",
    )
    .await;
}

/// The heddle document: "A failed turn is recorded too, with its error, but contributes nothing
/// to the history a later run sees." After a task whose model call failed, the next task's
/// request carries neither the failed task's text nor any message twice.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_turn_feeds_nothing_to_the_next_run() {
    let server = ScriptedModelServer::start(Script::of(vec![
        finish("first answered"),
        status(400),
        finish("third answered"),
    ]))
    .await
    .expect("server");
    let project = tempfile::tempdir().expect("project");
    connect_scripted(project.path(), &server.base_url());
    let run = |task: &'static str, session: Option<&'static str>| {
        let mut args = vec!["exec"];
        if let Some(s) = session {
            args.extend(["--session", s]);
        }
        args.push(task);
        heartwood(project.path(), &args)
    };
    assert!(run("FIRST-TASK", None).status.success());
    let failed = run("FAILED-TASK", Some("last"));
    assert!(!failed.status.success(), "the second task's call failed");
    assert!(
        said(project.path()).contains("400"),
        "the failure is recorded"
    );
    let third = run("THIRD-TASK", Some("last"));
    assert!(third.status.success(), "{}", text(&third.stderr));
    let requests = server.requests();
    let last = requests.last().expect("a request");
    let users: Vec<&str> = last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        !users.iter().any(|u| u.contains("FAILED-TASK")),
        "the failed turn reached the next run: {users:?}"
    );
    assert_eq!(
        users.iter().filter(|u| u.contains("FIRST-TASK")).count(),
        1,
        "an earlier message is sent once: {users:?}"
    );
    assert!(users.iter().any(|u| u.contains("THIRD-TASK")), "{users:?}");
}
