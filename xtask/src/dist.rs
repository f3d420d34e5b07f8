//! `cargo xtask dist`: what a release ships, built once so nobody rebuilds Heartwood to use it.
//!
//! - `heartwood-<version>-x86_64-linux.tar.gz`: the release binary with its symbols and debug
//!   information stripped (the unstripped build is ~150 MB; the goal is under 40 MB), the
//!   Landlock helper `heartwood-confine` beside it (the sandbox looks for it there), with the
//!   README and licence.
//! - `heartwood-<version>-cp39-abi3-*.whl`: the notebook module as one abi3 wheel (every CPython
//!   from 3.9), so the README's notebook install is `pip install` of a file: no compiler, no
//!   crates.io, seconds instead of minutes (`cargo xtask bench notebook-install` times it).
//!
//! Both go to `<target>/packages/`. The wheel is built with maturin (`$MATURIN`, else `maturin`
//! on `PATH`, else the one in `$HEARTWOOD_NOTEBOOK_VENV`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, workspace_root};

/// The binary a release may weigh at most, stripped (the goal).
const BINARY_GOAL_MB: f64 = 40.0;

/// Where the packages are written.
pub fn packages_dir() -> PathBuf {
    target_dir().join("packages")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn megabytes(path: &Path) -> Result<f64> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    Ok(len as f64 / 1_000_000.0)
}

fn run(what: &str, command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("{what}: cannot start"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// The maturin to build the wheel with.
fn maturin() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("MATURIN") {
        return Ok(PathBuf::from(path));
    }
    let on_path = Command::new("maturin").arg("--version").output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return Ok(PathBuf::from("maturin"));
    }
    let venv = std::env::var_os("HEARTWOOD_NOTEBOOK_VENV").map(PathBuf::from);
    match venv.map(|v| v.join("bin/maturin")).filter(|m| m.exists()) {
        Some(found) => Ok(found),
        None => bail!(
            "maturin is needed for the notebook wheel: `pip install 'maturin>=1.16,<2'`, or set \
             MATURIN to its path"
        ),
    }
}

/// Builds the stripped binary tarball and the abi3 wheel; prints what was written and sizes.
pub fn run_dist() -> Result<()> {
    let version = env!("CARGO_PKG_VERSION");
    let out = packages_dir();
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;

    // The binary: the ordinary release build (shared with `cargo xtask`'s own), then stripped
    // of symbols and debug information in the copy that ships.
    // The Landlock helper ships beside it: the sandbox looks for it there.
    cargo(&[
        "build",
        "--release",
        "-p",
        "heartwood-cli",
        "--bin",
        "heartwood",
        "--bin",
        "heartwood-confine",
    ])?;
    let stage = out.join(format!("heartwood-{version}"));
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir_all(stage.join("bin"))?;
    let shipped = stage.join("bin/heartwood");
    let built = target_dir().join("release/heartwood");
    for program in ["heartwood", "heartwood-confine"] {
        run(
            "strip",
            Command::new("strip")
                .arg("--strip-all")
                .arg("-o")
                .arg(stage.join("bin").join(program))
                .arg(target_dir().join("release").join(program)),
        )?;
    }
    for doc in ["README.md", "LICENSE"] {
        let from = workspace_root().join(doc);
        if from.exists() {
            std::fs::copy(&from, stage.join(doc))?;
        }
    }
    let tarball = out.join(format!("heartwood-{version}-x86_64-linux.tar.gz"));
    run(
        "tar",
        Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(&out)
            .arg(format!("heartwood-{version}")),
    )?;

    // The wheel: abi3 (pyo3's `abi3-py39`), release, stripped.
    for old in std::fs::read_dir(&out)? {
        let old = old?.path();
        if old.extension().is_some_and(|e| e == "whl") {
            std::fs::remove_file(old)?;
        }
    }
    run(
        "maturin build",
        Command::new(maturin()?)
            .args(["build", "--release", "--strip", "--manifest-path"])
            .arg(workspace_root().join("crates/heartwood-notebook/Cargo.toml"))
            .arg("--out")
            .arg(&out)
            .arg("--target-dir")
            .arg(target_dir())
            .current_dir(workspace_root()),
    )?;
    let wheel = wheel_in(&out)?;

    let binary = megabytes(&shipped)?;
    println!(
        "binary (stripped): {} — {binary:.1} MB (goal < {BINARY_GOAL_MB} MB; unstripped {:.1} MB)",
        shipped.display(),
        megabytes(&built)?
    );
    println!(
        "tarball: {} — {:.1} MB",
        tarball.display(),
        megabytes(&tarball)?
    );
    println!("wheel: {} — {:.1} MB", wheel.display(), megabytes(&wheel)?);
    println!(
        "install the notebook module: pip install {}",
        wheel.display()
    );
    if binary >= BINARY_GOAL_MB {
        bail!("the stripped binary is {binary:.1} MB, over the {BINARY_GOAL_MB} MB goal");
    }
    Ok(())
}

/// The wheel `dist` wrote in `dir`.
pub fn wheel_in(dir: &Path) -> Result<PathBuf> {
    std::fs::read_dir(dir)
        .with_context(|| format!("reading {} (run `cargo xtask dist` first)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.extension().is_some_and(|e| e == "whl")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains("abi3"))
        })
        .with_context(|| {
            format!(
                "no abi3 wheel in {} (run `cargo xtask dist` first)",
                dir.display()
            )
        })
}
