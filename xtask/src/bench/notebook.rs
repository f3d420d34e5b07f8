//! `cargo xtask bench notebook`: the time `import heartwood` takes in a fresh interpreter (the
//! extension built in release mode into the notebook virtualenv), next to the interpreter's own
//! start. The target is under 100 ms for the import itself (OpenHands' SDK takes ~5–9 s here).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

const RUNS: usize = 15;

pub fn run() -> Result<()> {
    let venv = std::env::var_os("HEARTWOOD_NOTEBOOK_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/heartwood/notebook-venv"))
        })
        .filter(|v| v.join("bin/maturin").exists())
        .context("no notebook virtualenv: run .ci/run once, or set HEARTWOOD_NOTEBOOK_VENV")?;
    let root = crate::workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("notebook");
    let built = Command::new(venv.join("bin/maturin"))
        .args(["develop", "-q", "--release", "--manifest-path"])
        .arg(root.join("crates/heartwood-notebook/Cargo.toml"))
        .env("VIRTUAL_ENV", &venv)
        .env("CARGO_TARGET_DIR", &target)
        .status()?;
    if !built.success() {
        bail!("maturin develop --release failed");
    }
    let python = venv.join("bin/python");
    let time = |code: &str| -> Result<f64> {
        super::best_of(RUNS, || {
            let status = Command::new(&python).args(["-c", code]).status()?;
            if !status.success() {
                bail!("python -c {code:?} failed");
            }
            Ok(())
        })
    };
    let bare = time("pass")?;
    let with_import = time("import heartwood")?;
    let import = (with_import - bare).max(0.0);
    println!(
        "{:<44} {:>8.1} ms   (interpreter start alone: {:.1} ms)   target < 100 ms  {}",
        "import heartwood in a fresh interpreter",
        import * 1e3,
        bare * 1e3,
        if import * 1e3 < 100.0 { "ok" } else { "MISSED" }
    );
    Ok(())
}
