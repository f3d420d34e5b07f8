//! The API over real HTTP against the scripted model server: a task, a pending set answered 202,
//! a decision, the run finishing, and the server-sent event stream carrying it.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use heartwood_web::{Capability, Mode};
use serde_json::{Value, json};

const SECRET: &str = "api-test-capability";

/// One request; returns the status and the body.
fn call(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let body = body.map(Value::to_string).unwrap_or_default();
    heartwood_testkit::load::request((addr, SECRET), method, path, &body)
}

/// A project whose model proposes two terminal actions, then finishes; served on loopback.
async fn serving_a_two_action_run() -> (ScriptedModelServer, tempfile::TempDir, SocketAddr) {
    let model = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[
            ("terminal", json!({"command": "echo one >> ran.txt"})),
            ("terminal", json!({"command": "echo two >> ran.txt"})),
        ]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await
    .expect("model");
    let project = tempfile::tempdir().expect("project");
    support::connect_model(project.path(), &model.base_url());
    let (addr, _state) = support::serve(
        project.path(),
        Mode::Loopback,
        Capability::from_secret(SECRET),
    )
    .await;
    (model, project, addr)
}

/// A session id minted by the server.
fn mint(addr: SocketAddr) -> String {
    let (status, body) = call(addr, "POST", "/api/sessions", None);
    assert_eq!(status, 201, "{body}");
    let minted: Value = serde_json::from_str(&body).expect("json");
    minted["session"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn ids_are_minted_in_the_command_lines_format_unknown_ids_are_404_and_a_waiting_run_answers_202()
 {
    let (_model, project, addr) = serving_a_two_action_run().await;
    let dir = project.path().to_owned();
    tokio::task::spawn_blocking(move || {
        // Two mints differ, and each reads like an id the command line mints: s, the date,
        // the time and 32 random bits (the API's token, not the id, keeps others out).
        let (a, b) = (mint(addr), mint(addr));
        assert_ne!(a, b);
        let cli = heartwood_gateway::SessionGateway::new_session_id();
        let shape = |id: &str| -> Vec<usize> { id.split('-').map(str::len).collect() };
        for id in [&a, &b] {
            assert_eq!(shape(id), shape(cli.as_str()), "{id} beside {cli}");
            let random = id.rsplit('-').next().expect("random part");
            assert!(random.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        }

        // An id nobody minted and no session has: 404 everywhere, and nothing is created.
        let task = json!({"type": "submit_task", "text": "write ran.txt"});
        for (method, path, body) in [
            ("GET", "/api/sessions/chosen-by-caller/snapshot", None),
            ("GET", "/api/sessions/chosen-by-caller/events", None),
            ("POST", "/api/sessions/chosen-by-caller/commands", Some(&task)),
            ("POST", "/api/sessions/chosen-by-caller/say", Some(&json!({"text": "hi"}))),
        ] {
            let (status, body) = call(addr, method, path, body);
            assert_eq!(status, 404, "{method} {path}: {body}");
        }
        assert!(!dir.join(".heartwood/sessions/chosen-by-caller").exists());

        // Waiting for the run: it stops for a decision, so the command itself answers 202
        // with the set, whole, and the receipt.
        let said = json!({"text": "write ran.txt"});
        let (status, body) = call(addr, "POST", &format!("/api/sessions/{a}/say?wait=settled"), Some(&said));
        assert_eq!(status, 202, "{body}");
        let suspended: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(suspended["session"], a.as_str());
        assert_eq!(suspended["members"].as_array().map(Vec::len), Some(2), "{body}");
        // Typed text is one `say` command; here it meant a task (its events say so).
        assert_eq!(suspended["receipts"][0]["command_type"], "say", "{body}");
        assert!(body.contains("echo one >> ran.txt"), "{body}");

        // The event stream, opened now, replays the run and then says it is suspended (the
        // same typed update a client following the run got when it stopped).
        let mut stream = TcpStream::connect(addr).expect("connect");
        write!(
            stream,
            "GET /api/sessions/{a}/events?since=0 HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {SECRET}\r\n\r\n",
            addr.port()
        )
        .expect("write");
        stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        let mut updates = Vec::new();
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if let Some(data) = line.strip_prefix("data: ") {
                let update: Value = serde_json::from_str(data).expect("update json");
                let kind = update["update"].as_str().unwrap_or_default().to_owned();
                updates.push(update["event"]["type"].as_str().unwrap_or(&kind).to_owned());
                if kind == "suspended" {
                    assert_eq!(update["set_id"], suspended["set_id"], "{update}");
                    assert_eq!(update["members"].as_array().map(Vec::len), Some(2), "{update}");
                    break;
                }
            }
        }
        let at = |kind: &str| updates.iter().position(|k| k == kind);
        assert!(at("action_set_pending") < at("suspended"), "{updates:?}");

        // A later request with the decision continues the run; waiting, it answers 200 when done.
        let decide = json!({"type": "decide", "set_id": suspended["set_id"], "revision": suspended["revision"], "decision": "allow_once"});
        let (status, body) = call(addr, "POST", &format!("/api/sessions/{a}/commands?wait=settled"), Some(&decide));
        assert_eq!(status, 200, "{body}");
        let (_, body) = call(addr, "GET", &format!("/api/sessions/{a}/snapshot"), None);
        let snapshot: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(snapshot["projection"]["lifecycle"], "finished", "{body}");

        // The capability's actor is on the commands' receipts in the session's record.
        let receipts = std::fs::read_to_string(dir.join(format!(".heartwood/sessions/{a}/receipts.jsonl"))).expect("receipts");
        let actors: Vec<Value> = receipts.lines().map(|l| serde_json::from_str::<Value>(l).expect("receipt")["actor"].clone()).collect();
        assert_eq!(actors.len(), 2, "{receipts}");
        assert!(actors.iter().all(|a| a == "researcher (launch capability)"), "{receipts}");
    })
    .await
    .expect("client");
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_waits_for_a_decision_over_http_and_the_stream_carries_it() {
    let (_model, project, addr) = serving_a_two_action_run().await;

    let created = tokio::task::spawn_blocking(move || {
        let (status, body) = call(addr, "POST", "/api/sessions", None);
        assert_eq!(status, 201, "{body}");
        let session: Value = serde_json::from_str(&body).expect("json");
        let id = session["session"].as_str().expect("id").to_owned();
        // A refusal answers the status its kind maps to, with the kind and its sentence.
        let blank = json!({"text": "   "});
        let (status, body) = call(addr, "POST", &format!("/api/sessions/{id}/say"), Some(&blank));
        assert_eq!(status, 422, "blank text is input that cannot be used: {body}");
        let receipts: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(receipts[0]["outcome"]["kind"], "empty_text", "{body}");
        assert!(receipts[0]["outcome"]["reason"].as_str().is_some_and(|r| r.contains("empty")), "{body}");
        let task = json!({"type": "submit_task", "text": "write ran.txt", "command_id": "t1"});
        let (status, body) = call(addr, "POST", &format!("/api/sessions/{id}/commands"), Some(&task));
        assert_eq!(status, 200, "{body}");

        // The event stream, opened now, replays from the start and then follows.
        let mut stream = TcpStream::connect(addr).expect("connect");
        write!(
            stream,
            "GET /api/sessions/{id}/events?since=0 HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {SECRET}\r\n\r\n",
            addr.port()
        )
        .expect("write");
        stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        let events = BufReader::new(stream);

        let started = Instant::now();
        let snapshot = loop {
            let (status, body) = call(addr, "GET", &format!("/api/sessions/{id}/snapshot?since=0"), None);
            if status == 202 {
                break serde_json::from_str::<Value>(&body).expect("json");
            }
            assert!(started.elapsed() < Duration::from_secs(20), "never waited: {status} {body}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let set = &snapshot["projection"]["pending"];
        assert_eq!(set["members"].as_array().map(Vec::len), Some(2));
        let decide = json!({"type": "decide", "set_id": set["set_id"], "revision": set["revision"], "decision": "allow_once"});
        let (status, body) = call(addr, "POST", &format!("/api/sessions/{id}/commands"), Some(&decide));
        assert_eq!(status, 200, "{body}");
        let (status, body) = call(addr, "POST", &format!("/api/sessions/{id}/commands"), Some(&decide));
        assert_eq!(status, 409, "a second decision was not refused: {body}");
        let receipt: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(receipt["outcome"]["kind"], "nothing_pending", "{body}");

        let mut seen = Vec::new();
        for line in events.lines() {
            let Ok(line) = line else { break };
            if let Some(data) = line.strip_prefix("data: ") {
                let update: Value = serde_json::from_str(data).expect("update json");
                if let Some(kind) = update["event"]["type"].as_str() {
                    seen.push(kind.to_owned());
                }
                if update["event"]["type"] == "lifecycle_changed"
                    && update["event"]["lifecycle"] == "finished"
                {
                    break;
                }
            }
        }
        seen
    })
    .await
    .expect("client");
    assert!(
        created.contains(&"action_set_pending".to_owned()),
        "{created:?}"
    );
    assert!(
        created.contains(&"decision_recorded".to_owned()),
        "{created:?}"
    );
    let ran = std::fs::read_to_string(project.path().join("ran.txt")).expect("ran");
    assert_eq!(ran, "one\ntwo\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_websocket_stream_replays_and_follows_and_refuses_a_foreign_origin() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    let project = tempfile::tempdir().expect("project");
    let (addr, state) = support::serve(
        project.path(),
        Mode::Loopback,
        Capability::from_secret(SECRET),
    )
    .await;
    let id = "ws-session";
    let request = |origin: &str| {
        let mut request = format!(
            "ws://127.0.0.1:{}/api/sessions/{id}/ws?since=0",
            addr.port()
        )
        .into_client_request()
        .expect("request");
        let headers = request.headers_mut();
        headers.insert("Origin", origin.parse().expect("header"));
        headers.insert(
            "Authorization",
            format!("Bearer {SECRET}").parse().expect("header"),
        );
        request
    };
    let foreign = tokio_tungstenite::connect_async(request("http://evil.example.com")).await;
    assert!(foreign.is_err(), "a foreign origin was upgraded");

    // A task registers the session: history to replay.
    let model = ScriptedModelServer::start(Script::of(vec![Turn::text("Done.")]))
        .await
        .expect("model");
    support::connect_model(project.path(), &model.base_url());
    let register = heartwood_events::Command::new(
        heartwood_events::CommandId::parse("c2").expect("id"),
        heartwood_events::SessionId::parse(id).expect("id"),
        heartwood_events::CommandKind::SubmitTask {
            text: "say done".into(),
            policy: Default::default(),
        },
    );
    let _ = state.gateway.submit(register).await;
    let (mut socket, _) =
        tokio_tungstenite::connect_async(request(&format!("http://127.0.0.1:{}", addr.port())))
            .await
            .expect("upgrade");
    let first = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .expect("a message")
        .expect("open")
        .expect("frame");
    let update: Value = serde_json::from_str(first.to_text().expect("text")).expect("json");
    assert_eq!(
        update["event"]["seq"], 1,
        "the stream replays from the start: {update}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_answer_with_the_status_of_their_kind_and_typed_text_is_the_gateways_to_read() {
    let model = ScriptedModelServer::start(Script::of(vec![Turn::text("Done.")]))
        .await
        .expect("model");
    let project = tempfile::tempdir().expect("project");
    support::connect_model(project.path(), &model.base_url());
    let (addr, _state) = support::serve(
        project.path(),
        Mode::Loopback,
        Capability::from_secret(SECRET),
    )
    .await;
    tokio::task::spawn_blocking(move || {
        // A minted id is registered at once: a blank snapshot, not 404.
        let typed = mint(addr);
        let (status, body) = call(
            addr,
            "GET",
            &format!("/api/sessions/{typed}/snapshot"),
            None,
        );
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("Ready for a task."), "{body}");

        // Typed text on a resting session is a task, as in every interface.
        let said = json!({"text": "say done", "command_id": "t1"});
        let (status, body) = call(
            addr,
            "POST",
            &format!("/api/sessions/{typed}/say"),
            Some(&said),
        );
        assert_eq!(status, 200, "{body}");
        let receipts: Value = serde_json::from_str(&body).expect("receipts");
        assert_eq!(receipts[0]["command_type"], "say", "{body}");
        let (status, shown) = call(
            addr,
            "GET",
            &format!("/api/sessions/{typed}/snapshot?since=0"),
            None,
        );
        assert!(status == 200 || status == 202, "{shown}");
        let shown: Value = serde_json::from_str(&shown).expect("snapshot");
        let meant: Vec<&str> = shown["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["command"] == "t1")
            .filter_map(|e| e["type"].as_str())
            .collect();
        assert_eq!(meant, ["task_submitted"], "{shown}");

        // The same command id for another command: an invalid request, 400.
        let reused = json!({"type": "pause", "command_id": "t1"});
        let (status, body) = call(
            addr,
            "POST",
            &format!("/api/sessions/{typed}/commands"),
            Some(&reused),
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("already used"), "{body}");

        // A command in a newer format is refused by name, not read as this build's.
        let newer = json!({"type": "pause", "schema": 99});
        let (status, body) = call(
            addr,
            "POST",
            &format!("/api/sessions/{typed}/commands"),
            Some(&newer),
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("99"), "{body}");
        let unknown = json!({"type": "self_destruct"});
        let (status, body) = call(
            addr,
            "POST",
            &format!("/api/sessions/{typed}/commands"),
            Some(&unknown),
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("self_destruct"), "{body}");
    })
    .await
    .expect("client");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_runs_bound_files_preview_with_their_evidence_and_nothing_else_does() {
    let model = ScriptedModelServer::start(Script::of(Vec::new()))
        .await
        .expect("model");
    let project = tempfile::tempdir().expect("project");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, project.path());
    support::connect_model(project.path(), &model.base_url());
    let (addr, _state) = support::serve(
        project.path(),
        Mode::Loopback,
        Capability::from_secret(SECRET),
    )
    .await;
    let id = mint(addr);
    let started = json!({"type": "workflow_start", "definition": "tabular-ols",
        "question": "Does sleep predict the score?", "inputs": {}});
    let path = format!("/api/sessions/{id}/commands");
    let (status, body) =
        tokio::task::spawn_blocking(move || call(addr, "POST", &path, Some(&started)))
            .await
            .expect("join");
    assert_eq!(status, 200, "{body}");

    let get = |path: String| tokio::task::spawn_blocking(move || call(addr, "GET", &path, None));
    let (status, body) = get(format!(
        "/api/sessions/{id}/workflow/preview?path=data%2Fcohort.csv"
    ))
    .await
    .expect("join");
    assert_eq!(status, 200, "{body}");
    let preview: Value = serde_json::from_str(&body).expect("json");
    assert!(
        preview["text"]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("participant,")),
        "{preview}"
    );
    assert_eq!(preview["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(preview["evidence"], "not_judged", "no checks have run yet");

    // A file the run does not bind is not previewed here, whatever its path.
    let (status, body) = get(format!(
        "/api/sessions/{id}/workflow/preview?path=.heartwood%2Fconfig.toml"
    ))
    .await
    .expect("join");
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("not a file this workflow run binds"),
        "{body}"
    );
    // No model has been judged: there is no picture.
    let (status, _) = get(format!("/api/sessions/{id}/workflow/figure.svg"))
        .await
        .expect("join");
    assert_eq!(status, 404);

    // The run exports over HTTP as an RO-Crate, inside the project, recorded with its
    // destination; the crate verifies.
    let export = json!({"type": "export", "format": "ro_crate", "destination": "crate"});
    let path = format!("/api/sessions/{id}/commands");
    let (status, body) =
        tokio::task::spawn_blocking(move || call(addr, "POST", &path, Some(&export)))
            .await
            .expect("join");
    assert_eq!(status, 200, "{body}");
    let krate = project.path().join("crate");
    assert!(body.contains(&krate.display().to_string()), "{body}");
    let verdict = heartwood_gateway::verify_crate(&krate).expect("readable");
    assert!(verdict.problems.is_empty(), "{:?}", verdict.problems);
    assert!(krate.join("data/cohort.csv").exists());
}

/// The event stream's events up to `last`, read from a fresh connection that sends
/// `Last-Event-ID: resume` when given: each event's SSE id and its sequence number.
fn sse_events(addr: SocketAddr, id: &str, resume: Option<u64>, last: u64) -> Vec<(String, u64)> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let resume = resume
        .map(|n| format!("Last-Event-ID: {n}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET /api/sessions/{id}/events?since=0 HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {SECRET}\r\n{resume}\r\n",
        addr.port()
    )
    .expect("write");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let (mut events, mut sse_id) = (Vec::new(), String::new());
    for line in BufReader::new(stream).lines() {
        let line = line.expect("the stream went on until the last event");
        if let Some(given) = line.strip_prefix("id: ") {
            sse_id = given.to_owned();
        } else if let Some(data) = line.strip_prefix("data: ") {
            let update: Value = serde_json::from_str(data).expect("update json");
            if let Some(seq) = update["event"]["seq"].as_u64() {
                events.push((std::mem::take(&mut sse_id), seq));
                if seq >= last {
                    break;
                }
            }
        }
    }
    events
}

#[tokio::test(flavor = "multi_thread")]
async fn the_event_stream_resumes_after_the_last_event_id_it_sent() {
    let model = ScriptedModelServer::start(Script::of(vec![Turn::text("Done.")]))
        .await
        .expect("model");
    let project = tempfile::tempdir().expect("project");
    support::connect_model(project.path(), &model.base_url());
    let (addr, state) = support::serve(
        project.path(),
        Mode::Loopback,
        Capability::from_secret(SECRET),
    )
    .await;
    let id = heartwood_events::SessionId::parse("resumed").expect("id");
    let task = heartwood_events::Command::new(
        heartwood_events::CommandId::parse("c1").expect("id"),
        id.clone(),
        heartwood_events::CommandKind::SubmitTask {
            text: "say done".into(),
            policy: Default::default(),
        },
    );
    state.gateway.submit(task).await.expect("submitted");
    let done = state
        .gateway
        .settled(&id, Duration::from_secs(60))
        .await
        .expect("settled");
    let last = done.revision;
    assert!(last > 3, "a run records several events: {last}");
    let read = tokio::task::spawn_blocking(move || {
        let all = sse_events(addr, "resumed", None, last);
        // A client that reconnects after event 2 (EventSource sends the last id it got) is
        // sent what followed it, from event 3, once each: not the whole session again.
        let resumed = sse_events(addr, "resumed", Some(2), last);
        (all, resumed)
    })
    .await
    .expect("client");
    let (all, resumed) = read;
    assert_eq!(
        all.iter().map(|(_, seq)| *seq).collect::<Vec<_>>(),
        (1..=last).collect::<Vec<_>>()
    );
    for (sse_id, seq) in &all {
        assert_eq!(
            sse_id,
            &seq.to_string(),
            "each event carries its seq as its id"
        );
    }
    assert_eq!(
        resumed.iter().map(|(_, seq)| *seq).collect::<Vec<_>>(),
        (3..=last).collect::<Vec<_>>()
    );
}
