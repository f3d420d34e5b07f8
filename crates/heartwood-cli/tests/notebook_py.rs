//! The notebook module's own suite (pytest, in `crates/heartwood-notebook/tests`), run from
//! `cargo test`: the extension built with maturin into the test virtualenv, the scripted model
//! server built as a process, a model hub on loopback with a trusted catalog, and pytest
//! driving the real gateway, a real kernel and real files. `.ci/run` makes the virtualenv (maturin, pytest, ipykernel, nbclient); without it, a
//! developer machine skips this test and says so.
//!
//! Both builds use a target directory of their own (`<target>/notebook`): the outer `cargo
//! test` may still hold its own.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The virtualenv with the test tools: `HEARTWOOD_NOTEBOOK_VENV`, or the one `.ci/run` makes.
fn venv() -> Option<PathBuf> {
    let venv = std::env::var_os("HEARTWOOD_NOTEBOOK_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/heartwood/notebook-venv"))
        })?;
    venv.join("bin/maturin").exists().then_some(venv)
}

fn run(what: &str, command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_notebook_modules_pytest_suite_passes() {
    let Some(venv) = venv() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have the notebook virtualenv (.ci/run makes it)"
        );
        eprintln!(
            "skipped: no notebook virtualenv; run .ci/run once, or set HEARTWOOD_NOTEBOOK_VENV"
        );
        return;
    };
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cli = PathBuf::from(env!("CARGO_BIN_EXE_heartwood"));
    let target = cli
        .parent()
        .and_then(Path::parent)
        .expect("the binary sits in <target>/debug")
        .join("notebook");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    run(
        "building the scripted model server",
        Command::new(&cargo)
            .args([
                "build",
                "-q",
                "-p",
                "heartwood-testkit",
                "--bin",
                "heartwood-scripted-model",
            ])
            .current_dir(&workspace)
            .env("CARGO_TARGET_DIR", &target),
    );
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Installed by the documented command (a debug build: the suite needs no optimisation).
    run(
        "installing the notebook module (heartwood notebook install)",
        Command::new(&cli)
            .args(["notebook", "install", "--debug", "--python"])
            .arg(venv.join("bin/python"))
            .arg("--target-dir")
            .arg(&target)
            .current_dir(&workspace)
            .env("VIRTUAL_ENV", &venv)
            .env("PATH", &path),
    );
    // Local models come from a hub on loopback, through a trusted catalog naming it.
    let hub = heartwood_testkit::hub::HubServer::start();
    let work = tempfile::tempdir().expect("work");
    let catalog = heartwood_testkit::hub::tiny_catalog(&hub, &work.path().join("models.toml"));
    // A repository no catalog lists, which the notebook inspects at a revision and downloads.
    let other: Vec<u8> = (0..40_000u32).map(|i| (i * 13 % 241) as u8).collect();
    hub.publish(
        "heartwood-tests/other-GGUF",
        "main",
        "mit",
        &[("other.gguf", &other)],
    );
    run(
        "pytest crates/heartwood-notebook/tests",
        Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "crates/heartwood-notebook/tests",
            ])
            .current_dir(&workspace)
            .env("PATH", &path)
            .env("HEARTWOOD_BIN", &cli)
            .env("HF_ENDPOINT", hub.endpoint())
            .env("HEARTWOOD_MODEL_CATALOG", &catalog)
            .env(
                "HEARTWOOD_SCRIPTED_MODEL",
                target.join("debug/heartwood-scripted-model"),
            )
            .env(
                "HEARTWOOD_NOTEBOOK_HTML",
                target.join("notebook-pending-set.html"),
            ),
    );
}
