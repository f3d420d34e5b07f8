//! The batch directory: each item's project (a fresh template copy, or the project named), its
//! record (where the batch last saw it, written atomically by the one worker holding the item's
//! lock), its log, and whether the worker that last ran it is still alive.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{BatchError, Result};
use crate::manifest::{Item, Manifest, Source};

/// Where an item stands, as the batch saw it last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Not started.
    Queued,
    /// A worker is on it.
    Running,
    /// It needs a person: a decision, an acceptance, or a paused run.
    Waiting,
    /// Its work is finished.
    Done,
    /// It failed; the detail says why.
    Failed,
    /// Its worker stopped before the item settled (killed, cancelled, preempted, timed out).
    Interrupted,
}

impl Phase {
    /// In words.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Queued => "queued",
            Phase::Running => "running",
            Phase::Waiting => "waiting",
            Phase::Done => "done",
            Phase::Failed => "failed",
            Phase::Interrupted => "interrupted",
        }
    }

    /// Whether a worker has something to do for an item in this phase.
    pub fn needs_work(self) -> bool {
        matches!(self, Phase::Queued | Phase::Running | Phase::Interrupted)
    }
}

/// The process that runs (or ran) an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worker {
    /// Its pid.
    pub pid: u32,
    /// When it started, in clock ticks after boot (`/proc/PID/stat`), so a reused pid is not
    /// taken for it.
    pub start_ticks: Option<u64>,
    /// The machine it runs on.
    pub host: String,
    /// The Slurm job and array task (`JOB_TASK`), when Slurm started it.
    pub slurm: Option<String>,
}

impl Worker {
    /// This process.
    pub fn this() -> Worker {
        let pid = std::process::id();
        let slurm = match (
            std::env::var("SLURM_ARRAY_JOB_ID"),
            std::env::var("SLURM_ARRAY_TASK_ID"),
        ) {
            (Ok(job), Ok(task)) => Some(format!("{job}_{task}")),
            _ => std::env::var("SLURM_JOB_ID").ok(),
        };
        Worker {
            pid,
            start_ticks: start_ticks(pid),
            host: hostname(),
            slurm,
        }
    }

    /// Whether it still runs: `Some(false)` when it ran on this machine and is gone, `None`
    /// when it ran elsewhere (the scheduler knows).
    pub fn alive(&self) -> Option<bool> {
        if self.host != hostname() {
            return None;
        }
        Some(start_ticks(self.pid).is_some_and(|t| Some(t) == self.start_ticks))
    }
}

/// One item's record, `items/<name>.json` in the batch directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The item's name.
    pub item: String,
    /// Its index (its Slurm array index).
    pub index: usize,
    /// Its session in its project.
    pub session: String,
    /// Its project directory.
    pub project: PathBuf,
    /// Where it stands.
    pub phase: Phase,
    /// Why, in words.
    pub detail: String,
    /// The command that moves it on, when a person must act.
    pub next: Option<String>,
    /// The workflow stage it is at, for workflow batches.
    pub stage: Option<String>,
    /// The latest checks, in words.
    pub last_check: Option<String>,
    /// Usage, as the session's projection says it (tokens and money).
    pub usage: Option<String>,
    /// Workers that have taken it.
    pub attempts: u32,
    /// Seconds its workers spent on it, in all.
    pub wall_seconds: f64,
    /// When it changed last (seconds since the epoch).
    pub updated_at: u64,
    /// The route has been connected in its project.
    pub route_connected: bool,
    /// The worker on it, or last on it.
    pub worker: Option<Worker>,
}

/// The files of one batch.
#[derive(Debug, Clone)]
pub struct BatchDir {
    root: PathBuf,
}

impl BatchDir {
    /// The batch directory of `manifest` (created on first use).
    pub fn of(manifest: &Manifest) -> BatchDir {
        BatchDir {
            root: manifest.batch_dir.clone(),
        }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `item`'s project is.
    pub fn project(&self, item: &Item) -> PathBuf {
        match &item.source {
            Source::Project(dir) => dir.clone(),
            Source::Template(_) => self.root.join("projects").join(&item.name),
        }
    }

    fn record_path(&self, item: &str) -> PathBuf {
        self.root.join("items").join(format!("{item}.json"))
    }

    /// The item's log: what its commands printed.
    pub fn log_path(&self, item: &str) -> PathBuf {
        self.root.join("logs").join(format!("{item}.log"))
    }

    /// The item's session id: fixed by its name, so every worker continues the same session.
    pub fn session_of(item: &Item) -> String {
        format!("batch-{}", item.name)
    }

    /// The record of `item`, or a queued one when no worker has taken it yet.
    pub fn record(&self, index: usize, item: &Item) -> Result<Record> {
        let path = self.record_path(&item.name);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| BatchError::Json {
                path: path.clone(),
                what: "an item record",
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Record {
                item: item.name.clone(),
                index,
                session: Self::session_of(item),
                project: self.project(item),
                phase: Phase::Queued,
                detail: "not started".to_owned(),
                next: None,
                stage: None,
                last_check: None,
                usage: None,
                attempts: 0,
                wall_seconds: 0.0,
                updated_at: now(),
                route_connected: false,
                worker: None,
            }),
            Err(e) => Err(BatchError::io("read", &path)(e)),
        }
    }

    /// Writes `record` whole or not at all (a temporary file renamed over the old one).
    pub fn save(&self, record: &Record) -> Result<()> {
        let path = self.record_path(&record.item);
        let dir = self.root.join("items");
        std::fs::create_dir_all(&dir).map_err(BatchError::io("create", &dir))?;
        let temp = dir.join(format!(".{}.json.{}", record.item, std::process::id()));
        let bytes = serde_json::to_vec_pretty(record).map_err(|source| BatchError::Json {
            path: path.clone(),
            what: "an item record",
            source,
        })?;
        let written = File::create(&temp).and_then(|mut file| {
            file.write_all(&bytes)?;
            file.sync_all()
        });
        written.map_err(BatchError::io("write", &temp))?;
        std::fs::rename(&temp, &path).map_err(BatchError::io("write", &path))
    }

    /// Takes the item's lock, or says who holds it. Held until the returned file is dropped,
    /// so two workers never drive one item (the session lease would refuse the second writer;
    /// this keeps it from even asking).
    pub fn lock(&self, item: &str) -> Result<Option<File>> {
        let dir = self.root.join("items");
        std::fs::create_dir_all(&dir).map_err(BatchError::io("create", &dir))?;
        let path = dir.join(format!("{item}.lock"));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(BatchError::io("open", &path))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(BatchError::io("lock", &path)(e)),
        }
    }

    /// Records that item `index`'s worker stopped (`why`) before the item settled, when no
    /// worker holds the item and its record still says a worker is on it; the record as it
    /// stands then.
    pub fn cut_off(&self, index: usize, item: &Item, why: &str) -> Result<Record> {
        let Some(_lock) = self.lock(&item.name)? else {
            return self.record(index, item);
        };
        let mut record = self.record(index, item)?;
        if record.phase == Phase::Running {
            record.phase = Phase::Interrupted;
            record.detail = format!(
                "{why} before the item settled; `heartwood batch resume` continues it from its \
                 journal"
            );
            record.next = None;
            record.updated_at = now();
            self.save(&record)?;
        }
        Ok(record)
    }

    /// Makes the item's project when it is a template copy and does not exist yet: the template
    /// and its inputs are copied into a temporary directory renamed into place, so a half-made
    /// project is never taken for one.
    pub fn prepare(&self, manifest: &Manifest, item: &Item) -> Result<PathBuf> {
        let target = self.project(item);
        let Source::Template(inputs) = &item.source else {
            return Ok(target);
        };
        if target.is_dir() {
            return Ok(target);
        }
        let template = manifest.template.as_deref().ok_or(BatchError::NoTemplate)?;
        let parent = self.root.join("projects");
        std::fs::create_dir_all(&parent).map_err(BatchError::io("create", &parent))?;
        let partial = parent.join(format!(".{}.partial.{}", item.name, std::process::id()));
        if partial.exists() {
            std::fs::remove_dir_all(&partial).map_err(BatchError::io("remove", &partial))?;
        }
        copy_tree(template, &partial)?;
        for (dest, src) in inputs {
            let to = partial.join(dest);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir).map_err(BatchError::io("create", dir))?;
            }
            std::fs::copy(src, &to).map_err(|source| BatchError::Io {
                what: format!(
                    "item {}: cannot copy {} to {dest}",
                    item.name,
                    src.display()
                ),
                source,
            })?;
        }
        std::fs::rename(&partial, &target)
            .map_err(BatchError::io("move the new project to", &target))?;
        Ok(target)
    }
}

/// Copies the regular files and directories under `from` to `to` (which must not exist),
/// leaving out a `.heartwood/` (a template's sessions are not the item's); a symbolic link or
/// special file is refused, so nothing outside the template is copied in by accident.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir(to).map_err(BatchError::io("create", to))?;
    for entry in std::fs::read_dir(from).map_err(BatchError::io("read", from))? {
        let entry = entry.map_err(BatchError::io("read", from))?;
        let kind = entry.file_type().map_err(BatchError::io("read", from))?;
        let name = entry.file_name();
        if name == ".heartwood" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map_err(BatchError::io("copy", &src))?;
        } else {
            return Err(BatchError::TemplateEntry(src));
        }
    }
    Ok(())
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// When process `pid` started (field 22 of `/proc/PID/stat`), if it runs.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}
