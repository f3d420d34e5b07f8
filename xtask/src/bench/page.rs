//! `cargo xtask bench page`: the page's first contentful paint in headless Chromium (Debian's,
//! driven by playwright-core), served by the real server on loopback with a project holding a
//! few sessions: the median and the worst of 15 loads, each in a fresh page, after the
//! capability exchange. Reference: 1000 ms, well inside the 1.8 s that web.dev calls a good
//! first contentful paint.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use heartwood_events::{Event, Role, SessionId};

const RUNS: usize = 15;
const TARGET_MS: f64 = 1000.0;

pub fn run() -> Result<()> {
    let node_path = std::env::var("HEARTWOOD_NODE_PATH").unwrap_or_else(|_| {
        std::env::var("HOME").unwrap_or_default() + "/.cache/heartwood/node/node_modules"
    });
    if !Path::new(&node_path).join("playwright-core").is_dir() {
        bail!("no playwright-core in {node_path}: run .ci/run once, or set HEARTWOOD_NODE_PATH");
    }
    let served = super::web::Served::start("bench-page")?;
    let (addr, secret, state) = (served.addr, &served.secret, &served.state);
    // The session list is part of what the page draws first.
    for i in 0..20 {
        let id = SessionId::parse(&format!("bench-page-{i}"))?;
        state.gateway.bench_record(
            &id,
            vec![Event::Message {
                role: Role::Researcher,
                text: format!("check cohort {i} for missing values"),
            }],
        )?;
    }
    let script = crate::workspace_root().join("xtask/assets/paint.mjs");
    let url = format!("http://127.0.0.1:{}/?token={secret}", addr.port());
    let out = Command::new("node")
        .arg(&script)
        .arg(&url)
        .arg(RUNS.to_string())
        .env("NODE_PATH", &node_path)
        .output()
        .context("running node")?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr));
    }
    let figures: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let sorted = |key: &str| -> Vec<f64> {
        let mut v: Vec<f64> = figures[key]
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
            .unwrap_or_default();
        v.sort_by(f64::total_cmp);
        v
    };
    let (paints, loaded) = (sorted("paints"), sorted("loaded"));
    if paints.len() != RUNS {
        bail!("{} of {RUNS} loads were measured", paints.len());
    }
    let median = paints[RUNS / 2];
    let worst = paints[RUNS - 1];
    println!(
        "{:<52} median {median:.0} ms, worst {worst:.0} ms (DOMContentLoaded median {:.0} ms)   target median < {TARGET_MS:.0} ms ({:.2}× of it)  {}",
        format!("page first contentful paint, {RUNS} loads"),
        loaded[RUNS / 2],
        median / TARGET_MS,
        if median < TARGET_MS { "ok" } else { "MISSED" }
    );
    Ok(())
}
