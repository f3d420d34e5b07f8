//! `cargo xtask bench sandbox`: what confinement adds to a tool process. A confined spawn of
//! `true` (bubblewrap: mount and PID namespaces, read-only and project-write levels) beside a
//! plain spawn of the same program, timed in the same run; and a command in an already
//! confined persistent shell, which is how the terminal tool runs every command after the
//! first (the shell is confined once, when it starts).

use std::process::{Command, Stdio};

use anyhow::{Result, bail};
use heartwood_agent::tools::sandbox::{Sandbox, support};
use heartwood_agent::tools::{SandboxLevel, Terminal, TerminalLimits, ToolCallRequest};

use super::best_of;

const RUNS: usize = 30;
/// The goal for a confined spawn over a plain one.
const GOAL_MS: f64 = 5.0;

pub fn run() -> Result<()> {
    // The Landlock helper is a binary of heartwood-cli, which xtask's own build does not make;
    // the sandbox finds it beside this program, in the same target folder.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "--release", "-q", "-p", "heartwood-cli", "--bin"])
        .arg(heartwood_agent::tools::sandbox::HELPER)
        .status()?;
    if !built.success() {
        bail!("cannot build the Landlock helper");
    }
    let found = support();
    if !found.enforcing {
        bail!("no sandbox on this machine: {}", found.detail);
    }
    println!(
        "Landlock layer: {}",
        if found.landlock.on() {
            format!("on ({})", found.landlock.detail)
        } else {
            format!("off ({})", found.landlock.detail)
        }
    );
    let project = tempfile::tempdir()?;
    let sandbox = Sandbox::new(project.path());
    let spawn = |program: &std::path::Path, args: &[std::ffi::OsString]| -> Result<()> {
        let status = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("{} failed", program.display());
        }
        Ok(())
    };
    let plain = best_of(RUNS, || spawn(std::path::Path::new("/bin/true"), &[]))? * 1e3;
    println!("{:<44} {plain:>8.2} ms", "plain spawn of true");
    for level in [SandboxLevel::ReadOnly, SandboxLevel::ProjectWrite] {
        // Each start prepares its own view and filters, as every tool process does.
        let confined = best_of(RUNS, || {
            let confined = sandbox.wrap(level, "/bin/true", &[])?;
            spawn(&confined.program, &confined.args)
        })? * 1e3;
        let added = confined - plain;
        println!(
            "{:<44} {confined:>8.2} ms   added {added:.2} ms (goal < {GOAL_MS} ms) {}",
            format!("confined spawn, {level:?}"),
            if added < GOAL_MS { "ok" } else { "MISSED" }
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let value = serde_json::json!({"command": "true"}).to_string();
        let ToolCallRequest::Terminal(args) =
            ToolCallRequest::parse("terminal", &value).map_err(anyhow::Error::msg)?
        else {
            bail!("not a terminal call");
        };
        for level in [SandboxLevel::Unsandboxed, SandboxLevel::ProjectWrite] {
            let mut term = Terminal::new(project.path(), TerminalLimits::default());
            term.run(&args, level).await;
            let mut best = f64::INFINITY;
            for _ in 0..RUNS {
                let start = std::time::Instant::now();
                term.run(&args, level).await;
                best = best.min(start.elapsed().as_secs_f64() * 1e3);
            }
            term.stop().await;
            println!(
                "{:<44} {best:>8.2} ms",
                format!("command in a running shell, {level:?}")
            );
        }
        Ok(())
    })
}
