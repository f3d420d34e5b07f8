//! Sessions in a shared PostgreSQL store, from the command line: `sessions copy` moves a
//! session there and back byte for byte, and `sessions ls/show/verify/export --session-store`
//! answer as they do for the same session in files. PostgreSQL is started by the test.

use std::path::Path;

mod support;
use heartwood_testkit::postgres::PgServer;
use support::replicas::{answer, answer_text, capability_file};
use support::{heartwood, text};

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Runs the journal's independent Python verifier on a bundle or session directory.
fn python_verify(dir: &Path) -> bool {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../heartwood-audit/tests/verify_session.py");
    std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_session_copied_to_postgres_answers_ls_show_verify_and_export_as_in_files() {
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let url = server.url();
    let project = heartwood_testkit::sessions::project_with_sessions(&["lab-1"], 3);
    let dir = project.path();
    let copied = ok(&heartwood(
        dir,
        &["sessions", "copy", "lab-1", "--to", &url],
    ));
    assert!(copied.contains("copied session lab-1"), "{copied}");

    let listed = ok(&heartwood(
        dir,
        &["sessions", "--session-store", &url, "ls"],
    ));
    assert!(listed.contains("lab-1"), "{listed}");
    let in_files = ok(&heartwood(dir, &["sessions", "verify", "lab-1"]));
    let in_store = ok(&heartwood(
        dir,
        &["sessions", "verify", "lab-1", "--session-store", &url],
    ));
    assert_eq!(in_store, in_files, "the same chain, the same answer");
    let shown = ok(&heartwood(
        dir,
        &[
            "sessions",
            "show",
            "lab-1",
            "--json",
            "--session-store",
            &url,
        ],
    ));
    let shown: serde_json::Value = serde_json::from_str(&shown).expect("show --json");
    assert_eq!(shown["integrity"]["intact"], true, "{shown}");

    let out = tempfile::tempdir().expect("tempdir");
    let bundle = out.path().join("bundle");
    ok(&heartwood(
        dir,
        &[
            "sessions",
            "export",
            "lab-1",
            "--session-store",
            &url,
            "--out",
            bundle.to_str().expect("utf-8"),
        ],
    ));
    assert!(python_verify(&bundle), "the Python verifier refused it");
    let files_bundle = out.path().join("files-bundle");
    ok(&heartwood(
        dir,
        &[
            "sessions",
            "export",
            "lab-1",
            "--out",
            files_bundle.to_str().expect("utf-8"),
        ],
    ));
    for file in ["events.jsonl", "audit.jsonl", "meta.json"] {
        assert_eq!(
            std::fs::read(bundle.join(file)).expect("store bundle"),
            std::fs::read(files_bundle.join(file)).expect("files bundle"),
            "{file} differs between the stores' exports"
        );
    }

    // And back into another project's files, where it verifies as well.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    ok(&heartwood(
        elsewhere.path(),
        &["sessions", "copy", "lab-1", "--from", &url, "--to", "files"],
    ));
    ok(&heartwood(
        elsewhere.path(),
        &["sessions", "verify", "lab-1"],
    ));
    let refused = heartwood(dir, &["sessions", "copy", "lab-1", "--to", &url]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("already holds"),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn serve_refuses_a_capability_file_others_can_read() {
    use std::os::unix::fs::PermissionsExt;
    let project = tempfile::tempdir().expect("tempdir");
    let secret = project.path().join("capability");
    std::fs::write(&secret, "0123456789abcdef0123456789abcdef\n").expect("write");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let refused = heartwood(
        project.path(),
        &[
            "serve",
            "--capability-file",
            secret.to_str().expect("utf-8"),
        ],
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("chmod 600"),
        "{}",
        text(&refused.stderr)
    );
}

/// Stops a replica as Ctrl-C does, so it lets go of its sessions' leases.
fn stop(mut served: support::Served) {
    let pid = served.child.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status();
    let _ = served.child.wait();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_sent_to_another_replica_is_relayed_to_the_replica_driving_the_run() {
    use heartwood_testkit::Script;
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (project, _model) = support::project_with(Script::of(vec![
        support::two_actions(),
        support::finish("done"),
    ]))
    .await;
    let secrets = tempfile::tempdir().expect("tempdir");
    let (file, token) = capability_file(secrets.path());
    let url = server.url();
    let (a, b) = tokio::task::spawn_blocking({
        let dir = project.path().to_owned();
        let (url, file) = (url.clone(), file.display().to_string());
        move || {
            let args = ["--session-store", &url, "--capability-file", &file];
            (
                support::serve_with(&dir, &args, &[]),
                support::serve_with(&dir, &args, &[]),
            )
        }
    })
    .await
    .expect("replicas");
    assert_eq!(
        (a.token.as_str(), b.token.as_str()),
        (token.as_str(), token.as_str())
    );
    let (a_port, b_port) = (a.port, b.port);

    let ran = tokio::task::spawn_blocking(move || {
        let call = |port: u16, method: &str, path: &str, body: Option<&str>| {
            answer(&support::http(port, method, path, Some(&token), body))
        };
        let (status, minted) = call(a_port, "POST", "/api/sessions", None);
        assert_eq!(status, 201, "{minted}");
        let id = minted["session"].as_str().expect("id").to_owned();
        let task = r#"{"type": "submit_task", "text": "write ran.txt", "command_id": "t1"}"#;
        let (status, body) = call(
            a_port,
            "POST",
            &format!("/api/sessions/{id}/commands"),
            Some(task),
        );
        assert_eq!(status, 200, "{body}");

        // Replica b reads the session from the store and sees the set waiting.
        let set = loop {
            let (_, snapshot) = call(b_port, "GET", &format!("/api/sessions/{id}/snapshot"), None);
            if !snapshot["projection"]["pending"].is_null() {
                break snapshot["projection"]["pending"].clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let decide = serde_json::json!({"type": "decide", "set_id": set["set_id"],
            "revision": set["revision"], "decision": "allow_once", "command_id": "d1"});
        let (status, body) = call(
            b_port,
            "POST",
            &format!("/api/sessions/{id}/commands"),
            Some(&decide.to_string()),
        );
        assert_eq!(status, 200, "the relayed decision: {body}");
        // A retry through either replica is answered from the receipt, not run again.
        let (status, body) = call(
            a_port,
            "POST",
            &format!("/api/sessions/{id}/commands"),
            Some(&decide.to_string()),
        );
        assert_eq!(status, 200, "{body}");
        loop {
            let (_, snapshot) = call(b_port, "GET", &format!("/api/sessions/{id}/snapshot"), None);
            if snapshot["projection"]["lifecycle"] == "finished" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        id
    })
    .await
    .expect("client");
    drop((a, b));
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n",
        "each action ran once"
    );
    let verified = ok(&heartwood(
        project.path(),
        &["sessions", "verify", &ran, "--session-store", &url],
    ));
    assert!(verified.contains("intact"), "{verified}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_while_a_set_waits_is_replaced_and_nothing_runs_twice() {
    use heartwood_testkit::Script;
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (project, _model) = support::project_with(Script::of(vec![
        support::two_actions(),
        support::finish("done"),
    ]))
    .await;
    let secrets = tempfile::tempdir().expect("tempdir");
    let (file, token) = capability_file(secrets.path());
    let url = server.url();
    let (mut a, b) = tokio::task::spawn_blocking({
        let dir = project.path().to_owned();
        let (url, file) = (url.clone(), file.display().to_string());
        move || {
            let args = [
                "--session-store",
                &url,
                "--capability-file",
                &file,
                "--lease-seconds",
                "2",
            ];
            (
                support::serve_with(&dir, &args, &[]),
                support::serve_with(&dir, &args, &[]),
            )
        }
    })
    .await
    .expect("replicas");
    let (a_port, b_port) = (a.port, b.port);
    let id = tokio::task::spawn_blocking(move || {
        let call = |port: u16, method: &str, path: &str, body: Option<&str>| {
            answer(&support::http(port, method, path, Some(&token), body))
        };
        let (_, minted) = call(a_port, "POST", "/api/sessions", None);
        let id = minted["session"].as_str().expect("id").to_owned();
        let task = r#"{"type": "submit_task", "text": "write ran.txt", "command_id": "t1"}"#;
        let (status, body) = call(
            a_port,
            "POST",
            &format!("/api/sessions/{id}/commands"),
            Some(task),
        );
        assert_eq!(status, 200, "{body}");
        let set = loop {
            let (_, snapshot) = call(b_port, "GET", &format!("/api/sessions/{id}/snapshot"), None);
            if !snapshot["projection"]["pending"].is_null() {
                break snapshot["projection"]["pending"].clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        // Replica a dies at once (SIGKILL): it releases nothing.
        let _ = a.child.kill();
        let _ = a.child.wait();
        let decide = serde_json::json!({"type": "decide", "set_id": set["set_id"],
            "revision": set["revision"], "decision": "allow_once", "command_id": "d1"});
        let (status, body) = call(
            b_port,
            "POST",
            &format!("/api/sessions/{id}/commands"),
            Some(&decide.to_string()),
        );
        assert_eq!(status, 200, "the decision after the kill: {body}");
        loop {
            let (_, snapshot) = call(b_port, "GET", &format!("/api/sessions/{id}/snapshot"), None);
            if snapshot["projection"]["lifecycle"] == "finished" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        id
    })
    .await
    .expect("client");
    stop(b);
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n",
        "each action ran once"
    );
    let out = tempfile::tempdir().expect("tempdir");
    let bundle = out.path().join("bundle");
    ok(&heartwood(
        project.path(),
        &[
            "sessions",
            "export",
            &id,
            "--session-store",
            &url,
            "--out",
            bundle.to_str().expect("utf-8"),
        ],
    ));
    assert!(python_verify(&bundle), "the exported chain did not verify");
}

#[test]
fn a_replica_answers_503_with_the_reason_while_the_store_is_down_and_recovers() {
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let url = server.url();
    let project = heartwood_testkit::sessions::project_with_sessions(&["kept"], 2);
    ok(&heartwood(
        project.path(),
        &["sessions", "copy", "kept", "--to", &url],
    ));
    let secrets = tempfile::tempdir().expect("tempdir");
    let (file, token) = capability_file(secrets.path());
    let file = file.display().to_string();
    let replica = support::serve_with(
        project.path(),
        &["--session-store", &url, "--capability-file", &file],
        &[],
    );
    let get = |path: &str| {
        answer_text(&support::http(
            replica.port,
            "GET",
            path,
            Some(&token),
            None,
        ))
    };
    let (status, body) = get("/api/sessions");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("kept"), "{body}");

    server.stop();
    let (status, body) = get("/api/sessions");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("cannot be reached"), "{body}");
    let (status, body) = get("/api/sessions/kept/snapshot");
    assert_eq!(status, 503, "not 'no such session': {body}");

    server.resume().expect("the store comes back");
    let (status, body) = get("/api/sessions");
    assert_eq!(status, 200, "after the store returned: {body}");
    assert!(body.contains("kept"), "{body}");
}

/// The store stops while a run waits for a decision and comes back: the decision sent while it
/// is down is refused with 503 (not acknowledged, so not lost), the same decision sent again
/// once it returns is taken, the run finishes on the same replica, every action ran once and
/// the chain verifies.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_store_stops_and_returns_mid_run_finishes_and_nothing_runs_twice() {
    use heartwood_testkit::Script;
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (project, _model) = support::project_with(Script::of(vec![
        support::two_actions(),
        support::finish("done"),
    ]))
    .await;
    let secrets = tempfile::tempdir().expect("tempdir");
    let (file, token) = capability_file(secrets.path());
    let url = server.url();
    let replica = tokio::task::spawn_blocking({
        let dir = project.path().to_owned();
        let (url, file) = (url.clone(), file.display().to_string());
        move || {
            support::serve_with(
                &dir,
                &["--session-store", &url, "--capability-file", &file],
                &[],
            )
        }
    })
    .await
    .expect("replica");
    let port = replica.port;
    let ran_file = project.path().join("ran.txt");
    let (id, server) = tokio::task::spawn_blocking(move || {
        let call = |method: &str, path: &str, body: Option<&str>| {
            answer(&support::http(port, method, path, Some(&token), body))
        };
        let (status, minted) = call("POST", "/api/sessions", None);
        assert_eq!(status, 201, "{minted}");
        let id = minted["session"].as_str().expect("id").to_owned();
        let commands = format!("/api/sessions/{id}/commands");
        let task = r#"{"type": "submit_task", "text": "write ran.txt", "command_id": "t1"}"#;
        let (status, body) = call("POST", &commands, Some(task));
        assert_eq!(status, 200, "{body}");
        let set = loop {
            let (_, snapshot) = call("GET", &format!("/api/sessions/{id}/snapshot"), None);
            if !snapshot["projection"]["pending"].is_null() {
                break snapshot["projection"]["pending"].clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let decide = serde_json::json!({"type": "decide", "set_id": set["set_id"],
            "revision": set["revision"], "decision": "allow_once", "command_id": "d1"})
        .to_string();

        server.stop();
        let (status, body) = call("POST", &commands, Some(&decide));
        assert_eq!(status, 503, "a decision the store cannot record: {body}");
        assert!(
            !ran_file.exists(),
            "a decision the store refused ran its actions anyway"
        );

        server.resume().expect("the store comes back");
        let (status, body) = loop {
            let (status, body) = call("POST", &commands, Some(&decide));
            // The replica may still be reopening the session from the store.
            if status != 503 {
                break (status, body);
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        };
        assert_eq!(status, 200, "the decision once the store returned: {body}");
        loop {
            let (_, snapshot) = call("GET", &format!("/api/sessions/{id}/snapshot"), None);
            if snapshot["projection"]["lifecycle"] == "finished"
                && snapshot["durable"] == snapshot["revision"]
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        (id, server)
    })
    .await
    .expect("client");
    drop(replica);
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n",
        "each action ran once"
    );
    let verified = ok(&heartwood(
        project.path(),
        &["sessions", "verify", &id, "--session-store", &server.url()],
    ));
    assert!(verified.contains("intact"), "{verified}");
}
