//! The server under load over real TCP: 500 connections held open (idle, or sending headers a
//! byte at a time), bodies over the 1 MiB limit, and commands across 20 sessions at 12,000 a
//! minute, with health probes throughout. Every probe is answered, every oversized body is
//! refused with `413`, and no command is lost: resending each command id gives back its
//! original receipt. How fast is measured by `cargo xtask bench web-load`, not here.

use std::sync::Arc;
use std::time::Duration;

use heartwood_gateway::ProjectContext;
use heartwood_testkit::load::{Load, run};
use heartwood_web::{AppState, Capability, IngressPolicy, Limits, Mode};

const SECRET: &str = "load-test-capability";

#[tokio::test(flavor = "multi_thread")]
async fn under_load_health_answers_bodies_over_the_limit_are_refused_and_no_command_is_lost() {
    let sessions: Vec<String> = (0..20).map(|i| format!("load-{i:02}")).collect();
    let ids: Vec<&str> = sessions.iter().map(String::as_str).collect();
    let project = heartwood_testkit::sessions::project_with_sessions(&ids, 1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let context = ProjectContext::at(project.path()).expect("a UTF-8 project path");
    let state = Arc::new(AppState::new(
        context,
        IngressPolicy::new(Mode::Loopback, addr.port(), Capability::from_secret(SECRET)),
    ));
    let limits = Limits::for_this_process();
    assert!(
        limits.max_connections > 500,
        "this machine allows only {} connections; the test holds 500",
        limits.max_connections
    );
    tokio::spawn(heartwood_web::listener::serve(listener, state, limits));
    let load = Load {
        addr,
        secret: SECRET.to_owned(),
        held_connections: 500,
        oversized_bodies: 10,
        body_limit: heartwood_web::server::MAX_BODY_BYTES,
        sessions,
        commands: 1_000,
        duration: Duration::from_secs(5),
        senders: 8,
    };
    let report = tokio::task::spawn_blocking(move || run(&load))
        .await
        .expect("the load ran");
    assert!(
        report.health_failures.is_empty(),
        "health probes went unanswered: {:?}",
        report.health_failures
    );
    assert!(!report.health.is_empty(), "no health probe was sent");
    assert_eq!(
        report
            .oversized_statuses
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        vec![413],
        "{:?}",
        report.oversized_statuses
    );
    // A pause to an idle session is refused, and the refusal is a durable receipt.
    assert_eq!(
        report.command_statuses.get(&409).copied(),
        Some(1_000),
        "{:?}",
        report.command_statuses
    );
    assert!(
        report.lost.is_empty(),
        "{} commands lost, e.g. {:?}",
        report.lost.len(),
        report.lost.iter().take(5).collect::<Vec<_>>()
    );
}
