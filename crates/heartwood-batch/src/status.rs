//! Where every item stands: the batch's records merged with what is true now: whether the
//! worker that last ran an item is alive, what Slurm says of its task, and whether a waiting
//! item still waits (what its session's projection says it waits for).

use std::collections::BTreeMap;

use heartwood_events::{Lifecycle, SessionId};
use heartwood_gateway::{ProjectContext, SessionAdmin};
use serde::Serialize;

use crate::error::Result;
use crate::manifest::Manifest;
use crate::record::{BatchDir, Phase, Record};
use crate::slurm::{self, TaskState};

/// One item as status shows it: its record, with where it stands made true now (a dead
/// worker's item is interrupted, an answered one queued), and Slurm's view of its task.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The record, as it stands now.
    #[serde(flatten)]
    pub record: Record,
    /// What Slurm says of its latest task, for Slurm batches.
    pub scheduler: Option<TaskState>,
}

impl std::ops::Deref for Row {
    type Target = Record;

    fn deref(&self) -> &Record {
        &self.record
    }
}

/// The whole batch as status shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The batch's name.
    pub batch: String,
    /// Its directory.
    pub dir: String,
    /// Items per state.
    pub counts: BTreeMap<&'static str, usize>,
    /// Why the scheduler could not be asked, when it could not.
    pub scheduler_error: Option<String>,
    /// The items.
    pub items: Vec<Row>,
}

/// Reads the batch's state now.
pub fn gather(manifest: &Manifest) -> Result<Status> {
    let dir = BatchDir::of(manifest);
    let jobs = slurm::submissions(&dir)?;
    let (scheduler, scheduler_error) = match slurm::scheduler_view(&jobs) {
        Ok(view) => (view, None),
        Err(e) => (BTreeMap::new(), Some(e.to_string())),
    };
    let mut items = Vec::with_capacity(manifest.items.len());
    for (index, item) in manifest.items.iter().enumerate() {
        let record = dir.record(index, item)?;
        items.push(row(
            record,
            scheduler.get(&index).cloned(),
            !jobs.is_empty(),
        ));
    }
    let mut counts = BTreeMap::new();
    for row in &items {
        *counts.entry(row.phase.as_str()).or_insert(0) += 1;
    }
    Ok(Status {
        batch: manifest.name.clone(),
        dir: dir.root().display().to_string(),
        counts,
        scheduler_error,
        items,
    })
}

fn row(mut record: Record, scheduler: Option<TaskState>, on_slurm: bool) -> Row {
    let live_task = scheduler.as_ref().map(|t| slurm::is_live(&t.state));
    match record.phase {
        Phase::Running => {
            let alive = record.worker.as_ref().and_then(|w| w.alive());
            let gone = match (live_task, alive) {
                // Alive, or the scheduler still has its task (a requeued one pending, say).
                (_, Some(true)) | (Some(true), _) => None,
                (Some(false), _) => scheduler
                    .as_ref()
                    .map(|t| format!("its Slurm task {} ended ({})", t.task, t.state)),
                (None, Some(false)) => Some(format!(
                    "its worker (pid {}) is gone",
                    record.worker.as_ref().map_or(0, |w| w.pid)
                )),
                (None, None) if on_slurm => Some(
                    "Slurm no longer lists its task (cancelled, preempted, failed or timed out)"
                        .to_owned(),
                ),
                (None, None) => None,
            };
            if let Some(t) = scheduler.as_ref().filter(|t| t.state == "PENDING") {
                // Requeued (by the scheduler or by hand): it waits for its turn again.
                record.phase = Phase::Queued;
                record.detail = format!(
                    "requeued on Slurm, pending{}",
                    t.reason
                        .as_ref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                );
            } else if let Some(why) = gone {
                record.phase = Phase::Interrupted;
                record.detail = format!(
                    "{why} before the item settled; `heartwood batch resume` continues it from \
                     its journal"
                );
            }
        }
        Phase::Queued => {
            if let Some(t) = scheduler.as_ref().filter(|t| slurm::is_live(&t.state)) {
                record.detail = format!(
                    "queued on Slurm ({}{})",
                    t.state.to_lowercase(),
                    t.reason
                        .as_ref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                );
            }
        }
        Phase::Waiting => {
            if still_waits(&record) == Some(false) {
                record.detail = "answered: `heartwood batch resume` continues it".to_owned();
                record.next = None;
                record.phase = Phase::Queued;
            }
        }
        Phase::Done | Phase::Failed | Phase::Interrupted => {}
    }
    Row { record, scheduler }
}

/// Whether the item's session still waits for a person, as its projection says (what it
/// waits for, or a run a person paused), or is open in a process; `None` when it cannot be
/// read.
fn still_waits(record: &Record) -> Option<bool> {
    let context = ProjectContext::at(&record.project).ok()?;
    let id = SessionId::parse(&record.session).ok()?;
    let (listing, _) = SessionAdmin::new(&context).look(&id).ok()??;
    Some(
        listing.writer_pid.is_some()
            || listing.waits_for.is_some()
            || listing.state == Some(Lifecycle::Paused),
    )
}

/// `3 done · 2 waiting · 1 failed`.
pub fn counts_line(counts: &BTreeMap<&'static str, usize>) -> String {
    let order = [
        "done",
        "running",
        "queued",
        "waiting",
        "interrupted",
        "failed",
    ];
    order
        .iter()
        .filter_map(|k| counts.get(k).map(|n| format!("{n} {k}")))
        .collect::<Vec<_>>()
        .join(" · ")
}
