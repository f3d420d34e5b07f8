//! `heartwood serve`: prints a URL with the capability, serves the API to a holder of it and
//! nobody else.

mod support;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn get(port: u16, path: &str, auth: Option<&str>) -> String {
    support::http(port, "GET", path, auth, None)
}

#[test]
fn serve_prints_a_capability_url_and_guards_the_api() {
    let project = tempfile::tempdir().expect("project");
    let served = support::serve(project.path());
    let (port, token) = (served.port, served.token.clone());
    assert_eq!(token.len(), 64, "256 random bits in hex");

    assert!(get(port, "/api/sessions", Some(&token)).starts_with("HTTP/1.1 200"));
    assert!(get(port, "/api/sessions", None).starts_with("HTTP/1.1 401"));
    assert!(get(port, "/api/sessions", Some("guess")).starts_with("HTTP/1.1 401"));
    let page = get(port, &format!("/?token={token}"), None);
    assert!(page.starts_with("HTTP/1.1 303"), "{page}");
    drop(served);
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

/// A restarted serve keeps the project's port and capability (a bookmark and a reload still
/// work), kept in a file of the user's only it can read; --new-token replaces the capability.
/// Every session has its own address under s/, served to a holder of the capability only.
#[test]
fn serve_keeps_its_port_and_capability_per_project_and_a_session_has_its_own_address() {
    let project = tempfile::tempdir().expect("project");
    let config = tempfile::tempdir().expect("config");
    let serve = |args: &[&str]| {
        support::serve_with(
            project.path(),
            args,
            &[("HEARTWOOD_CONFIG_HOME", config.path())],
        )
    };
    let first = serve(&[]);
    let (port, token) = (first.port, first.token.clone());
    let page = get(port, "/s/s20261204-015300-3f9a2c01", Some(&token));
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("heartwood-base"), "the page itself");
    assert!(get(port, "/s/s20261204-015300-3f9a2c01", None).starts_with("HTTP/1.1 401"));
    drop(first);

    let kept: Vec<_> = std::fs::read_dir(config.path().join("serve"))
        .expect("kept")
        .flatten()
        .collect();
    assert_eq!(kept.len(), 1, "one file for the project");
    use std::os::unix::fs::PermissionsExt;
    let mode = kept[0].metadata().expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the capability is the user's alone");
    assert!(
        !project.path().join(".heartwood").exists(),
        "serving created project state"
    );

    let second = serve(&[]);
    assert_eq!(
        (second.port, second.token.as_str()),
        (port, token.as_str()),
        "restarted with another address"
    );
    assert!(get(port, "/api/sessions", Some(&token)).starts_with("HTTP/1.1 200"));
    drop(second);

    let third = serve(&["--new-token"]);
    assert_ne!(third.token, token, "--new-token kept the capability");
}
