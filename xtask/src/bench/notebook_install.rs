//! `cargo xtask bench notebook-install`: the README's notebook install, timed as a new user
//! meets it: a fresh virtualenv, then `pip install` of the wheel `cargo xtask dist` built, with
//! no network (`--no-index`: pip may not reach any index), then `import heartwood`. The figure
//! is judged against the goal of 30 s (the from-source install took 3–4 minutes and
//! needed crates.io).

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// The goal for the whole install, in seconds.
const GOAL_SECS: f64 = 30.0;

pub fn run() -> Result<()> {
    let wheel = crate::dist::wheel_in(&crate::dist::packages_dir())?;
    let home = tempfile::tempdir().context("a temporary folder")?;
    let venv = home.path().join("venv");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());

    let started = Instant::now();
    let made = Command::new(&python)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .with_context(|| format!("running {python} -m venv"))?;
    if !made.success() {
        bail!("{python} -m venv failed");
    }
    let venv_secs = started.elapsed().as_secs_f64();

    let installing = Instant::now();
    let installed = Command::new(venv.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--no-index",
            "--disable-pip-version-check",
            "-q",
        ])
        .arg(&wheel)
        // Nowhere to reach even if pip tried: no proxy, an unroutable index.
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .status()
        .context("running pip")?;
    if !installed.success() {
        bail!("pip install --no-index {} failed", wheel.display());
    }
    let pip_secs = installing.elapsed().as_secs_f64();
    let imported = Command::new(venv.join("bin/python"))
        .args(["-c", "import heartwood; print(heartwood.__version__)"])
        .current_dir(home.path())
        .output()
        .context("importing heartwood")?;
    if !imported.status.success() {
        bail!(
            "import heartwood failed: {}",
            String::from_utf8_lossy(&imported.stderr)
        );
    }
    let total = started.elapsed().as_secs_f64();
    println!("wheel: {}", wheel.display());
    println!("fresh venv: {venv_secs:.1} s");
    println!("pip install --no-index (offline): {pip_secs:.1} s");
    println!(
        "notebook install, venv to import: {total:.1} s (goal < {GOAL_SECS:.0} s; {:.2}× the goal)",
        total / GOAL_SECS
    );
    if total >= GOAL_SECS {
        bail!("the install took {total:.1} s, over the {GOAL_SECS:.0} s goal");
    }
    Ok(())
}
