//! `cargo xtask bench web`: 50 concurrent server-sent-event clients on one session; the delay
//! from a durable event's append to its delivery to each client (p50 and p99), on loopback.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use heartwood_events::{Event, Role, SessionId};
use heartwood_gateway::ProjectContext;
use heartwood_web::{AppState, Capability, IngressPolicy, Mode};

const CLIENTS: usize = 50;
const EVENTS: u64 = 200;

pub fn run() -> Result<()> {
    let served = Served::start("bench-web")?;
    let (addr, secret, state) = (
        served.addr,
        served.secret.clone(),
        Arc::clone(&served.state),
    );
    let id = SessionId::parse("bench-web")?;
    state
        .gateway
        .bench_record(&id, vec![Event::RunResumed {}])?;
    let start_seq = 2; // the registration and the event above

    // Each client records when each sequence number arrived.
    let arrivals: Arc<Mutex<Vec<(u64, Instant)>>> = Arc::default();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let mut stream = TcpStream::connect(addr)?;
        write!(
            stream,
            "GET /api/sessions/{id}/events?since={start_seq} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {secret}\r\n\r\n",
            addr.port()
        )?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let arrivals = Arc::clone(&arrivals);
        clients.push(std::thread::spawn(move || {
            let mut seen = 0;
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { return };
                let Some(data) = line.strip_prefix("data: ") else {
                    continue;
                };
                let at = Instant::now();
                let Ok(update) = serde_json::from_str::<serde_json::Value>(data) else {
                    continue;
                };
                if let Some(seq) = update["event"]["seq"].as_u64() {
                    arrivals
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((seq, at));
                    seen += 1;
                    if seen == EVENTS {
                        return;
                    }
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(300)); // every client subscribed
    let mut appended = Vec::new();
    for i in 0..EVENTS {
        let at = Instant::now();
        state.gateway.bench_record(
            &id,
            vec![Event::Message {
                role: Role::Agent,
                text: format!("progress note {i}: the next split is running"),
            }],
        )?;
        appended.push((start_seq + 1 + i, at));
        std::thread::sleep(Duration::from_millis(5));
    }
    for client in clients {
        let _ = client.join();
    }
    let arrivals = arrivals
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut delays: Vec<f64> = arrivals
        .iter()
        .filter_map(|(seq, at)| {
            appended
                .iter()
                .find(|(s, _)| s == seq)
                .map(|(_, sent)| at.duration_since(*sent).as_secs_f64() * 1e3)
        })
        .collect();
    if delays.len() != CLIENTS * EVENTS as usize {
        bail!(
            "{} of {} deliveries arrived",
            delays.len(),
            CLIENTS * EVENTS as usize
        );
    }
    delays.sort_by(f64::total_cmp);
    let pick = |q: f64| delays[((delays.len() - 1) as f64 * q) as usize];
    let (p50, p99) = (pick(0.5), pick(0.99));
    println!(
        "{:<52} p50 {p50:.2} ms, p99 {p99:>6.2} ms   target p99 < 20 ms  {}",
        format!("append to delivery, {CLIENTS} SSE clients, {EVENTS} events"),
        if p99 < 20.0 { "ok" } else { "MISSED" }
    );
    Ok(())
}

/// The real server on a loopback port, serving a fresh project under `target/<name>`, and the
/// capability to send it. The runtime serves while this lives.
pub(super) struct Served {
    pub addr: std::net::SocketAddr,
    pub secret: String,
    pub state: Arc<AppState>,
    _runtime: tokio::runtime::Runtime,
}

impl Served {
    pub fn start(name: &str) -> Result<Served> {
        let dir = crate::workspace_root().join("target").join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let runtime = tokio::runtime::Runtime::new()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let capability = Capability::generate().map_err(|e| anyhow::anyhow!("{e}"))?;
        let secret = capability.reveal().to_owned();
        let project = ProjectContext::at(&dir).expect("a UTF-8 project path");
        let state = Arc::new(AppState::new(
            project,
            IngressPolicy::new(Mode::Loopback, addr.port(), capability),
        ));
        runtime.spawn(heartwood_web::serve(listener, Arc::clone(&state)));
        Ok(Served {
            addr,
            secret,
            state,
            _runtime: runtime,
        })
    }
}
