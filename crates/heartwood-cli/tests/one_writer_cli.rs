//! One writer per session, many interfaces: the real binary in separate processes. An owner
//! killed with SIGKILL leaves its lease and socket behind, and the next process takes over;
//! `heartwood serve` holding a session does not lock the shell out of it.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use heartwood_testkit::{Fault, Script, Turn};
use serde_json::{Value, json};
use support::{code, heartwood, heartwood_async, project_with, text, two_actions};

/// Waits until `path` exists (at most 30 s).
async fn appears(path: &Path) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn after_the_owner_is_killed_the_next_process_takes_the_session_over() {
    let slow = Turn::text(&"slowly ".repeat(200)).with_fault(Fault::ChunkDelayMs(50));
    let (project, _server) = project_with(Script::of(vec![
        slow,
        Turn::text("picked up where it stopped"),
        Turn::text("and continued"),
    ]))
    .await;
    let mut owner = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["exec", "--session", "taken", "take your time"])
        .current_dir(project.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let session = project.path().join(".heartwood/sessions/taken");
    // Serving: its channel is up, and the task is in the journal.
    appears(&session.join("channel.sock")).await;
    let started = Instant::now();
    while !std::fs::read_to_string(session.join("events.jsonl"))
        .is_ok_and(|j| j.contains("task_submitted"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no task recorded"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    owner.start_kill().expect("SIGKILL");
    owner.wait().await.expect("reaped");
    assert!(
        session.join("channel.sock").exists(),
        "the killed owner's socket is left behind, as a crash leaves it"
    );

    // Listed, it is stopped (its record says running, but nobody holds it), with the command
    // that continues it.
    let listed = heartwood(project.path(), &["sessions", "ls"]);
    let table = text(&listed.stdout);
    assert!(
        table.contains("stopped") && table.contains("heartwood exec --session taken \"go on\""),
        "{table}"
    );
    assert!(
        table.contains(" ago") || table.contains("just now"),
        "{table}"
    );
    // heartwood status names it, with what continues it.
    let status = text(&heartwood(project.path(), &["status"]).stdout);
    assert!(
        status.contains("stopped   session taken")
            && status.contains("heartwood exec --session taken \"go on\""),
        "{status}"
    );
    // The rows the terminal interface and the page list say it stopped too; reading them
    // takes nothing over (the next command does).
    let project_context = heartwood_gateway::ProjectContext::at(project.path()).expect("project");
    let gateway = std::sync::Arc::new(heartwood_gateway::SessionGateway::new(project_context));
    let reading = std::sync::Arc::clone(&gateway);
    let rows = tokio::task::spawn_blocking(move || reading.rows(10))
        .await
        .expect("rows")
        .expect("rows");
    assert!(
        !gateway.serves_here(&heartwood_events::SessionId::parse("taken").expect("id")),
        "a read took the session over"
    );
    // Closed, not merely dropped: a dropped gateway releases what it serves once its workers
    // have stopped, a moment later, and the next process would rightly wait for that.
    gateway.close().await;
    // (A kill that cut an append short leaves recovery to do first, and the row says so.)
    let status = &rows[0].status_line;
    assert!(
        (status.to_lowercase().starts_with("stopped: ")
            && (status.contains("heartwood exec --session taken \"go on\"")
                || status.contains("Give the next instruction to continue")))
            || status.contains("run `heartwood sessions recover taken`"),
        "{status:?}"
    );

    // The next process is neither refused as "owned" nor stuck on the dead socket.
    let next = heartwood_async(project.path(), &["exec", "--session", "taken", "go on"]).await;
    let said = format!("{}{}", text(&next.stdout), text(&next.stderr));
    assert!(!said.contains("owned by"), "{said}");
    assert!(matches!(code(&next), 0 | 4), "{said}");
    let shown = heartwood(project.path(), &["sessions", "show", "taken", "--json"]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let view: Value = serde_json::from_slice(&shown.stdout).expect("json");
    assert_eq!(view["integrity"]["intact"], true, "{view}");
    let texts: Vec<&str> = view["projection"]["conversation"]
        .as_array()
        .expect("conversation")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert!(texts.contains(&"go on"), "{texts:?}");
}

/// One HTTP request with the capability; the status and the body.
fn call(port: u16, token: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let body = body.map(Value::to_string).unwrap_or_default();
    heartwood_testkit::load::request((addr, token), method, path, &body)
}

#[tokio::test(flavor = "multi_thread")]
async fn while_serve_holds_a_session_the_shell_decides_it_and_the_page_sees_the_result() {
    let (project, server) =
        project_with(Script::of(vec![two_actions(), support::finish("wrote it")])).await;
    let served = support::serve(project.path());
    let (port, token) = (served.port, served.token.clone());

    let (id, set) = {
        let token = token.clone();
        tokio::task::spawn_blocking(move || {
            let (status, body) = call(port, &token, "POST", "/api/sessions", None);
            assert_eq!(status, 201, "{body}");
            let id = serde_json::from_str::<Value>(&body).expect("json")["session"]
                .as_str()
                .expect("id")
                .to_owned();
            let (status, body) = call(
                port,
                &token,
                "POST",
                &format!("/api/sessions/{id}/say?wait=settled"),
                Some(&json!({"text": "write ran.txt"})),
            );
            assert_eq!(status, 202, "{body}");
            (id, serde_json::from_str::<Value>(&body).expect("suspended"))
        })
        .await
        .expect("client")
    };
    // From the shell, at once (serve may still hold the session): decided, run once.
    let decided = heartwood_async(
        project.path(),
        &[
            "decide",
            &id,
            "--set",
            set["set_id"].as_str().expect("set"),
            "--revision",
            &set["revision"].to_string(),
            "allow",
        ],
    )
    .await;
    assert_eq!(
        code(&decided),
        0,
        "{}{}",
        text(&decided.stdout),
        text(&decided.stderr)
    );
    // `exec --session` on it too, with guidance turned into a new task (it finished).
    server.push_turns([Turn::text("nothing more to do")]);
    let more = heartwood_async(
        project.path(),
        &["exec", "--session", &id, "anything else?"],
    )
    .await;
    assert_eq!(
        code(&more),
        0,
        "{}{}",
        text(&more.stdout),
        text(&more.stderr)
    );

    // The page's view of the session shows what the shell did.
    let started = Instant::now();
    loop {
        let token = token.clone();
        let id = id.clone();
        let (status, body) = tokio::task::spawn_blocking(move || {
            call(
                port,
                &token,
                "GET",
                &format!("/api/sessions/{id}/snapshot"),
                None,
            )
        })
        .await
        .expect("client");
        assert_eq!(status, 200, "{body}");
        if body.contains("nothing more to do") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n"
    );
    drop(served);
}
