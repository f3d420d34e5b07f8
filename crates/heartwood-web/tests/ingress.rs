//! The ingress suite: hostile requests over real TCP to a running server. None reaches a
//! handler (the server counts admitted requests), each gets a plain 4xx; well-formed requests
//! with the capability are served.

mod support;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use heartwood_web::{AppState, Capability, Mode};

const SECRET: &str = "s3cret-capability-for-tests";

async fn start(mode: impl FnOnce(u16) -> Mode) -> (tempfile::TempDir, SocketAddr, Arc<AppState>) {
    let project = tempfile::tempdir().expect("project");
    // The mode does not depend on the port; the closure keeps the call sites readable.
    let (addr, state) =
        support::serve(project.path(), mode(0), Capability::from_secret(SECRET)).await;
    (project, addr, state)
}

/// Sends a raw request (so headers and paths go out exactly as written); returns the status.
fn raw(addr: SocketAddr, request: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn request(method: &str, target: &str, headers: &[String]) -> String {
    let mut text = format!("{method} {target} HTTP/1.1\r\n");
    for h in headers {
        text.push_str(h);
        text.push_str("\r\n");
    }
    text.push_str("Connection: close\r\nContent-Length: 0\r\n\r\n");
    text
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_requests_never_reach_a_handler() {
    let (_project, addr, state) = start(|_| Mode::Loopback).await;
    let port = addr.port();
    let host = format!("Host: 127.0.0.1:{port}");
    let auth = format!("Authorization: Bearer {SECRET}");
    let ok = |extra: &[&str]| {
        let mut h = vec![host.clone(), auth.clone()];
        h.extend(extra.iter().map(|s| (*s).to_owned()));
        h
    };
    let with_host = |host: &str| vec![format!("Host: {host}"), auth.clone()];
    let mut cases: Vec<(&str, String, Vec<String>)> = vec![
        // Host
        ("GET", "/api/sessions".into(), with_host("evil.example.com")),
        (
            "GET",
            "/api/sessions".into(),
            with_host(&format!("evil.example.com:{port}")),
        ),
        ("GET", "/api/sessions".into(), with_host("127.0.0.1:1")),
        ("GET", "/api/sessions".into(), with_host("localhost")),
        (
            "GET",
            "/api/sessions".into(),
            with_host(&format!("127.0.0.1.nip.io:{port}")),
        ),
        (
            "GET",
            "/api/sessions".into(),
            with_host(&format!("0.0.0.0:{port}")),
        ),
        (
            "GET",
            "/api/sessions".into(),
            with_host(&format!("192.168.1.5:{port}")),
        ),
        ("GET", "/api/sessions".into(), vec![auth.clone()]),
        // An absolute-form target with the right Host: the host must come from Host alone.
        ("GET", "http://evil.example/api/sessions".into(), ok(&[])),
        (
            "GET",
            format!("http://127.0.0.1:{port}/api/sessions"),
            ok(&[]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&[&format!("Host: localhost:{port}")]),
        ),
        // Origin
        (
            "POST",
            "/api/sessions".into(),
            ok(&["Origin: http://evil.example.com"]),
        ),
        ("POST", "/api/sessions".into(), ok(&["Origin: null"])),
        (
            "POST",
            "/api/sessions".into(),
            ok(&[&format!("Origin: https://127.0.0.1:{port}")]),
        ),
        (
            "POST",
            "/api/sessions".into(),
            ok(&["Origin: http://localhost:1"]),
        ),
        (
            "POST",
            "/api/sessions".into(),
            ok(&[&format!("Origin: http://127.0.0.1:{port}.evil.com")]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&[
                "Origin: http://attacker.test",
                "Origin: http://attacker2.test",
            ]),
        ),
        // Capability
        ("GET", "/api/sessions".into(), vec![host.clone()]),
        (
            "GET",
            "/api/sessions".into(),
            vec![host.clone(), "Authorization: Bearer wrong".into()],
        ),
        (
            "GET",
            "/api/sessions".into(),
            vec![host.clone(), format!("Authorization: bearer {SECRET}")],
        ),
        (
            "GET",
            "/api/sessions".into(),
            vec![host.clone(), format!("Authorization: Basic {SECRET}")],
        ),
        (
            "GET",
            "/api/sessions".into(),
            vec![host.clone(), format!("Authorization: Bearer {SECRET}x")],
        ),
        (
            "GET",
            "/api/sessions".into(),
            vec![host.clone(), "Authorization: Bearer s3cret".into()],
        ),
        (
            "GET",
            "/api/sessions".into(),
            vec![host.clone(), "Cookie: heartwood_capability=wrong".into()],
        ),
        (
            "GET",
            "/api/sessions".into(),
            vec![host.clone(), format!("Cookie: other={SECRET}")],
        ),
        (
            "GET",
            format!("/api/sessions?token={SECRET}"),
            vec![host.clone()],
        ),
        (
            "POST",
            format!("/api/sessions?token={SECRET}"),
            vec![host.clone()],
        ),
        ("GET", "/".into(), vec![host.clone()]),
        ("GET", "/?token=wrong".into(), vec![host.clone()]),
        // Forwarding headers from an untrusted peer
        (
            "GET",
            "/api/sessions".into(),
            ok(&["Forwarded: for=10.0.0.1;host=evil.example.com"]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&["X-Forwarded-For: 10.0.0.1"]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&["X-Forwarded-Host: evil.example.com"]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&["X-Forwarded-Proto: https"]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&["X-Forwarded-Prefix: /user/x/"]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&["x-forwarded-port: 443"]),
        ),
        // Duplicated security headers
        (
            "GET",
            "/api/sessions".into(),
            ok(&[&format!("Authorization: Bearer {SECRET}")]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&["Cookie: a=1", "Cookie: b=2"]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&[
                &format!("Origin: http://127.0.0.1:{port}"),
                &format!("Origin: http://127.0.0.1:{port}"),
            ]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&["Upgrade: websocket", "Upgrade: websocket"]),
        ),
        (
            "GET",
            "/api/sessions".into(),
            ok(&["Sec-WebSocket-Key: a", "Sec-WebSocket-Key: b"]),
        ),
        // WebSocket upgrades
        (
            "GET",
            "/api/sessions/s/events".into(),
            ok(&[
                "Upgrade: websocket",
                "Connection: Upgrade",
                "Origin: http://evil.example.com",
            ]),
        ),
        (
            "GET",
            "/api/sessions/s/events".into(),
            ok(&["Upgrade: websocket", "Connection: Upgrade"]),
        ),
    ];
    // Traversal and encoding tricks, each with a valid host and capability.
    for path in [
        "/api/../api/sessions",
        "/api/./sessions",
        "//api/sessions",
        "/api//sessions",
        "/api/sessions/..",
        "/api/sessions/.",
        "/api/sessions/%2e%2e",
        "/api/sessions/%2E%2E/%2E%2E/etc/passwd",
        "/api%2Fsessions",
        "/api%2fsessions",
        "/api/sessions/..%2f..%2fetc",
        "/api\\sessions",
        "/api/sessions/%00",
        "/api/sessions/x%5c..%5c",
        "/api/sessions/%252e%252e",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/api/sessions/%u002e%u002e",
        "/api/sessions/.%2e/",
        "/api/sessions/%c0%ae%c0%ae/",
        "api/sessions",
        "/api/sessions/s/snapshot/..",
    ] {
        cases.push(("GET", path.to_owned(), ok(&[])));
    }
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let before = state.admitted.load(Ordering::SeqCst);
    let mut statuses = Vec::new();
    for (method, target, headers) in &cases {
        let status = raw(addr, &request(method, target, headers));
        assert!(
            (400..500).contains(&status),
            "{method} {target} {headers:?} was answered {status}"
        );
        statuses.push(status);
    }
    assert_eq!(
        state.admitted.load(Ordering::SeqCst),
        before,
        "a hostile request reached a handler"
    );

    // Controls: the same server serves well-formed requests.
    assert_eq!(raw(addr, &request("GET", "/api/sessions", &ok(&[]))), 200);
    let origin = format!("Origin: http://127.0.0.1:{port}");
    assert_eq!(
        raw(addr, &request("POST", "/api/sessions", &ok(&[&origin]))),
        201
    );
    assert_eq!(
        raw(
            addr,
            &request(
                "GET",
                "/api/sessions",
                &[
                    host.clone(),
                    format!("Cookie: x=1; heartwood_capability={SECRET}")
                ]
            )
        ),
        200
    );
    assert_eq!(
        raw(
            addr,
            &request(
                "GET",
                &format!("/?token={SECRET}"),
                std::slice::from_ref(&host)
            )
        ),
        303
    );
    assert_eq!(state.admitted.load(Ordering::SeqCst), before + 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trusted_proxy_mode_serves_only_the_proxy_and_its_origin() {
    let proxy: IpAddr = "10.9.8.7".parse().expect("ip");
    let (_project, addr, state) = start(|_| Mode::TrustedProxy {
        origin: "https://heartwood.example.org".into(),
        base_path: "/hw/".into(),
        proxies: vec![proxy],
    })
    .await;
    // Our loopback peer is not the declared proxy: refused whatever it says.
    let headers = vec![
        "Host: heartwood.example.org".to_owned(),
        format!("Authorization: Bearer {SECRET}"),
        "X-Forwarded-For: 10.9.8.7".to_owned(),
    ];
    assert_eq!(
        raw(addr, &request("GET", "/hw/api/sessions", &headers)),
        403
    );
    assert_eq!(state.admitted.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn behind_a_jupyter_proxy_prefix_the_api_answers_under_the_prefix() {
    let (_project, addr, state) = start(|_| Mode::JupyterProxy {
        base_path: "/user/alice/proxy/8765/".into(),
        external_host: "hub.example.org".into(),
    })
    .await;
    let headers = |prefix: &str| {
        vec![
            "Host: hub.example.org".to_owned(),
            format!("Authorization: Bearer {SECRET}"),
            format!("X-Forwarded-Prefix: {prefix}"),
        ]
    };
    let base = "/user/alice/proxy/8765";
    assert_eq!(
        raw(
            addr,
            &request("GET", &format!("{base}/api/sessions"), &headers(base))
        ),
        200
    );
    assert_eq!(
        raw(
            addr,
            &request(
                "GET",
                &format!("{base}/api/sessions"),
                &headers("/user/bob/proxy/8765")
            )
        ),
        400
    );
    assert_eq!(
        raw(addr, &request("GET", "/api/sessions", &headers(base))),
        404
    );
    assert_eq!(state.admitted.load(Ordering::SeqCst), 1);
}

/// Sends a raw request; returns the whole response text.
fn raw_text(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    String::from_utf8_lossy(&response).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_knows_its_base_path_and_never_holds_the_capability() {
    let (_project, addr, _state) = start(|_| Mode::JupyterProxy {
        base_path: "/user/alice/proxy/8765/".into(),
        external_host: "hub.example.org".into(),
    })
    .await;
    let headers = [
        "Host: hub.example.org".to_owned(),
        format!("Cookie: heartwood_capability={SECRET}"),
    ];
    let response = raw_text(addr, &request("GET", "/user/alice/proxy/8765/", &headers));
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(r#"<meta name="heartwood-base" content="/user/alice/proxy/8765/">"#));
    assert!(response.contains("Allow all once") && response.contains("Reject all"));
    assert!(
        !response.contains(SECRET),
        "the page carries the capability"
    );
    assert!(
        !response.contains("<script src=") && !response.contains("<link "),
        "the page loads nothing from elsewhere"
    );

    // The token exchange sets an HttpOnly, SameSite=Strict cookie and drops the token.
    let exchange = raw_text(
        addr,
        &request(
            "GET",
            &format!("/user/alice/proxy/8765/?token={SECRET}"),
            &["Host: hub.example.org".to_owned()],
        ),
    );
    assert!(exchange.starts_with("HTTP/1.1 303"), "{exchange}");
    assert!(
        exchange.contains("HttpOnly; SameSite=Strict; Path=/user/alice/proxy/8765/"),
        "{exchange}"
    );
    assert!(
        exchange
            .to_ascii_lowercase()
            .contains("location: /user/alice/proxy/8765/\r\n"),
        "{exchange}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_workspace_calls_answer_and_stay_confined() {
    let (project, addr, _state) = start(|_| Mode::Loopback).await;
    std::fs::create_dir(project.path().join("data")).expect("mkdir");
    std::fs::write(project.path().join("data/a.csv"), "id\n1\n").expect("write");
    let headers = [
        format!("Host: 127.0.0.1:{}", addr.port()),
        format!("Authorization: Bearer {SECRET}"),
    ];
    let tree = raw_text(addr, &request("GET", "/api/workspace/tree", &headers));
    assert!(
        tree.starts_with("HTTP/1.1 200") && tree.contains("data/a.csv"),
        "{tree}"
    );
    let file = raw_text(
        addr,
        &request("GET", "/api/workspace/file?path=data/a.csv", &headers),
    );
    assert!(file.contains(r#""content":"id\n1\n""#), "{file}");
    let escape = raw_text(
        addr,
        &request("GET", "/api/workspace/file?path=../../etc/passwd", &headers),
    );
    assert!(
        escape.starts_with("HTTP/1.1 422") && escape.contains("not normalized"),
        "{escape}"
    );
}
