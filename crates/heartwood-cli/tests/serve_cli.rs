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
