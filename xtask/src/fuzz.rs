//! `cargo xtask fuzz [--secs N] [--smoke] [TARGET…]`: builds the libFuzzer targets in `fuzz/`
//! with a nightly toolchain and the coverage flags cargo-fuzz uses, gathers each target's seeds
//! from the fixtures, and fuzzes each target for N seconds. `--smoke` builds for CI's short
//! runs: unoptimized and without AddressSanitizer (the workspace forbids `unsafe`), a build of a
//! few minutes rather than six on two cores, at a fraction of the executions per second.
//!
//! Every run first replays each target's committed inputs: `fuzz/seeds/<target>/` (hand-written
//! seeds for inputs no fixture holds) and `fuzz/regressions/<target>/` (inputs that once crashed
//! a target, kept after the fix). A crash fails the task, names the input libFuzzer saved, and
//! says where the input goes once fixed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::workspace_root;

/// Every fuzz target, in `fuzz/fuzz_targets/<name>.rs`.
pub const TARGETS: [&str; 11] = [
    "event_line",
    "audit_line",
    "command",
    "ingress",
    "project_path",
    "csv_table",
    "tool_arguments",
    "sse_stream",
    "model_bundle",
    "skill_front_matter",
    "skill_bundle",
];

/// The longest input libFuzzer makes: the decoders' own limits are tested elsewhere, with real
/// sizes; here the search is for inputs that are wrong, not large.
const MAX_LEN: usize = 64 * 1024;

/// The flags cargo-fuzz passes to rustc for a libFuzzer build (cargo-fuzz 0.12's defaults, but
/// for the sanitizer, which [`SANITIZER`] adds to a full build).
const RUSTFLAGS: &str = "-Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    --cfg fuzzing -Cdebug-assertions -Coverflow-checks";

/// AddressSanitizer, for a full build.
const SANITIZER: &str = "-Zsanitizer=address";

/// The host triple: an explicit `--target` keeps the flags above off build scripts and
/// procedural macros, which cannot load the sanitizer runtime.
const TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// What one target's run found.
struct Outcome {
    target: &'static str,
    executions: u64,
    seconds: f64,
    corpus: usize,
    crash: Option<PathBuf>,
}

/// Builds the targets named in `only` (all when empty) and fuzzes each for `secs` seconds.
pub fn run(secs: u64, smoke: bool, only: &[String]) -> Result<()> {
    let targets = selected(only)?;
    let root = workspace_root();
    let work = target_dir(&root).join("fuzz");
    let binaries = build(&root, &work, smoke)?;
    let mut outcomes = Vec::new();
    for target in targets {
        outcomes.push(fuzz_one(&root, &work, &binaries, target, secs)?);
    }
    println!();
    println!(
        "{:<16} {:>12} {:>10} {:>8}  result",
        "target", "executions", "per sec", "corpus"
    );
    for o in &outcomes {
        println!(
            "{:<16} {:>12} {:>10.0} {:>8}  {}",
            o.target,
            o.executions,
            o.executions as f64 / o.seconds.max(0.001),
            o.corpus,
            o.crash.as_ref().map_or_else(
                || "no crash".to_owned(),
                |input| format!("CRASH: {}", input.display())
            )
        );
    }
    let crashed: Vec<&Outcome> = outcomes.iter().filter(|o| o.crash.is_some()).collect();
    if !crashed.is_empty() {
        bail!(
            "{} target(s) crashed; replay an input with `{}/<target> <input>`, fix the cause, \
             and add the input to fuzz/regressions/<target>/ so every later run replays it",
            crashed.len(),
            binaries.display()
        );
    }
    Ok(())
}

fn selected(only: &[String]) -> Result<Vec<&'static str>> {
    if only.is_empty() {
        return Ok(TARGETS.to_vec());
    }
    only.iter()
        .map(|name| {
            TARGETS
                .iter()
                .find(|t| **t == name.as_str())
                .copied()
                .with_context(|| {
                    format!(
                        "no fuzz target named {name:?}; the targets are {}",
                        TARGETS.join(", ")
                    )
                })
        })
        .collect()
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Builds every target with the nightly toolchain (the coverage flags are unstable options);
/// returns the directory the binaries are in.
fn build(root: &Path, work: &Path, smoke: bool) -> Result<PathBuf> {
    // Separate directories, so switching between the two never rebuilds either.
    let dir = work.join(if smoke { "build-smoke" } else { "build" });
    let nightly = Command::new("cargo")
        .args(["+nightly", "--version"])
        .output()
        .context("could not run `cargo`: is rustup's cargo on PATH?")?;
    if !nightly.status.success() {
        bail!(
            "the fuzz targets build with a nightly toolchain (libFuzzer's coverage flags are \
             unstable options) and none is installed; install one with \
             `rustup toolchain install nightly --profile minimal`"
        );
    }
    println!(
        "building the fuzz targets with {}",
        String::from_utf8_lossy(&nightly.stdout).trim()
    );
    let started = Instant::now();
    let mut cargo = Command::new("cargo");
    if smoke {
        cargo.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0");
        cargo.env("RUSTFLAGS", RUSTFLAGS);
    } else {
        cargo.env("RUSTFLAGS", format!("{RUSTFLAGS} {SANITIZER}"));
    }
    let status = cargo
        .args([
            "+nightly",
            "build",
            "--release",
            "--bins",
            "--target",
            TRIPLE,
        ])
        .arg("--manifest-path")
        .arg(root.join("fuzz/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &dir)
        // The pinned toolchain's choice, inherited from `cargo xtask`, must not override +nightly.
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTC_WRAPPER")
        .status()
        .context("could not run `cargo +nightly build` for the fuzz targets")?;
    if !status.success() {
        bail!("building the fuzz targets failed (the compiler's errors are above)");
    }
    println!("built in {:.0}s", started.elapsed().as_secs_f64().ceil());
    Ok(dir.join(TRIPLE).join("release"))
}

fn fuzz_one(
    root: &Path,
    work: &Path,
    binaries: &Path,
    target: &'static str,
    secs: u64,
) -> Result<Outcome> {
    let dir = work.join(target);
    let corpus = dir.join("corpus");
    let seeds = dir.join("seeds");
    let artifacts = dir.join("artifacts");
    if seeds.exists() {
        std::fs::remove_dir_all(&seeds).with_context(|| format!("clearing {}", seeds.display()))?;
    }
    for d in [&corpus, &seeds, &artifacts] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let written = write_seeds(root, target, &seeds)?;
    // libFuzzer adds what it finds to the first directory and only reads the others.
    let mut dirs = vec![corpus.clone(), seeds];
    for committed in ["seeds", "regressions"] {
        let d = root.join("fuzz").join(committed).join(target);
        if d.is_dir() {
            dirs.push(d);
        }
    }
    let log = dir.join("last-run.log");
    println!("fuzzing {target} for {secs}s ({written} seeds from the fixtures)");
    let started = Instant::now();
    let output = Command::new(binaries.join(target))
        .arg(format!("-max_total_time={secs}"))
        .arg(format!("-max_len={MAX_LEN}"))
        .arg("-timeout=10")
        .arg("-rss_limit_mb=2048")
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .args(&dirs)
        .output()
        .with_context(|| format!("could not run the {target} fuzz target"))?;
    let seconds = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr);
    std::fs::write(&log, stderr.as_bytes())
        .with_context(|| format!("writing {}", log.display()))?;
    let executions = stat(&stderr, "stat::number_of_executed_units").unwrap_or(0);
    let crash = if output.status.success() {
        None
    } else {
        let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
        eprintln!("--- {target}: the last lines of {} ---", log.display());
        for line in tail.iter().rev() {
            eprintln!("{line}");
        }
        Some(saved_input(&stderr).unwrap_or(log))
    };
    Ok(Outcome {
        target,
        executions,
        seconds,
        corpus: std::fs::read_dir(&corpus).map_or(0, Iterator::count),
        crash,
    })
}

/// A `stat::name: value` line of libFuzzer's final statistics.
fn stat(stderr: &str, name: &str) -> Option<u64> {
    stderr.lines().find_map(|line| {
        line.strip_prefix(name)?
            .trim_start_matches(':')
            .trim()
            .parse()
            .ok()
    })
}

/// The input libFuzzer saved after a crash: "Test unit written to <path>".
fn saved_input(stderr: &str) -> Option<PathBuf> {
    stderr.lines().find_map(|line| {
        line.split_once("Test unit written to ")
            .map(|(_, path)| PathBuf::from(path.trim()))
    })
}

/// Writes `target`'s seeds from the fixtures into `dir`; returns how many.
fn write_seeds(root: &Path, target: &str, dir: &Path) -> Result<usize> {
    let fixtures = root.join("fixtures");
    let seeds: BTreeSet<Vec<u8>> = match target {
        "event_line" => journal_lines(&fixtures, "events.jsonl")?,
        "audit_line" => journal_lines(&fixtures, "audit.jsonl")?,
        "project_path" => files_under(&fixtures.join("projects"))?
            .into_iter()
            .filter_map(|p| {
                p.strip_prefix(fixtures.join("projects"))
                    .ok()
                    .map(|p| p.to_string_lossy().into_owned().into_bytes())
            })
            .collect(),
        "csv_table" => files_under(&fixtures)?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .map(|p| std::fs::read(&p).with_context(|| format!("reading {}", p.display())))
            .collect::<Result<_>>()?,
        "tool_arguments" => scripted_turns(&fixtures)?
            .iter()
            .flat_map(|turn| &turn.tool_calls)
            .map(|call| {
                let arguments = call
                    .raw_arguments
                    .clone()
                    .unwrap_or_else(|| call.arguments.to_string());
                format!("{}\n{arguments}", call.name).into_bytes()
            })
            .collect(),
        "sse_stream" => scripted_turns(&fixtures)?
            .iter()
            .map(|turn| {
                // The first byte picks the chunk size the body is cut into.
                let mut seed = vec![7u8];
                seed.extend_from_slice(heartwood_testkit::event_stream_body(turn).as_bytes());
                seed
            })
            .collect(),
        "skill_front_matter" => bundled_skills(root)?
            .iter()
            .map(|dir| std::fs::read(dir.join("SKILL.md")).context("reading a bundled SKILL.md"))
            .collect::<Result<_>>()?,
        "skill_bundle" => bundled_skills(root)?
            .iter()
            .map(|dir| {
                heartwood_skills::bundle::pack(dir, &heartwood_skills::tree::Limits::default())
                    .with_context(|| format!("packing {}", dir.display()))
            })
            .collect::<Result<_>>()?,
        // Committed seeds only: no fixture holds these inputs.
        "command" | "ingress" | "model_bundle" => BTreeSet::new(),
        other => bail!("no seeds are defined for the fuzz target {other:?}"),
    };
    for (i, seed) in seeds.iter().enumerate() {
        let path = dir.join(format!("fixture-{i:04}"));
        std::fs::write(&path, seed).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(seeds.len())
}

/// The directories of the skills shipped with Heartwood.
fn bundled_skills(root: &Path) -> Result<Vec<PathBuf>> {
    let dir = root.join("crates/heartwood-skills/bundled");
    let mut skills: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("SKILL.md").is_file())
        .collect();
    skills.sort();
    Ok(skills)
}

/// Every line of every `name` file in the journal fixtures.
fn journal_lines(fixtures: &Path, name: &str) -> Result<BTreeSet<Vec<u8>>> {
    let mut lines = BTreeSet::new();
    for path in files_under(&fixtures.join("journals"))? {
        if path.file_name().is_some_and(|n| n == name) {
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            lines.extend(
                bytes
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
    }
    Ok(lines)
}

/// The turns of every scripted model conversation in the fixtures.
fn scripted_turns(fixtures: &Path) -> Result<Vec<heartwood_testkit::Turn>> {
    let mut turns = Vec::new();
    for path in files_under(&fixtures.join("model-scripts"))? {
        let script = heartwood_testkit::Script::load(&path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        turns.extend(script.turns);
    }
    Ok(turns)
}

/// Every file below `dir`, hidden ones included, in a stable order.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}
