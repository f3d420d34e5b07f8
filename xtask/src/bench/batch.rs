//! `cargo xtask bench batch`: what a batch adds per item. 100 items of a small task (a read-only
//! command the low-risk policy runs confined, then the answer) on the local engine, one at a
//! time, beside the same task given by one `heartwood exec` in a project already connected,
//! both against the scripted model server in this process; and the batch driver's peak
//! memory. The release binary is measured (built if need be).
//!
//! The machines are shared and noisy, so the two are measured alike and side by side: in
//! rounds, each round a batch of a fifth of the items and as many execs, and the ratio is of
//! the mean time per item to the mean time per exec over every round.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};

const ITEMS: usize = 100;
const ROUNDS: usize = 5;
/// The goal: a batch item costs at most this many times one `exec`.
const GOAL: f64 = 1.2;

/// The two kinds of batch: the manifest naming the route (each new project is connected, as a
/// researcher connects a new project), and the route as the user's default (what the batch
/// itself adds).
const KINDS: [(&str, &str); 2] = [
    ("route", "each project connected"),
    ("user-route", "the user's route"),
];

pub fn run() -> Result<()> {
    crate::cargo(&["build", "--quiet", "--release", "-p", "heartwood-cli"])?;
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| crate::workspace_root().join("target"), PathBuf::from);
    let bin = dir.join("release/heartwood");
    let runtime = tokio::runtime::Runtime::new()?;
    let server = runtime.block_on(ScriptedModelServer::start_unrecorded(Script::default()))?;
    let root = tempfile::tempdir()?;
    let config_home = root.path().join("config");
    let base_url = server.base_url();
    let mut user = connect(&base_url);
    user.push("--user");
    let status = Command::new(&bin)
        .args(&user)
        .env("HEARTWOOD_CONFIG_HOME", &config_home)
        .current_dir(root.path())
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("heartwood model connect --user failed: {status}");
    }

    let per_round = ITEMS / ROUNDS;
    let (mut exec_secs, mut batch_secs, mut peak_kib) = (0.0, [0.0; 2], [0.0_f64; 2]);
    for round in 0..ROUNDS {
        exec_secs += execs(&bin, root.path(), &server, round, per_round)?;
        for (k, (label, _)) in KINDS.iter().enumerate() {
            let route = if k == 0 {
                format!(
                    "[route]\ncategory = \"compatible\"\nbase_url = \"{}\"\nmodel = \"scripted\"\n",
                    server.base_url()
                )
            } else {
                String::new()
            };
            let label = format!("{label}-{round}");
            let (secs, peak) = batch(&bin, root.path(), &label, &route, &server, &config_home)?;
            batch_secs[k] += secs;
            peak_kib[k] = peak_kib[k].max(peak);
        }
    }
    let exec = exec_secs / ITEMS as f64;
    println!(
        "{:<44} {:>9.1} ms",
        format!("one exec (mean of {ITEMS})"),
        exec * 1e3
    );
    for (k, (_, what)) in KINDS.iter().enumerate() {
        let per_item = batch_secs[k] / ITEMS as f64;
        let ratio = per_item / exec;
        println!(
            "{:<44} {:>9.1} ms   ratio to one exec {ratio:.2} (goal <= {GOAL}) {}",
            format!("batch of {ITEMS}, per item ({what})"),
            per_item * 1e3,
            if ratio <= GOAL { "ok" } else { "MISSED" }
        );
        println!(
            "{:<44} {:>9.1} MiB",
            "batch driver peak memory",
            peak_kib[k] / 1024.0
        );
    }
    Ok(())
}

/// The reply of every item and exec: one read-only command, then the answer.
fn turns(marker: &str) -> [Turn; 2] {
    [
        Turn::calls(&[("terminal", serde_json::json!({"command": "wc -l data.txt"}))]),
        Turn::text(&format!("{marker} counted")),
    ]
}

/// Runs `count` execs, each in a new project connected first (not timed); their time in all.
fn execs(
    bin: &Path,
    root: &Path,
    server: &ScriptedModelServer,
    round: usize,
    count: usize,
) -> Result<f64> {
    let mut secs = 0.0;
    for n in 0..count {
        let marker = format!("[exec-{round}-{n}]");
        server.push_lane(&marker, turns(&marker));
        let project = root.join(format!("exec-{round}-{n}"));
        std::fs::create_dir_all(&project)?;
        std::fs::write(project.join("data.txt"), "a\nb\n")?;
        heartwood(bin, &project, &connect(&server.base_url()))?;
        let task = format!("{marker} count the lines of data.txt");
        let started = Instant::now();
        heartwood(bin, &project, &["exec", "--policy", "low-risk", &task])?;
        secs += started.elapsed().as_secs_f64();
    }
    Ok(secs)
}

/// Runs a batch of `ITEMS / ROUNDS` items one at a time; its wall time and the driver's peak
/// memory.
fn batch(
    bin: &Path,
    root: &Path,
    label: &str,
    route: &str,
    server: &ScriptedModelServer,
    config_home: &Path,
) -> Result<(f64, f64)> {
    let batch_root = root.join(label);
    std::fs::create_dir_all(batch_root.join("template"))?;
    std::fs::write(batch_root.join("template/data.txt"), "a\nb\n")?;
    let mut manifest = format!(
        "task = \"count the lines of data.txt\"\npolicy = \"low-risk\"\ntemplate = \"template\"\n{route}"
    );
    for k in 0..ITEMS / ROUNDS {
        let marker = format!("[{label}-{k:03}]");
        server.push_lane(&marker, turns(&marker));
        manifest.push_str(&format!(
            "[[items]]\nname = \"item-{k:03}\"\ntask = \"{marker} count the lines of data.txt\"\n"
        ));
    }
    let path = batch_root.join("bench.toml");
    std::fs::write(&path, manifest)?;
    let started = Instant::now();
    let mut child = Command::new(bin)
        .args(["batch", "run", &path.to_string_lossy(), "--jobs", "1"])
        .env("HEARTWOOD_CONFIG_HOME", config_home)
        .current_dir(&batch_root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot run heartwood batch")?;
    let mut peak_kib = 0.0_f64;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        peak_kib = peak_kib.max(peak_of(child.id()).unwrap_or(0.0));
        std::thread::sleep(Duration::from_millis(20));
    };
    let total = started.elapsed().as_secs_f64();
    if !status.success() {
        bail!("the batch did not finish: {status}");
    }
    Ok((total, peak_kib))
}

fn connect(base_url: &str) -> Vec<&str> {
    vec![
        "model",
        "connect",
        "--category",
        "compatible",
        "--base-url",
        base_url,
        "--model",
        "scripted",
    ]
}

fn heartwood(bin: &Path, project: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new(bin)
        .args(args)
        .current_dir(project)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running heartwood {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "heartwood {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// A running process's peak resident memory so far, in KiB.
fn peak_of(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
