//! A load on a running `heartwood serve`, over real TCP, for the web load test and
//! `cargo xtask bench web-load`: connections held open (idle, or sending their headers a byte
//! at a time), bodies over the server's limit, commands at a set rate across sessions, and
//! health probes throughout. The report says what each got; the caller decides what must hold.
//!
//! Every command is a `pause` to an idle session with its own command id: the gateway refuses it
//! (`409`) and records the refusal's receipt durably, so resending every id afterwards must get
//! each original receipt back, byte for byte. A command whose receipt is not remembered was lost.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// What to send, and for how long.
#[derive(Debug, Clone)]
pub struct Load {
    /// The server.
    pub addr: SocketAddr,
    /// Its launch capability.
    pub secret: String,
    /// Connections held open for the whole run: half idle, half sending headers slowly; each
    /// reconnects when the server closes it.
    pub held_connections: usize,
    /// Requests with a body over the server's limit.
    pub oversized_bodies: usize,
    /// The server's body limit, in bytes.
    pub body_limit: usize,
    /// The sessions commands go to (existing, idle).
    pub sessions: Vec<String>,
    /// Commands to send in all.
    pub commands: usize,
    /// The time the commands are spread over.
    pub duration: Duration,
    /// Clients sending commands at once.
    pub senders: usize,
}

/// What the server did under the load.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// The time each health probe answered `200` took, in the order sent.
    pub health: Vec<Duration>,
    /// Health probes not answered `200`, with what they got.
    pub health_failures: Vec<String>,
    /// Commands by the status they were answered with (`0`: no answer).
    pub command_statuses: BTreeMap<u16, usize>,
    /// Command ids whose receipt was not given back, unchanged, on resending.
    pub lost: Vec<String>,
    /// Oversized requests by the status they were answered with.
    pub oversized_statuses: BTreeMap<u16, usize>,
    /// Times the server closed a held connection (the header timeout) and it reconnected.
    pub held_reconnects: usize,
    /// How long sending the commands took.
    pub elapsed: Duration,
}

impl LoadReport {
    /// The `q` quantile (0 to 1) of the health probes' times.
    pub fn health_quantile(&self, q: f64) -> Option<Duration> {
        let mut sorted = self.health.clone();
        sorted.sort();
        let last = sorted.len().checked_sub(1)?;
        // Rounded up, so p99 of 100 probes is the 99th, never the best of the worst.
        let at = ((last as f64) * q).ceil() as usize;
        sorted.get(at.min(last)).copied()
    }
}

/// Runs `load` and reports; blocks the calling thread until done.
pub fn run(load: &Load) -> LoadReport {
    let deadline = Instant::now() + load.duration + Duration::from_secs(2);
    let reconnects = Arc::new(AtomicUsize::new(0));
    let held: Vec<_> = (0..load.held_connections)
        .map(|i| {
            let (addr, reconnects) = (load.addr, Arc::clone(&reconnects));
            std::thread::spawn(move || hold(addr, i % 2 == 1, deadline, &reconnects))
        })
        .collect();
    let probing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let prober = {
        let (addr, secret, probing) = (load.addr, load.secret.clone(), Arc::clone(&probing));
        std::thread::spawn(move || probe_health(addr, &secret, &probing))
    };
    let oversized = {
        let load = load.clone();
        std::thread::spawn(move || {
            let mut statuses = BTreeMap::new();
            for i in 0..load.oversized_bodies {
                let session = &load.sessions[i % load.sessions.len().max(1)];
                let status = oversized_request(&load, session);
                *statuses.entry(status).or_insert(0) += 1;
            }
            statuses
        })
    };
    let started = Instant::now();
    let sent = send_commands(load);
    let elapsed = started.elapsed();
    probing.store(false, Ordering::SeqCst);
    let (health, health_failures) = prober.join().unwrap_or_default();
    let oversized_statuses = oversized.join().unwrap_or_default();
    for thread in held {
        let _ = thread.join();
    }
    let mut report = LoadReport {
        health,
        health_failures,
        oversized_statuses,
        held_reconnects: reconnects.load(Ordering::SeqCst),
        elapsed,
        ..LoadReport::default()
    };
    for (session, id, status, body) in &sent {
        *report.command_statuses.entry(*status).or_insert(0) += 1;
        let (again_status, again) = request(
            (load.addr, &load.secret),
            "POST",
            &commands_path(session),
            &command(id),
        );
        if *status == 0 || again_status != *status || &again != body {
            report.lost.push(id.clone());
        }
    }
    report
}

fn commands_path(session: &str) -> String {
    format!("/api/sessions/{session}/commands")
}

fn command(id: &str) -> String {
    format!(r#"{{"command_id":"{id}","type":"pause"}}"#)
}

/// Sends `load.commands` commands from `load.senders` threads, each paced to its share of the
/// rate; returns each command's session, id, status and body.
fn send_commands(load: &Load) -> Vec<(String, String, u16, String)> {
    let senders = load.senders.max(1);
    let per_sender = load.commands.div_ceil(senders);
    let interval = load
        .duration
        .mul_f64(senders as f64 / load.commands.max(1) as f64);
    let results = Arc::new(Mutex::new(Vec::with_capacity(load.commands)));
    let threads: Vec<_> = (0..senders)
        .map(|sender| {
            let (load, results) = (load.clone(), Arc::clone(&results));
            std::thread::spawn(move || {
                let start = Instant::now();
                for k in 0..per_sender {
                    let n = sender * per_sender + k;
                    if n >= load.commands {
                        break;
                    }
                    // Paced: the k-th command of this sender goes no earlier than k intervals in.
                    if let Some(wait) = (interval * k as u32).checked_sub(start.elapsed()) {
                        std::thread::sleep(wait);
                    }
                    let session = load.sessions[n % load.sessions.len()].clone();
                    let id = format!("load-{n}");
                    let (status, body) = request(
                        (load.addr, &load.secret),
                        "POST",
                        &commands_path(&session),
                        &command(&id),
                    );
                    results
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((session, id, status, body));
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    std::mem::take(&mut *results.lock().unwrap_or_else(PoisonError::into_inner))
}

/// One request on a new connection to `addr`, carrying `secret`; the status (`0` for no
/// answer) and the body.
pub fn request(
    (addr, secret): (SocketAddr, &str),
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String) {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return (0, String::new());
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr.port(),
        secret,
        body.len()
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response);
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Probes `GET /api/health` every 20 ms on a new connection until told to stop.
fn probe_health(
    addr: SocketAddr,
    secret: &str,
    probing: &std::sync::atomic::AtomicBool,
) -> (Vec<Duration>, Vec<String>) {
    let (mut times, mut failures) = (Vec::new(), Vec::new());
    while probing.load(Ordering::SeqCst) {
        let started = Instant::now();
        let (status, body) = request((addr, secret), "GET", "/api/health", "");
        if status == 200 {
            times.push(started.elapsed());
        } else {
            failures.push(format!("{status}: {}", body.trim()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (times, failures)
}

/// A command whose declared and sent body is one byte over the limit; the status it got.
fn oversized_request(load: &Load, session: &str) -> u16 {
    let Ok(mut stream) = TcpStream::connect(load.addr) else {
        return 0;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let size = load.body_limit + 1;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n",
        commands_path(session),
        load.addr.port(),
        load.secret,
    );
    // The server may answer and close before the body is all sent; that is its right.
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&vec![b' '; size]);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    String::from_utf8_lossy(&response)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Holds a connection open until `deadline`: idle, or sending a request's headers one byte a
/// second. When the server closes it, counts that and connects again.
fn hold(addr: SocketAddr, slow: bool, deadline: Instant, reconnects: &AtomicUsize) {
    const HEADERS: &[u8] = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    while Instant::now() < deadline {
        let Ok(mut stream) = TcpStream::connect(addr) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(250)));
        let mut sent = 0;
        let closed = loop {
            if Instant::now() >= deadline {
                break false;
            }
            if slow {
                let byte = HEADERS.get(sent).copied().unwrap_or(b'x');
                if stream.write_all(&[byte]).is_err() {
                    break true;
                }
                sent += 1;
            }
            let mut buf = [0u8; 256];
            match stream.read(&mut buf) {
                Ok(0) => break true,
                // An answer (`408`, `503`) before the close: keep reading to the close.
                Ok(_) => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if slow {
                        std::thread::sleep(Duration::from_millis(750));
                    }
                }
                Err(_) => break true,
            }
        };
        if closed {
            reconnects.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
