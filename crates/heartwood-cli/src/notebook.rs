//! `heartwood notebook install`: the notebook module built from this checkout into a Python
//! environment, reusing the workspace's build (its target directory) instead of building the
//! whole workspace again in pip's isolated environment, with cargo's progress shown.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Subcommand;

/// The notebook module.
#[derive(Subcommand)]
pub enum NotebookCommand {
    /// Build the notebook module from this checkout and install it into a Python environment
    /// (the active virtualenv, else `python3`): one wheel for CPython 3.9 and later. It reuses
    /// the workspace's build, so after `cargo build --release` it takes a minute or two; on a
    /// fresh machine about as long as that build (10–20 minutes on 2 cores).
    Install {
        /// The Python to install into (default: $VIRTUAL_ENV/bin/python, else python3).
        #[arg(long)]
        python: Option<PathBuf>,
        /// Build without optimisations (faster to build, slower to run; for development).
        #[arg(long)]
        debug: bool,
        /// The cargo target directory to build in (default: $CARGO_TARGET_DIR, else the
        /// checkout's `target/`, where `cargo build` put the CLI).
        #[arg(long)]
        target_dir: Option<PathBuf>,
    },
}

/// Runs a notebook command.
pub fn run(command: NotebookCommand) -> Result<ExitCode> {
    let NotebookCommand::Install {
        python,
        debug,
        target_dir,
    } = command;
    let started = Instant::now();
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../heartwood-notebook");
    let manifest = crate_dir.join("Cargo.toml");
    if !manifest.exists() {
        bail!(
            "this heartwood was not built from a checkout that still exists ({} is missing); \
             in a checkout, run `pip install ./crates/heartwood-notebook` instead",
            manifest.display()
        );
    }
    let workspace = crate_dir.join("../..");
    let python = python.unwrap_or_else(default_python);
    let version = output(Command::new(&python).args([
        "-c",
        "import sys; assert sys.version_info >= (3, 9), 'CPython 3.9 or later is needed'; \
         print('%d.%d' % sys.version_info[:2])",
    ]))
    .with_context(|| format!("{} is not a usable Python 3.9+", python.display()))?;
    eprintln!("installing into {} (Python {version})", python.display());
    if output(Command::new(&python).args(["-m", "maturin", "--version"])).is_err() {
        eprintln!("maturin (the build tool) is not in that environment: installing it…");
        step(
            "installing maturin",
            Command::new(&python).args(["-m", "pip", "install", "maturin>=1.16,<2"]),
        )?;
    }
    let target = target_dir
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| workspace.join("target"));
    // A folder of this run's own, so the wheel found is the one just built.
    let wheels = target.join(format!("notebook-wheel-{}", std::process::id()));
    std::fs::create_dir_all(&wheels)
        .with_context(|| format!("cannot make {}", wheels.display()))?;
    eprintln!(
        "building the module ({}) in {}: what the workspace already built is reused…",
        if debug { "debug" } else { "release" },
        target.display()
    );
    let mut build = Command::new(&python);
    build
        .args(["-m", "maturin", "build", "--manifest-path"])
        .arg(&manifest)
        .arg("--interpreter")
        .arg(&python)
        .arg("--out")
        .arg(&wheels)
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&workspace);
    if !debug {
        build.arg("--release");
    }
    step("building the notebook module", &mut build)?;
    let wheel = std::fs::read_dir(&wheels)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .context("maturin wrote no wheel")?;
    step(
        "installing the wheel",
        Command::new(&python)
            .args(["-m", "pip", "install", "--force-reinstall", "--no-deps"])
            .arg(&wheel),
    )?;
    let _ = std::fs::remove_dir_all(&wheels);
    output(Command::new(&python).args(["-c", "import heartwood"]))
        .context("the module was installed but `import heartwood` fails")?;
    println!(
        "installed: `import heartwood` works in {} ({:.0} s)",
        python.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn default_python() -> PathBuf {
    std::env::var_os("VIRTUAL_ENV")
        .map(|venv| PathBuf::from(venv).join("bin/python"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// Runs a step with its output shown as it comes (cargo's progress included).
fn step(what: &str, command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("{what}: cannot start {:?}", command.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status}); its output is above");
    }
    Ok(())
}

/// A command's standard output, trimmed, when it succeeds.
fn output(command: &mut Command) -> Result<String> {
    let out = command.output()?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
