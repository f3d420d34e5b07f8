//! Several `heartwood serve` replicas behind a real load balancer (HAProxy from Debian, round
//! robin, so consecutive requests reach different replicas), sharing a real PostgreSQL session
//! store: a session minted, driven and decided entirely through the balancer is one session,
//! through the API and through the page in Chromium.
//! Where HAProxy or PostgreSQL is missing, the test fails under `CI=true` and skips otherwise.

use std::path::Path;
use std::process::{Child, Command, Stdio};

mod support;
use heartwood_testkit::postgres::PgServer;
use support::replicas::{answer, capability_file};

/// A free TCP port of 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// HAProxy in front of `replicas`, round robin, one connection per request.
fn balancer(dir: &Path, port: u16, replicas: &[u16]) -> Option<Running> {
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, p)| format!("    server r{i} 127.0.0.1:{p}\n"))
        .collect();
    let config = format!(
        "global\n    maxconn 256\ndefaults\n    mode http\n    timeout connect 2s\n    \
         timeout client 60s\n    timeout server 60s\n    option http-server-close\n\
         frontend heartwood\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\
         backend replicas\n    balance roundrobin\n{servers}"
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config).expect("haproxy.cfg");
    let started = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&path)
        .stdout(Stdio::null())
        .spawn();
    match started {
        Ok(child) => Some(Running(child)),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("HAProxy is required under CI=true: {e}")
        }
        Err(e) => {
            eprintln!("skipped: HAProxy could not start here ({e}); apt-get install haproxy");
            None
        }
    }
}

/// Waits until something accepts connections on `port`.
fn accepting(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("nothing listens on {port}");
}

/// Two `heartwood serve` replicas of `project` on one PostgreSQL store, behind HAProxy; each
/// process is killed when this is dropped.
struct Deployment {
    balancer_port: u16,
    /// The launch capability the replicas share (from a 0600 file).
    token: String,
    _replicas: Vec<Running>,
    _balancer: Running,
    _secrets: tempfile::TempDir,
}

impl Deployment {
    /// `None` (the test skips) where HAProxy cannot start outside CI.
    fn start(server: &PgServer, project: &Path) -> Option<Deployment> {
        let secrets = tempfile::tempdir().expect("tempdir");
        let (file, token) = capability_file(secrets.path());
        let lb = free_port();
        let ports = [free_port(), free_port()];
        let origin = format!("http://127.0.0.1:{lb}");
        let replicas: Vec<Running> = ports
            .iter()
            .map(|port| {
                let child = Command::new(env!("CARGO_BIN_EXE_heartwood"))
                    .args(["serve", "--port", &port.to_string()])
                    .args(["--session-store", &server.url()])
                    .args(["--capability-file", file.to_str().expect("utf-8")])
                    .args(["--trusted-proxy", "127.0.0.1", "--origin", &origin])
                    .args(["--base-path", "/"])
                    .current_dir(project)
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("serve");
                Running(child)
            })
            .collect();
        for port in ports {
            accepting(port);
        }
        let balancer = balancer(secrets.path(), lb, &ports)?;
        accepting(lb);
        Some(Deployment {
            balancer_port: lb,
            token,
            _replicas: replicas,
            _balancer: balancer,
            _secrets: secrets,
        })
    }
}

/// The event stream of session `id` through the balancer, resumed after event `since` as a
/// browser resumes it (`Last-Event-ID`): the sequence numbers of
/// the durable events it delivers, in order (a replica that does not drive the session sends
/// what it reads from the store as it moves), read until one is `until()` (0 while unknown) or
/// a minute has passed.
fn streamed(port: u16, token: &str, id: &str, since: u64, until: &dyn Fn() -> u64) -> Vec<u64> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET /api/sessions/{id}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\
         Last-Event-ID: {since}\r\n\r\n"
    )
    .expect("write");
    stream
        .set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .expect("timeout");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (mut text, mut seqs) = (String::new(), Vec::new());
    let mut buffer = [0u8; 8192];
    while std::time::Instant::now() < deadline {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buffer[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("reading the stream: {e}"),
        }
        while let Some(end) = text.find('\n') {
            let line: String = text.drain(..=end).collect();
            let Some(data) = line.trim_end().strip_prefix("data:") else {
                continue;
            };
            let update: serde_json::Value = serde_json::from_str(data.trim()).unwrap_or_default();
            if let Some(seq) = update["event"]["seq"].as_u64() {
                seqs.push(seq);
            }
        }
        let last = until();
        if last > 0 && seqs.last().is_some_and(|s| *s >= last) {
            break;
        }
    }
    seqs
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_driven_through_a_balancer_over_two_replicas_is_one_session() {
    use heartwood_testkit::Script;
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let (project, _model) = support::project_with(Script::of(vec![
        support::two_actions(),
        support::finish("done"),
    ]))
    .await;
    let Some(deployment) = Deployment::start(&server, project.path()) else {
        return;
    };
    let (lb, token) = (deployment.balancer_port, deployment.token.clone());

    let id = tokio::task::spawn_blocking(move || {
        // Every request goes through the balancer, which alternates between the replicas.
        let call = |method: &str, path: &str, body: Option<&str>| {
            answer(&support::http(lb, method, path, Some(&token), body))
        };
        let (status, minted) = call("POST", "/api/sessions", None);
        assert_eq!(status, 201, "{minted}");
        let id = minted["session"].as_str().expect("id").to_owned();
        let task = r#"{"type": "submit_task", "text": "write ran.txt", "command_id": "t1"}"#;
        let (status, body) = call("POST", &format!("/api/sessions/{id}/commands"), Some(task));
        assert_eq!(status, 200, "the task, on the other replica: {body}");
        let set = loop {
            let (_, snapshot) = call("GET", &format!("/api/sessions/{id}/snapshot"), None);
            if !snapshot["projection"]["pending"].is_null() {
                break snapshot["projection"]["pending"].clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        // A reader follows the session's stream through the balancer while the decision is
        // answered through the replicas: it sees every event once, in order, live.
        let finished = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let follower = {
            let (finished, token, id) = (finished.clone(), token.clone(), id.clone());
            std::thread::spawn(move || {
                streamed(lb, &token, &id, 0, &|| {
                    finished.load(std::sync::atomic::Ordering::SeqCst)
                })
            })
        };
        let decide = serde_json::json!({"type": "decide", "set_id": set["set_id"],
            "revision": set["revision"], "decision": "allow_once", "command_id": "d1"})
        .to_string();
        for _ in 0..2 {
            // The same decision through both replicas: answered once.
            let (status, body) = call(
                "POST",
                &format!("/api/sessions/{id}/commands"),
                Some(&decide),
            );
            assert_eq!(status, 200, "{body}");
        }
        let last = loop {
            let (_, snapshot) = call("GET", &format!("/api/sessions/{id}/snapshot"), None);
            if snapshot["projection"]["lifecycle"] == "finished"
                && snapshot["durable"] == snapshot["revision"]
            {
                break snapshot["revision"].as_u64().expect("revision");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        finished.store(last, std::sync::atomic::Ordering::SeqCst);
        let every: Vec<u64> = (1..=last).collect();
        assert_eq!(follower.join().expect("follower"), every, "followed live");
        // A reader that lost its connection resumes from the last event it saw, on whichever
        // replica the balancer sends it to (two in a row reach both).
        let half = last / 2;
        for _ in 0..2 {
            assert_eq!(
                streamed(lb, &token, &id, half, &|| last),
                every[half as usize..].to_vec(),
                "resumed after event {half}"
            );
        }
        let (status, rows) = call("GET", "/api/sessions", None);
        assert_eq!(status, 200);
        assert!(rows.to_string().contains(&id), "{rows}");
        id
    })
    .await
    .expect("client");
    drop(deployment);
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n",
        "each action ran once"
    );
    // The replicas were killed: the store's leases expire, then the command line verifies.
    let verified = loop {
        let out = support::heartwood(
            project.path(),
            &["sessions", "verify", &id, "--session-store", &server.url()],
        );
        if out.status.success() {
            break support::text(&out.stdout);
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(verified.contains("intact"), "{verified}");
}

/// The page, in headless Chromium, through the balancer: its requests alternate between the
/// replicas (the stream stays on one, each command and read goes round), and the whole flow
/// the page test drives against one `serve` holds: a set rejected with a reason, the next set
/// with an edit reviewed as a diff and allowed, the run finished, the page reloaded.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_through_a_balancer_over_two_replicas_runs_one_session() {
    use heartwood_testkit::{Script, Turn};
    use serde_json::json;
    let Some(node_path) = support::node_path() else {
        return;
    };
    let Some(server) = PgServer::start_or_skip() else {
        return;
    };
    let echo = |line: &str| {
        (
            "terminal",
            json!({ "command": format!("echo {line} >> ran.txt") }),
        )
    };
    let (project, model) = support::project_with(Script::of(vec![
        Turn::calls(&[echo("A1"), echo("A2")]),
        Turn::calls(&[
            echo("B1"),
            (
                "file_editor",
                json!({"command": "str_replace", "path": "notes.txt",
                       "old_str": "status: draft", "new_str": "status: final",
                       "summary": "mark the notes final"}),
            ),
        ]),
        Turn::calls(&[(
            "finish",
            json!({"message": "**Wrote** B:\n\n- `ran.txt`\n- notes.txt"}),
        )]),
    ]))
    .await;
    std::fs::write(
        project.path().join("notes.txt"),
        "title: cohort\nstatus: draft\n",
    )
    .expect("notes");
    let Some(deployment) = Deployment::start(&server, project.path()) else {
        return;
    };
    let url = format!(
        "http://127.0.0.1:{}/?token={}",
        deployment.balancer_port, deployment.token
    );
    let web_tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../heartwood-web/tests");
    let screenshot =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-balancer.png");
    let out = tokio::process::Command::new("node")
        .arg(web_tests.join("browser.mjs"))
        .arg(&url)
        .arg(&screenshot)
        .env("NODE_PATH", &node_path)
        .env("PATIENCE_MS", "60000")
        .output()
        .await
        .expect("node");
    let stdout = support::text(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        support::text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        "B1\n",
        "only the allowed set ran, once"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("notes.txt")).expect("notes"),
        "title: cohort\nstatus: final\n"
    );
    assert!(
        model.requests()[1]["messages"]
            .to_string()
            .contains("append to notes.txt instead"),
        "the reason given on the page never reached the model"
    );
    let session = stdout
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .expect("session line")
        .to_owned();
    drop(deployment);
    let verified = loop {
        let out = support::heartwood(
            project.path(),
            &[
                "sessions",
                "verify",
                &session,
                "--session-store",
                &server.url(),
            ],
        );
        if out.status.success() {
            break support::text(&out.stdout);
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(verified.contains("intact"), "{verified}");
}
