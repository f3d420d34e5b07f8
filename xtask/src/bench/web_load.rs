//! `cargo xtask bench web-load`: the server under load for a minute: 500 connections held open
//! (idle, or sending headers a byte at a time), ten bodies over the 1 MiB limit, and 10,000
//! commands across 20 sessions; health probes every 20 ms throughout. Prints the health probes'
//! p50 and p99 against the 100 ms target, the command rate reached, and commands lost.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use heartwood_gateway::ProjectContext;
use heartwood_testkit::load::{Load, run as run_load};
use heartwood_web::{AppState, Capability, IngressPolicy, Limits, Mode};

const SESSIONS: usize = 20;
const COMMANDS: usize = 10_000;
const HELD: usize = 500;

pub fn run() -> Result<()> {
    let names: Vec<String> = (0..SESSIONS).map(|i| format!("load-{i:02}")).collect();
    let ids: Vec<&str> = names.iter().map(String::as_str).collect();
    let project = heartwood_testkit::sessions::project_with_sessions(&ids, 1);
    let runtime = tokio::runtime::Runtime::new()?;
    let _guard = runtime.enter();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let capability = Capability::generate().map_err(|e| anyhow::anyhow!("{e}"))?;
    let secret = capability.reveal().to_owned();
    let context = ProjectContext::at(project.path()).expect("a UTF-8 project path");
    let state = Arc::new(AppState::new(
        context,
        IngressPolicy::new(Mode::Loopback, addr.port(), capability),
    ));
    let limits = Limits::for_this_process();
    runtime.spawn(heartwood_web::listener::serve(listener, state, limits));
    let load = Load {
        addr,
        secret,
        held_connections: HELD,
        oversized_bodies: 10,
        body_limit: heartwood_web::server::MAX_BODY_BYTES,
        sessions: names,
        commands: COMMANDS,
        duration: Duration::from_secs(60),
        senders: 16,
    };
    println!(
        "{HELD} held connections (limit {}), {COMMANDS} commands over 60 s across {SESSIONS} sessions...",
        limits.max_connections
    );
    let report = run_load(&load);
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    let (p50, p99) = (
        ms(report.health_quantile(0.5)),
        ms(report.health_quantile(0.99)),
    );
    println!(
        "{:<52} p50 {p50:.2} ms, p99 {p99:>6.2} ms   target p99 < 100 ms  {}",
        format!("health, {} probes under load", report.health.len()),
        if p99 < 100.0 && report.health_failures.is_empty() {
            "ok"
        } else {
            "MISSED"
        }
    );
    let per_minute = report.command_statuses.values().sum::<usize>() as f64
        / report.elapsed.as_secs_f64()
        * 60.0;
    println!(
        "{:<52} {per_minute:.0} a minute (target 10,000), statuses {:?}",
        "commands answered", report.command_statuses
    );
    println!(
        "{:<52} {} of {COMMANDS}; health probes unanswered: {}",
        "commands lost (receipt not given back on resending)",
        report.lost.len(),
        report.health_failures.len()
    );
    println!(
        "{:<52} {:?}; held connections closed by the header timeout and reopened: {}",
        "bodies over the limit answered", report.oversized_statuses, report.held_reconnects
    );
    if !report.lost.is_empty() || !report.health_failures.is_empty() {
        bail!("the server lost commands or left health probes unanswered under load");
    }
    Ok(())
}
