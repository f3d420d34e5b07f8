//! The local engine: the items that have work left, a bounded number at once, each driven by a
//! worker process of its own (`heartwood batch worker MANIFEST INDEX`, what a Slurm array task
//! runs), which drives its item in process through the item's gateway. An item whose worker is
//! killed stops alone: the others go on, and its record says it was cut off. A progress bar
//! counts items per state (a line per settled item when stderr is not a terminal).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Result;
use heartwood_batch::status::counts_line;
use heartwood_batch::{BatchDir, BatchError, Manifest, Phase, Record, pool};

/// Drives the items at `indices` (of the manifest at `path`), at most `jobs` at once; their
/// records, as each settled.
pub fn run(
    manifest: &Manifest,
    path: &Path,
    indices: &[usize],
    jobs: usize,
) -> Result<Vec<Record>> {
    let program = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find the heartwood program: {e}"))?;
    let dir = BatchDir::of(manifest);
    let jobs = jobs.clamp(1, indices.len().max(1));
    let bar = indicatif::ProgressBar::new(indices.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} items  {msg}  [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    counts.insert("running", jobs.min(indices.len()));
    bar.set_message(counts_line(&counts));
    let mut settled = 0;
    let work = |index: usize| worker(&program, path, manifest, &dir, index);
    let records = pool::run(indices, jobs, work, |index, result| {
        settled += 1;
        let name = &manifest.items[index].name;
        let line = match result {
            Ok(r) => format!("{name}: {} ({})", r.phase.as_str(), r.detail),
            Err(e) => format!("{name}: failed ({e})"),
        };
        let phase = result.as_ref().map_or(Phase::Failed, |r| r.phase);
        *counts.entry(phase.as_str()).or_insert(0) += 1;
        counts.insert("running", jobs.min(indices.len() - settled));
        counts.retain(|_, n| *n > 0);
        bar.set_message(counts_line(&counts));
        bar.inc(1);
        if bar.is_hidden() {
            eprintln!("[{settled}/{}] {line}", indices.len());
        } else {
            bar.println(line);
        }
    });
    bar.finish_and_clear();
    Ok(records)
}

/// Runs item `index`'s worker process and answers the item's record once it ends: what the
/// worker wrote, or, when the worker was killed before the item settled, that it was cut off.
fn worker(
    program: &Path,
    path: &Path,
    manifest: &Manifest,
    dir: &BatchDir,
    index: usize,
) -> heartwood_batch::Result<Record> {
    let item = &manifest.items[index];
    let status = Command::new(program)
        .args(["batch", "worker"])
        .arg(path)
        .arg(index.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|source| BatchError::Io {
            what: format!("cannot start the worker of item {}", item.name),
            source,
        })?;
    match status.signal() {
        Some(signal) => dir.cut_off(
            index,
            item,
            &format!("its worker was killed by signal {signal}"),
        ),
        None => dir.record(index, item),
    }
}
