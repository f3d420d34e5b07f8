//! `heartwood serve`: prints a URL with the capability, serves the API to a holder of it and
//! nobody else.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn get(port: u16, path: &str, auth: Option<&str>) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let auth = auth
        .map(|a| format!("Authorization: Bearer {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

#[test]
fn serve_prints_a_capability_url_and_guards_the_api() {
    let project = tempfile::tempdir().expect("project");
    let mut server = Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["serve"])
        .current_dir(project.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let stdout = server.stdout.take().expect("stdout");
    let url = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.trim()
                .strip_prefix("http://127.0.0.1:")
                .map(str::to_owned)
        })
        .expect("a URL");
    let (port, rest) = url.split_once('/').expect("port");
    let port: u16 = port.parse().expect("port number");
    let token = rest.strip_prefix("?token=").expect("token").to_owned();
    assert_eq!(token.len(), 64, "256 random bits in hex");

    assert!(get(port, "/api/sessions", Some(&token)).starts_with("HTTP/1.1 200"));
    assert!(get(port, "/api/sessions", None).starts_with("HTTP/1.1 401"));
    assert!(get(port, "/api/sessions", Some("guess")).starts_with("HTTP/1.1 401"));
    let page = get(port, &format!("/?token={token}"), None);
    assert!(page.starts_with("HTTP/1.1 303"), "{page}");
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        !project.path().join(".heartwood").exists(),
        "serving created project state"
    );
}

#[test]
fn behind_jupyter_serve_listens_on_the_port_its_prefix_names_and_says_so() {
    let project = tempfile::tempdir().expect("project");
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let prefix = format!("/user/alice/proxy/{free}/");
    // A different --port is refused: the proxy link would never reach it.
    let other = free.wrapping_add(1).max(1024).to_string();
    let refused = Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args([
            "serve",
            "--jupyter-prefix",
            &prefix,
            "--external-host",
            "hub.example.org",
        ])
        .args(["--port", &other])
        .current_dir(project.path())
        .output()
        .expect("serve");
    assert!(!refused.status.success());
    assert!(
        support::text(&refused.stderr).contains(&format!("({free})")),
        "{}",
        support::text(&refused.stderr)
    );

    let mut server = Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args([
            "serve",
            "--jupyter-prefix",
            &prefix,
            "--external-host",
            "hub.example.org",
        ])
        .current_dir(project.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let stdout = server.stdout.take().expect("stdout");
    let listening = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("Listening on "))
        .expect("the address is printed");
    assert_eq!(listening, format!("Listening on 127.0.0.1:{free}."));
    // It listens there (what it answers is the ingress policy's business, tested elsewhere).
    assert!(TcpStream::connect(("127.0.0.1", free)).is_ok());
    let _ = server.kill();
    let _ = server.wait();
}
