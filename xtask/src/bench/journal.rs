//! `cargo xtask bench journal`: the session journal's speed and memory next to the hardware
//! limits it is built on, measured in the same run on the same disk.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use heartwood_audit::SessionStore;
use heartwood_events::{Event, Role, SessionId};
use sha2::{Digest, Sha256};

use super::{best_of, peak_rss_kib, report};

const APPENDS: usize = 300;
const BIG_SESSION: usize = 100_000;
const REPEATS: usize = 9;

pub fn run() -> Result<()> {
    // Under target/ rather than /tmp: the same disk the project's .heartwood/ would be on.
    // Kept after the run so a step can be profiled alone: `xtask bench-child open <dir>`.
    let dir = crate::workspace_root().join("target/bench-journal");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let store = SessionStore::new(&dir);

    let sample = message(0);
    let (event_len, audit_len) = line_sizes(&store, &sample)?;
    let raw_pairs = raw_pair_rate(&dir, event_len, audit_len)?;

    let id = SessionId::parse("bench-append")?;
    let (mut writer, _) = store.create_or_open_writer(&id, "native")?;
    let start = Instant::now();
    for i in 0..APPENDS {
        writer.append(None, vec![message(i)])?;
    }
    let appends = APPENDS as f64 / start.elapsed().as_secs_f64();
    writer.close();
    report(
        "durable paired appends",
        appends,
        "/s",
        "raw fsync-limited pair rate",
        raw_pairs,
        0.5,
    );

    let big = SessionId::parse("bench-100k")?;
    build_session(&store, &big, BIG_SESSION)?;
    let paths = store.paths(&big);
    let mut bytes = std::fs::read(&paths.events)?;
    bytes.extend(std::fs::read(&paths.audit)?);
    let reader = store.reader(&big)?;
    reader.verify()?; // warms the page cache for every run below
    // Best of several runs for each side, interleaved so that both see the same disturbances:
    // the machine is shared, and the fastest run is the one least disturbed.
    let (mut verify_secs, mut checkpoint_secs, mut sha_secs) =
        (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    for _ in 0..REPEATS {
        verify_secs = verify_secs.min(best_of(1, || {
            let verified = reader.verify()?;
            if verified.count != BIG_SESSION as u64 + 1 {
                bail!(
                    "verified {} events, expected {}",
                    verified.count,
                    BIG_SESSION + 1
                );
            }
            Ok(())
        })?);
        sha_secs = sha_secs.min(best_of(1, || {
            std::hint::black_box(Sha256::digest(&bytes));
            Ok(())
        })?);
        checkpoint_secs = checkpoint_secs.min(best_of(1, || {
            reader.checkpoint().map(drop).map_err(Into::into)
        })?);
    }
    let verify_rate = bytes.len() as f64 / verify_secs / 1e6;
    let sha_rate = bytes.len() as f64 / sha_secs / 1e6;
    report(
        "verify throughput",
        verify_rate,
        " MB/s",
        "raw SHA-256 over the same bytes",
        sha_rate,
        0.5,
    );
    println!(
        "{:<34} {:>10.1} MB/s   (verify plus the RFC 6962 Merkle root; `sessions checkpoint`)",
        "checkpoint throughput",
        bytes.len() as f64 / checkpoint_secs / 1e6
    );
    drop(bytes);

    // Open + verify in a fresh process, so its peak memory is the journal's alone.
    let exe = std::env::current_exe()?;
    let out = std::process::Command::new(exe)
        .args(["bench-child", "open"])
        .arg(&dir)
        .output()
        .context("running the open benchmark")?;
    if !out.status.success() {
        bail!(
            "open benchmark failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace();
    let secs: f64 = fields.next().unwrap_or("nan").parse()?;
    let peak_kib: f64 = fields.next().unwrap_or("nan").parse()?;
    let target = 1.0;
    println!(
        "{:<34} {:>10.3} s      target < {target} s            ratio {:.2} of target {}",
        "open + verify, 100k events",
        secs,
        secs / target,
        if secs < target { "ok" } else { "MISSED" }
    );
    println!(
        "{:<34} {:>10.1} MiB    (events + audit files {:.1} MiB)",
        "peak memory, open + verify 100k",
        peak_kib / 1024.0,
        (std::fs::metadata(&paths.events)?.len() + std::fs::metadata(&paths.audit)?.len()) as f64
            / (1024.0 * 1024.0)
    );
    Ok(())
}

/// Steps that must run in their own process.
pub fn child(step: &str, project: &Path) -> Result<()> {
    match step {
        "open" => {
            let store = SessionStore::new(project);
            let start = Instant::now();
            let (writer, _) = store.open_writer(&SessionId::parse("bench-100k")?)?;
            let secs = start.elapsed().as_secs_f64();
            std::hint::black_box(writer.count());
            println!("{secs} {}", peak_rss_kib()?);
            Ok(())
        }
        other => bail!("unknown bench step {other:?}"),
    }
}

fn message(i: usize) -> Event {
    Event::Message {
        role: Role::Agent,
        text: format!(
            "step {i}: inspected data/cohort.csv; 1,204 rows, 14 columns, no missing ids"
        ),
    }
}

/// The byte sizes of one event line and its audit line, so the raw baseline writes the same.
fn line_sizes(store: &SessionStore, sample: &Event) -> Result<(usize, usize)> {
    let id = SessionId::parse("bench-sizes")?;
    let (mut writer, _) = store.create_or_open_writer(&id, "native")?;
    writer.append(None, vec![sample.clone()])?;
    let paths = writer.paths().clone();
    writer.close();
    let last_len = |path: &Path| -> Result<usize> {
        let text = std::fs::read_to_string(path)?;
        Ok(text.lines().last().map_or(0, str::len) + 1)
    };
    Ok((last_len(&paths.events)?, last_len(&paths.audit)?))
}

/// Appends of the same sizes to two files, each followed by `fdatasync`: the floor any
/// durable paired append pays.
fn raw_pair_rate(dir: &Path, event_len: usize, audit_len: usize) -> Result<f64> {
    let open = |name: &str| {
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(dir.join(name))
    };
    let (mut a, mut b) = (open("raw-a")?, open("raw-b")?);
    let (line_a, line_b) = (vec![b'x'; event_len], vec![b'y'; audit_len]);
    let start = Instant::now();
    for _ in 0..APPENDS {
        a.write_all(&line_a)?;
        a.sync_data()?;
        b.write_all(&line_b)?;
        b.sync_data()?;
    }
    Ok(APPENDS as f64 / start.elapsed().as_secs_f64())
}

fn build_session(store: &SessionStore, id: &SessionId, events: usize) -> Result<()> {
    let (mut writer, _) = store.create_or_open_writer(id, "native")?;
    for chunk in (0..events).collect::<Vec<_>>().chunks(1000) {
        writer.append(None, chunk.iter().map(|&i| message(i)).collect())?;
    }
    writer.close();
    Ok(())
}
