//! Project automation: `cargo xtask ci | schema | fixtures | dist | bench <name> | fuzz | soak`.
//!
//! Runs optimized (see `.cargo/config.toml`) so that benchmarks measure release code.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

mod bench;
mod demo;
mod dist;
mod fixtures;
mod fuzz;
mod soak;

#[derive(Parser)]
#[command(name = "xtask")]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Subcommand)]
enum Task {
    /// What CI runs, exactly: `.ci/run` (installs what the suites need, then the format and
    /// lint gates, the whole test suite and the reliability smoke runs).
    Ci,
    /// Regenerate the JSON Schemas in docs/schema/ from the Rust types.
    Schema,
    /// Regenerate fixtures/journals/ with the real journal code.
    Fixtures,
    /// Regenerate fixtures/demo/recording.jsonl by running the demo task against the scripted
    /// model server.
    DemoRecording,
    /// Build what a release ships into `<target>/packages/`: the stripped binary as a tarball
    /// and the notebook module as an abi3 wheel.
    Dist,
    /// Run a benchmark and print each figure with its ratio to the named reference.
    Bench {
        /// Which benchmark: `journal`, `agent`, `backends`, `gateway`, `workspace`, `tui`, `workflow`, `web`, `sandbox`, `batch`, `replicas`,
        /// `web-load`, `page` (first paint in Chromium), `notebook`, `notebook-install` (the
        /// wheel from `dist` into a fresh virtualenv, offline) or `stats`.
        name: String,
    },
    /// Build the libFuzzer targets in fuzz/ (nightly toolchain) and fuzz each for a while,
    /// after replaying its seeds and regression inputs.
    Fuzz {
        /// Seconds to fuzz each target.
        #[arg(long, default_value_t = 60)]
        secs: u64,
        /// A quicker build (unoptimized, no sanitizer) for short runs such as CI's.
        #[arg(long)]
        smoke: bool,
        /// The targets to run (all when none is named).
        targets: Vec<String>,
    },
    /// Random interleavings of tasks, decisions and controls from two interfaces, with processes
    /// killed, against the scripted model; then every session must verify, no action may have
    /// run twice, and `serve`'s memory must have stayed flat.
    Soak {
        /// How long to run, in minutes.
        #[arg(long, default_value_t = 10.0)]
        minutes: f64,
        /// Repeat an earlier run's random choices.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Internal: one measured step of a benchmark, run in a fresh process.
    #[command(hide = true)]
    BenchChild {
        /// The step.
        step: String,
        /// Its argument.
        arg: PathBuf,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Task::Ci => ci(),
        Task::Schema => schema(),
        Task::Fixtures => fixtures::generate(),
        Task::DemoRecording => demo::generate(),
        Task::Dist => dist::run_dist(),
        Task::Bench { name } => match name.as_str() {
            "journal" => bench::journal::run(),
            "agent" => bench::agent::run(),
            "backends" => bench::backends::run(),
            "gateway" => bench::gateway::run(),
            "workspace" => bench::workspace::run(),
            "tui" => bench::tui::run(),
            "workflow" => bench::workflow::run(),
            "web" => bench::web::run(),
            "web-load" => bench::web_load::run(),
            "page" => bench::page::run(),
            "notebook" => bench::notebook::run(),
            "notebook-install" => bench::notebook_install::run(),
            "models" => bench::models::run(),
            "sandbox" => bench::sandbox::run(),
            "batch" => bench::batch::run(),
            "review" => bench::review::run(),
            "stats" => bench::stats::run(),
            "export" => bench::export::run(),
            "replicas" => bench::replicas::run(),
            other => bail!(
                "no benchmark named {other:?}; available: journal, agent, backends, gateway, workspace, tui, workflow, web, web-load, page, notebook, notebook-install, models, sandbox, batch, review, stats, export, replicas"
            ),
        },
        Task::Fuzz {
            secs,
            smoke,
            targets,
        } => fuzz::run(secs, smoke, &targets),
        Task::Soak { minutes, seed } => soak::run(minutes, seed),
        Task::BenchChild { step, arg } => match step.strip_prefix("agent-") {
            Some(steps) => bench::agent::child(steps.parse()?, &arg),
            None if step == "gateway-memory" => bench::gateway::child(&arg),
            None if step == "stats-large" => bench::stats::child(),
            None if step == "gateway-steps" => bench::gateway::steps_child(&arg),
            None if step == "workspace-memory" => bench::workspace::child(&arg),
            None if step == "replicas-hold" => bench::replicas::hold(&arg.display().to_string()),
            None => bench::journal::child(&step, &arg),
        },
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn cargo(args: &[&str]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(args)
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("could not run {cargo}"))?;
    if !status.success() {
        bail!("`cargo {}` failed", args.join(" "));
    }
    Ok(())
}

/// CI's checks have one definition, `.ci/run` (what it installs, the gates, the suites and the
/// reliability smoke runs): this runs it, so `cargo xtask ci` and CI cannot drift apart.
fn ci() -> Result<()> {
    let script = workspace_root().join(".ci/run");
    let status = Command::new(&script)
        .status()
        .with_context(|| format!("running {}", script.display()))?;
    if !status.success() {
        bail!("{} failed ({status})", script.display());
    }
    Ok(())
}

fn schema() -> Result<()> {
    let dir = workspace_root().join("docs/schema");
    std::fs::create_dir_all(&dir)?;
    let schemas = heartwood_web::schema::generated()
        .into_iter()
        .chain(heartwood_workflow::definition::schema());
    for (name, text) in schemas {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    let path = dir.join("heartwood.d.ts");
    std::fs::write(&path, heartwood_web::schema::typescript())
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}
