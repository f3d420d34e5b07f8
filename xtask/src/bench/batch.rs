//! `cargo xtask bench batch`: what a batch adds per item. 100 items of a small task (a read-only
//! command the low-risk policy runs confined, then the answer) on the local engine, one at a
//! time, beside the same task given by one `heartwood exec` in a project already connected,
//! both against the scripted model server in this process; and the batch driver's peak
//! memory. The release binary is measured (built if need be).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};

const ITEMS: usize = 100;
const EXECS: usize = 10;
/// The goal: a batch item costs at most this many times one `exec`.
const GOAL: f64 = 1.2;

pub fn run() -> Result<()> {
    crate::cargo(&["build", "--quiet", "--release", "-p", "heartwood-cli"])?;
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| crate::workspace_root().join("target"), PathBuf::from);
    let bin = dir.join("release/heartwood");
    let runtime = tokio::runtime::Runtime::new()?;
    let server = runtime.block_on(ScriptedModelServer::start_unrecorded(Script::default()))?;
    let turns = |k: &str| {
        [
            Turn::calls(&[("terminal", serde_json::json!({"command": "wc -l data.txt"}))]),
            Turn::text(&format!("{k} counted")),
        ]
    };
    let root = tempfile::tempdir()?;

    // The reference: one exec each, in a connected project.
    let mut exec_secs = Vec::new();
    for n in 0..EXECS {
        let marker = format!("[exec-{n}]");
        server.push_lane(&marker, turns(&marker));
        let project = root.path().join(format!("exec-{n}"));
        std::fs::create_dir_all(&project)?;
        std::fs::write(project.join("data.txt"), "a\nb\n")?;
        heartwood(&bin, &project, &connect(&server.base_url()))?;
        let task = format!("{marker} count the lines of data.txt");
        let started = Instant::now();
        heartwood(&bin, &project, &["exec", "--policy", "low-risk", &task])?;
        exec_secs.push(started.elapsed().as_secs_f64());
    }
    exec_secs.sort_by(f64::total_cmp);
    let exec = exec_secs[EXECS / 2];

    println!("{:<44} {:>9.1} ms", "one exec (median of 10)", exec * 1e3);
    // The batch, twice: the manifest naming the route (each new project is connected, as a
    // researcher connects a new project), then the route as the user's default (what the
    // batch itself adds).
    let config_home = root.path().join("config");
    for with_route in [true, false] {
        let route = if with_route {
            format!(
                "[route]\ncategory = \"compatible\"\nbase_url = \"{}\"\nmodel = \"scripted\"\n",
                server.base_url()
            )
        } else {
            let base_url = server.base_url();
            let mut user = connect(&base_url);
            user.push("--user");
            Command::new(&bin)
                .args(&user)
                .env("HEARTWOOD_CONFIG_HOME", &config_home)
                .current_dir(root.path())
                .stdout(Stdio::null())
                .status()?;
            String::new()
        };
        let label = if with_route { "route" } else { "user-route" };
        let (per_item, peak_kib) = batch(&bin, root.path(), label, &route, &server, &config_home)?;
        let ratio = per_item / exec;
        println!(
            "{:<44} {:>9.1} ms   ratio to one exec {ratio:.2} (goal <= {GOAL}) {}",
            format!(
                "batch of {ITEMS}, per item ({})",
                if with_route {
                    "each project connected"
                } else {
                    "the user's route"
                }
            ),
            per_item * 1e3,
            if ratio <= GOAL { "ok" } else { "MISSED" }
        );
        println!(
            "{:<44} {:>9.1} MiB",
            "batch driver peak memory",
            peak_kib / 1024.0
        );
    }
    Ok(())
}

/// Runs a batch of [`ITEMS`] one at a time; the time per item and the driver's peak memory.
fn batch(
    bin: &Path,
    root: &Path,
    label: &str,
    route: &str,
    server: &ScriptedModelServer,
    config_home: &Path,
) -> Result<(f64, f64)> {
    let turns = |k: &str| {
        [
            Turn::calls(&[("terminal", serde_json::json!({"command": "wc -l data.txt"}))]),
            Turn::text(&format!("{k} counted")),
        ]
    };
    let batch_root = root.join(label);
    std::fs::create_dir_all(batch_root.join("template"))?;
    std::fs::write(batch_root.join("template/data.txt"), "a\nb\n")?;
    let mut manifest = format!(
        "task = \"count the lines of data.txt\"\npolicy = \"low-risk\"\ntemplate = \"template\"\n{route}"
    );
    for k in 0..ITEMS {
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
    Ok((total / ITEMS as f64, peak_kib))
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
