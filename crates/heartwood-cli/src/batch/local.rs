//! The local engine: the items that have work left run as independent sessions, a bounded
//! number at once (one thread each, driving its item's `heartwood` commands), with a progress
//! bar counting items per state (a line per settled item when stderr is not a terminal).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::mpsc;

use anyhow::Result;

use super::drive;
use super::manifest::Manifest;
use super::record::{BatchDir, Phase, Record};
use super::status::counts_line;

/// Drives the items at `indices`, at most `jobs` at once; their records, as each settled.
pub fn run(manifest: &Manifest, indices: &[usize], jobs: usize) -> Result<Vec<Record>> {
    let dir = BatchDir::of(manifest);
    let queue = Mutex::new(
        indices
            .iter()
            .copied()
            .collect::<std::collections::VecDeque<_>>(),
    );
    let jobs = jobs.clamp(1, indices.len().max(1));
    let bar = indicatif::ProgressBar::new(indices.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} items  {msg}  [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    counts.insert("running", jobs.min(indices.len()));
    bar.set_message(counts_line(&counts));
    let (tx, rx) = mpsc::channel::<(usize, Result<Record>)>();
    let mut records = Vec::with_capacity(indices.len());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (queue, dir) = (&queue, &dir);
            scope.spawn(move || {
                loop {
                    let next = queue
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .pop_front();
                    let Some(index) = next else { break };
                    if tx
                        .send((index, drive::drive(manifest, dir, index)))
                        .is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut settled = 0;
        for (index, result) in rx {
            settled += 1;
            let name = &manifest.items[index].name;
            let line = match &result {
                Ok(r) => format!("{name}: {} ({})", r.phase.as_str(), r.detail),
                Err(e) => format!("{name}: failed ({e:#})"),
            };
            let phase = result.as_ref().map_or(Phase::Failed, |r| r.phase);
            *counts.entry(phase.as_str()).or_insert(0) += 1;
            let left = indices.len() - settled;
            counts.insert("running", jobs.min(left));
            counts.retain(|_, n| *n > 0);
            bar.set_message(counts_line(&counts));
            bar.inc(1);
            if bar.is_hidden() {
                eprintln!("[{settled}/{}] {line}", indices.len());
            } else {
                bar.println(line);
            }
            if let Ok(record) = result {
                records.push(record);
            }
        }
    });
    bar.finish_and_clear();
    Ok(records)
}
