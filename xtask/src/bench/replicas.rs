//! `cargo xtask bench replicas`: three replicas (three holders of one real PostgreSQL store,
//! each driving its share of the sessions) and 100 sessions driven at once: appends per second
//! and the 99th percentile of a command's latency (a command and its receipt, one durable
//! append), against the file store on one machine running the same work. Then a replica
//! process holding a session is killed with SIGKILL, and the time until another replica has
//! taken the session over is compared with the lease's length plus one second.

use std::io::BufRead;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use heartwood_audit::{SessionStore, SharedStore};
use heartwood_events::{CommandId, Event, Role, SessionId};
use heartwood_testkit::postgres::PgServer;

const REPLICAS: usize = 3;
const SESSIONS: usize = 100;
const COMMANDS: usize = 20;
const TAKEOVER_LEASE: Duration = Duration::from_secs(2);

/// Runs the benchmark.
pub fn run() -> Result<()> {
    let server = PgServer::start().map_err(|e| anyhow::anyhow!("PostgreSQL: {e}"))?;
    let files_dir = tempfile::tempdir()?;
    let files: Vec<SessionStore> = (0..REPLICAS)
        .map(|_| SessionStore::new(files_dir.path()))
        .collect();
    let (files_rate, files_p99) = drive(&files)?;
    let shared_dir = tempfile::tempdir()?;
    let shared: Vec<SessionStore> = (0..REPLICAS)
        .map(|_| {
            SharedStore::new(&server.url()).map(|s| SessionStore::in_shared(shared_dir.path(), s))
        })
        .collect::<Result<_, _>>()?;
    let (pg_rate, pg_p99) = drive(&shared)?;
    println!(
        "{REPLICAS} replicas, {SESSIONS} sessions at once, {COMMANDS} commands each (a durable append with its receipt)"
    );
    println!(
        "appends per second, PostgreSQL            {pg_rate:>9.0}/s   ({:.2}x the file store's {files_rate:.0}/s)",
        pg_rate / files_rate
    );
    println!(
        "p99 command latency, PostgreSQL           {:>9.1} ms  ({:.2}x the file store's {:.1} ms)",
        pg_p99 * 1e3,
        pg_p99 / files_p99,
        files_p99 * 1e3
    );
    let takeover = takeover(&server, shared_dir.path())?;
    let reference = TAKEOVER_LEASE + Duration::from_secs(1);
    println!(
        "takeover after SIGKILL (lease {} s)        {:>9.0} ms  ({:.2}x the lease + 1 s = {} ms)",
        TAKEOVER_LEASE.as_secs(),
        takeover.as_secs_f64() * 1e3,
        takeover.as_secs_f64() / reference.as_secs_f64(),
        reference.as_millis()
    );
    Ok(())
}

/// Drives every session at once, session `i` by replica `i % REPLICAS`: appends per second
/// over the whole run, and the 99th percentile of one command's latency, in seconds.
fn drive(replicas: &[SessionStore]) -> Result<(f64, f64)> {
    let barrier = Arc::new(Barrier::new(SESSIONS));
    let start = Instant::now();
    let latencies = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..SESSIONS)
            .map(|i| {
                let store = &replicas[i % replicas.len()];
                let barrier = Arc::clone(&barrier);
                scope.spawn(move || session(store, i, &barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("a session thread panicked"))?
            })
            .collect::<Result<Vec<Vec<f64>>>>()
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    let mut all: Vec<f64> = latencies.into_iter().flatten().collect();
    all.sort_by(f64::total_cmp);
    let p99 = all[(all.len() * 99 / 100).min(all.len() - 1)];
    Ok(((SESSIONS * COMMANDS) as f64 / elapsed, p99))
}

fn session(store: &SessionStore, i: usize, barrier: &Barrier) -> Result<Vec<f64>> {
    let id = SessionId::parse(&format!("bench-{i:03}"))?;
    let (mut writer, _) = store.create_or_open_writer(&id, "native")?;
    barrier.wait();
    let mut latencies = Vec::with_capacity(COMMANDS);
    for n in 0..COMMANDS {
        let command = CommandId::parse(&format!("c-{i}-{n}"))?;
        let event = Event::Message {
            role: Role::Agent,
            text: format!("session {i}, command {n}"),
        };
        let start = Instant::now();
        writer.complete_command(&command, "say", vec![event], serde_json::json!({}))?;
        latencies.push(start.elapsed().as_secs_f64());
    }
    Ok(latencies)
}

/// Kills a replica process that holds a session and times how long another replica takes to
/// open it.
fn takeover(server: &PgServer, dir: &Path) -> Result<Duration> {
    let id = SessionId::parse("bench-takeover")?;
    let store = SessionStore::in_shared(
        dir,
        SharedStore::new(&server.url())?.with_lease(TAKEOVER_LEASE),
    );
    store.create_or_open_writer(&id, "native")?.0.close();
    let mut holder = std::process::Command::new(std::env::current_exe()?)
        .args(["bench-child", "replicas-hold", &server.url()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("the holding replica")?;
    let stdout = holder.stdout.take().context("its output")?;
    let held = std::io::BufReader::new(stdout).lines().next();
    if !matches!(held, Some(Ok(ref l)) if l == "held") {
        let _ = holder.kill();
        bail!("the holding replica did not take the session: {held:?}");
    }
    holder.kill().context("SIGKILL")?;
    let killed = Instant::now();
    let _ = holder.wait();
    loop {
        match store.open_writer(&id) {
            Ok(_) => return Ok(killed.elapsed()),
            Err(heartwood_audit::AuditError::Owned { .. }) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
        if killed.elapsed() > TAKEOVER_LEASE * 10 {
            bail!("the session was never taken over");
        }
    }
}

/// The holding replica: opens the session, says so, and holds it until killed.
pub fn hold(url: &str) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let store = SessionStore::in_shared(
        dir.path(),
        SharedStore::new(url)?.with_lease(TAKEOVER_LEASE),
    );
    let (_writer, _) = store.open_writer(&SessionId::parse("bench-takeover")?)?;
    println!("held");
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}
