//! `cargo xtask bench stats`: the statistics reference at size. Least squares on 1,000,000
//! rows × 10 predictors (classical errors; target < 1 s) with the fit's own peak memory,
//! measured in a fresh process; 10,000 rows × 8 predictors with cluster-robust errors (100
//! clusters); and, for scale, the same large fit from CSV text through the gateway (parse with
//! every decimal read exactly, then fit). With `HEARTWOOD_STATS_VENV` set, statsmodels' OLS on
//! data of the same shape is timed as the reference.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use heartwood_stats::{Column, Family, Model, Predictor, Status, StdErrors, fit};

const BIG_ROWS: usize = 1_000_000;
const BIG_PREDICTORS: usize = 10;
const CLUSTERED_ROWS: usize = 10_000;
const CLUSTERED_PREDICTORS: usize = 8;
const CLUSTERS: usize = 100;

/// Deterministic values in [−1, 1) (a 64-bit LCG).
fn noise(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// Predictors and an outcome `1 + Σ (j+1)·x_j + noise`.
fn data(rows: usize, predictors: usize) -> (Vec<f64>, Vec<Vec<f64>>) {
    let xs: Vec<Vec<f64>> = (0..predictors as u64).map(|s| noise(s + 1, rows)).collect();
    let e = noise(999, rows);
    let y = (0..rows)
        .map(|i| {
            1.0 + e[i]
                + xs.iter()
                    .enumerate()
                    .map(|(j, x)| (j as f64 + 1.0) * x[i])
                    .sum::<f64>()
        })
        .collect();
    (y, xs)
}

/// The model over the data, which it takes over (no copy: the large fit's memory is measured).
fn model(y: Vec<f64>, xs: Vec<Vec<f64>>, errors: StdErrors) -> Result<Model> {
    let column =
        |v: Vec<f64>| Column::from_f64(v).map_err(|at| anyhow::anyhow!("value {at} is not finite"));
    Ok(Model {
        outcome: column(y)?,
        predictors: xs
            .into_iter()
            .enumerate()
            .map(|(j, x)| {
                Ok(Predictor::Numeric {
                    name: format!("x{j}"),
                    column: column(x)?,
                })
            })
            .collect::<Result<_>>()?,
        intercept: true,
        fixed_effects: None,
        family: Family::Gaussian,
        errors,
    })
}

fn line(what: &str, ms: f64, target_ms: Option<f64>) {
    match target_ms {
        Some(t) => println!(
            "{what:<52} {ms:>9.1} ms   target < {t} ms  {}",
            if ms < t { "ok" } else { "MISSED" }
        ),
        None => println!("{what:<52} {ms:>9.1} ms"),
    }
}

pub fn run() -> Result<()> {
    // The large fit, in a fresh process so its peak memory is its own.
    let out = std::process::Command::new(std::env::current_exe()?)
        .args(["bench-child", "stats-large", "-"])
        .output()?;
    if !out.status.success() {
        bail!(
            "the large fit failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let report = String::from_utf8_lossy(&out.stdout);
    let figure = |key: &str| -> Result<f64> {
        report
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("no {key} in {report}"))
    };
    let (seconds, data_mib, peak_mib) = (figure("seconds")?, figure("data")?, figure("peak")?);
    line(
        &format!("stats fit {BIG_ROWS} rows x {BIG_PREDICTORS} predictors, classical"),
        seconds * 1e3,
        Some(1000.0),
    );
    println!(
        "{:<52} {:>9.0} MiB  (the model's columns: {data_mib:.0} MiB; the fit adds {:.0} MiB)",
        "  peak resident memory",
        peak_mib,
        peak_mib - data_mib
    );
    if let Some(reference) = statsmodels_seconds()? {
        println!(
            "{:<52} {:>9.1} ms   ratio {:.2} (statsmodels / ours)",
            "  statsmodels OLS, same shape (reference)",
            reference * 1e3,
            reference / seconds
        );
    }

    let (y, xs) = data(CLUSTERED_ROWS, CLUSTERED_PREDICTORS);
    let labels: Vec<String> = (0..CLUSTERED_ROWS)
        .map(|i| format!("c{}", i % CLUSTERS))
        .collect();
    let clustered = model(y, xs, StdErrors::Cluster(labels))?;
    let best = super::best_of(20, || {
        let f = fit(&clustered)?;
        if f.status != Status::Ok {
            bail!("the clustered fit is {:?}: {:?}", f.status, f.reason);
        }
        Ok(())
    })?;
    line(
        &format!(
            "stats fit {CLUSTERED_ROWS} rows x {CLUSTERED_PREDICTORS} predictors, CR1 ({CLUSTERS} clusters)"
        ),
        best * 1e3,
        Some(100.0),
    );
    csv_end_to_end()
}

/// The large fit from CSV text through the gateway, as `heartwood stats fit` runs it.
fn csv_end_to_end() -> Result<()> {
    use heartwood_gateway::stats::{ErrorsRequest, FitRequest, fit_csv};
    let (y, xs) = data(BIG_ROWS, BIG_PREDICTORS);
    let mut csv = String::from("y");
    for j in 0..BIG_PREDICTORS {
        csv.push_str(&format!(",x{j}"));
    }
    csv.push('\n');
    for i in 0..BIG_ROWS {
        // Six decimals, as a data file would hold them: not exact doubles.
        csv.push_str(&format!("{:.6}", y[i]));
        for x in &xs {
            csv.push_str(&format!(",{:.6}", x[i]));
        }
        csv.push('\n');
    }
    let request = FitRequest {
        outcome: "y".into(),
        predictors: (0..BIG_PREDICTORS).map(|j| format!("x{j}")).collect(),
        categorical: Vec::new(),
        fixed_effects: None,
        intercept: true,
        family: Family::Gaussian,
        errors: ErrorsRequest::Classical,
    };
    let started = Instant::now();
    let f = fit_csv(csv.as_bytes(), &request)?;
    let seconds = started.elapsed().as_secs_f64();
    if f.status != Status::Ok {
        bail!("the CSV fit is {:?}: {:?}", f.status, f.reason);
    }
    line(
        &format!(
            "  from CSV ({} MiB of text, read exactly), {:?}",
            csv.len() >> 20,
            f.precision
        ),
        seconds * 1e3,
        None,
    );
    Ok(())
}

/// `bench-child stats-large -`: generate, fit, and print seconds and memory.
pub fn child() -> Result<()> {
    let (y, xs) = data(BIG_ROWS, BIG_PREDICTORS);
    let m = model(y, xs, StdErrors::Classical)?;
    let data_mib = super::peak_rss_kib()? / 1024.0;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let started = Instant::now();
        let f = fit(&m)?;
        best = best.min(started.elapsed().as_secs_f64());
        if f.status != Status::Ok {
            bail!("the large fit is {:?}: {:?}", f.status, f.reason);
        }
    }
    println!("seconds {best}");
    println!("data {data_mib}");
    println!("peak {}", super::peak_rss_kib()? / 1024.0);
    Ok(())
}

/// statsmodels' OLS on random data of the same shape, best of three, when a venv is given.
fn statsmodels_seconds() -> Result<Option<f64>> {
    let Some(venv) = std::env::var_os("HEARTWOOD_STATS_VENV") else {
        println!("  (statsmodels reference skipped: HEARTWOOD_STATS_VENV is not set)");
        return Ok(None);
    };
    let script = format!(
        "import time, numpy as np, statsmodels.api as sm\n\
         rng = np.random.default_rng(1)\n\
         x = sm.add_constant(rng.uniform(-1, 1, ({BIG_ROWS}, {BIG_PREDICTORS})))\n\
         y = x @ np.arange(1, {BIG_PREDICTORS} + 2) + rng.uniform(-1, 1, {BIG_ROWS})\n\
         best = 1e9\n\
         for _ in range(3):\n    t = time.perf_counter(); r = sm.OLS(y, x).fit(); r.bse; best = min(best, time.perf_counter() - t)\n\
         print(best)\n"
    );
    let out = std::process::Command::new(std::path::Path::new(&venv).join("bin/python"))
        .args(["-c", &script])
        .output()?;
    if !out.status.success() {
        bail!(
            "statsmodels failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(Some(String::from_utf8_lossy(&out.stdout).trim().parse()?))
}
