//! `cargo xtask bench <name>`: each benchmark prints its figures next to the reference it is
//! judged against, measured in the same run.

pub mod agent;
pub mod backends;
pub mod batch;
pub mod export;
pub mod gateway;
pub mod journal;
pub mod models;
pub mod notebook;
pub mod notebook_install;
pub mod page;
pub mod replicas;
pub mod review;
pub mod sandbox;
pub mod stats;
pub mod tui;
pub mod web;
pub mod web_load;
pub mod workflow;
pub mod workflow_models;
pub mod workspace;

use std::time::Instant;

use anyhow::{Context, Result};

/// The fastest of `runs` runs, in seconds: on a shared machine the least disturbed run is the
/// best estimate of the code's own cost.
pub fn best_of(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// This process's peak resident memory, in KiB.
pub fn peak_rss_kib() -> Result<f64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM in /proc/self/status")?;
    Ok(line.split_whitespace().nth(1).unwrap_or("0").parse()?)
}

/// Prints a figure with its ratio to a reference measured in the same run.
pub fn report(
    what: &str,
    value: f64,
    unit: &str,
    reference: &str,
    reference_value: f64,
    target: f64,
) {
    let ratio = value / reference_value;
    println!(
        "{what:<34} {value:>10.1}{unit:<6} {reference}: {reference_value:.1}{unit}  ratio {ratio:.2} (target >= {target}) {}",
        if ratio >= target { "ok" } else { "MISSED" }
    );
}
