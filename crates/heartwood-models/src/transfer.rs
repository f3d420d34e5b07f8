//! The transfer manager: one owner of every long model operation's byte progress, lifecycle,
//! warnings, cancellation and result. Workers advance a [`Transfer`]; interfaces read
//! [`TransferView`]s (bytes, rate, ETA) from [`Transfers::views`] and never compute them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a transfer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransferKind {
    /// Fetching files from a model hub.
    Download,
    /// Reading a bundle or local files into the store.
    Import,
    /// Writing a bundle.
    Export,
    /// Re-reading a stored model against its manifest.
    Verify,
}

/// Where a transfer is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum TransferState {
    /// Moving bytes.
    Running,
    /// Finished; the detail says what it produced.
    Done(String),
    /// Stopped on an error; the detail is the error.
    Failed(String),
    /// The researcher cancelled it; nothing was published.
    Cancelled,
}

/// A transfer as every interface shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TransferView {
    /// Its name in the project (`<pid>-<id>`), by which any interface cancels it; absent for
    /// a transfer only its own process shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// The manager's id for it.
    pub id: u64,
    /// What it does.
    pub kind: TransferKind,
    /// What it moves (a model or repository name).
    pub label: String,
    /// Bytes moved.
    pub bytes_done: u64,
    /// Bytes to move in all (0 while unknown).
    pub bytes_total: u64,
    /// Average bytes per second since it started.
    pub bytes_per_second: u64,
    /// Seconds left at that rate, when the total is known and bytes are moving.
    pub eta_seconds: Option<u64>,
    /// Lifecycle.
    #[serde(flatten)]
    pub state: TransferState,
    /// Things the researcher should know that did not stop it (a restarted download, ...).
    pub warnings: Vec<String>,
}

struct Shared {
    id: u64,
    kind: TransferKind,
    label: String,
    started: Instant,
    done: AtomicU64,
    total: AtomicU64,
    cancel: AtomicBool,
    state: Mutex<TransferState>,
    warnings: Mutex<Vec<String>>,
    /// Where its view is written for other processes' interfaces, and when it last was.
    persist: Option<(PathBuf, Mutex<Option<Instant>>)>,
}

/// How often a running transfer's view is rewritten for other processes.
const PERSIST_EVERY: Duration = Duration::from_millis(250);

/// A worker's handle on one transfer. Cheap to clone; every clone is the same transfer.
#[derive(Clone)]
pub struct Transfer(Arc<Shared>);

impl Transfer {
    /// A transfer nobody lists (for work outside a manager, such as benchmarks).
    pub fn detached(kind: TransferKind, label: &str) -> Transfer {
        Transfer(Arc::new(Shared {
            id: 0,
            kind,
            label: label.to_owned(),
            started: Instant::now(),
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            cancel: AtomicBool::new(false),
            state: Mutex::new(TransferState::Running),
            warnings: Mutex::new(Vec::new()),
            persist: None,
        }))
    }

    /// Sets the number of bytes to move.
    pub fn set_total(&self, bytes: u64) {
        self.0.total.store(bytes, Ordering::Relaxed);
    }

    /// Counts bytes moved.
    pub fn advance(&self, bytes: u64) {
        self.0.done.fetch_add(bytes, Ordering::Relaxed);
        self.persist(false);
    }

    /// Writes the view for other processes: at most every [`PERSIST_EVERY`] while running,
    /// always when `now`. Best effort: progress that cannot be shown elsewhere does not stop
    /// the transfer.
    fn persist(&self, now: bool) {
        let Some((path, last)) = &self.0.persist else {
            return;
        };
        {
            let mut last = lock(last);
            if !now && last.is_some_and(|t| t.elapsed() < PERSIST_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        let Ok(bytes) = serde_json::to_vec(&self.view()) else {
            return;
        };
        let temp = path.with_extension("tmp");
        if std::fs::write(&temp, bytes).is_ok() {
            let _ = std::fs::rename(&temp, path);
        }
    }

    /// Sets the bytes moved (a resumed download starts past zero).
    pub fn set_done(&self, bytes: u64) {
        self.0.done.store(bytes, Ordering::Relaxed);
    }

    /// Records a warning.
    pub fn warn(&self, warning: String) {
        lock(&self.0.warnings).push(warning);
    }

    /// Asks the worker to stop at its next chunk.
    pub fn cancel(&self) {
        self.0.cancel.store(true, Ordering::Relaxed);
    }

    /// Has cancellation been asked for, by this process or (for a persisted transfer) by any
    /// interface of the project through [`request_cancel`]? Workers check between chunks.
    pub fn is_cancelled(&self) -> bool {
        if self.0.cancel.load(Ordering::Relaxed) {
            return true;
        }
        let asked = self
            .0
            .persist
            .as_ref()
            .is_some_and(|(path, _)| path.with_extension("cancel").exists());
        if asked {
            self.cancel();
        }
        asked
    }

    /// Ends the transfer with its outcome.
    pub fn finish<T>(
        &self,
        outcome: &Result<T, crate::ModelError>,
        done: impl FnOnce(&T) -> String,
    ) {
        self.end(match outcome {
            Ok(value) => TransferState::Done(done(value)),
            Err(crate::ModelError::Cancelled) => TransferState::Cancelled,
            Err(e) => TransferState::Failed(e.to_string()),
        });
    }

    /// Ends the transfer as cancelled, having published nothing.
    pub fn end_cancelled(&self) {
        self.end(TransferState::Cancelled);
    }

    /// Ends the transfer as done, having produced `what`.
    pub fn succeed(&self, what: String) {
        self.end(TransferState::Done(what));
    }

    fn end(&self, state: TransferState) {
        *lock(&self.0.state) = state;
        self.persist(true);
        if let Some((path, _)) = &self.0.persist {
            let _ = std::fs::remove_file(path.with_extension("cancel"));
        }
    }

    /// The transfer as interfaces show it.
    pub fn view(&self) -> TransferView {
        let s = &self.0;
        let done = s.done.load(Ordering::Relaxed);
        let total = s.total.load(Ordering::Relaxed);
        let elapsed = s.started.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 {
            (done as f64 / elapsed) as u64
        } else {
            0
        };
        let state = lock(&s.state).clone();
        let eta_seconds = (state == TransferState::Running && total > 0 && rate > 0)
            .then(|| total.saturating_sub(done) / rate);
        TransferView {
            handle: s
                .persist
                .as_ref()
                .and_then(|(path, _)| path.file_stem())
                .map(|stem| stem.to_string_lossy().into_owned()),
            id: s.id,
            kind: s.kind,
            label: s.label.clone(),
            bytes_done: done,
            bytes_total: total,
            bytes_per_second: rate,
            eta_seconds,
            state,
            warnings: lock(&s.warnings).clone(),
        }
    }
}

/// Every transfer of one process, newest last; with a directory, each also writes its view
/// there (`<pid>-<id>.json`), so every interface of the project can show it.
#[derive(Clone, Default)]
pub struct Transfers {
    list: Arc<Mutex<Vec<Transfer>>>,
    dir: Option<PathBuf>,
}

impl Transfers {
    /// Transfers whose views are also written to `dir` (made when the first one begins).
    pub fn persisted(dir: PathBuf) -> Transfers {
        Transfers {
            list: Arc::default(),
            dir: Some(dir),
        }
    }

    /// Starts listing a new transfer.
    pub fn begin(&self, kind: TransferKind, label: &str) -> Transfer {
        self.begin_in(kind, label, self.dir.as_ref())
    }

    /// Starts listing a new transfer that this process alone shows: a review, which promises
    /// to write nothing, must not leave a view in the project either.
    pub fn begin_unwritten(&self, kind: TransferKind, label: &str) -> Transfer {
        self.begin_in(kind, label, None)
    }

    fn begin_in(&self, kind: TransferKind, label: &str, dir: Option<&PathBuf>) -> Transfer {
        let mut list = lock(&self.list);
        let id = list.len() as u64 + 1;
        let persist = dir.and_then(|dir| {
            crate::private::private_dirs(dir).ok()?;
            let path = dir.join(format!("{}-{id}.json", std::process::id()));
            Some((path, Mutex::new(None)))
        });
        let transfer = Transfer::detached(kind, label);
        let transfer = Transfer(Arc::new(Shared {
            id,
            persist,
            ..Arc::into_inner(transfer.0).expect("just made")
        }));
        transfer.persist(true);
        list.push(transfer.clone());
        transfer
    }

    /// Every transfer's view.
    pub fn views(&self) -> Vec<TransferView> {
        lock(&self.list).iter().map(Transfer::view).collect()
    }

    /// Cancels transfer `id`; false when there is none running with that id.
    pub fn cancel(&self, id: u64) -> bool {
        let list = lock(&self.list);
        let found = list
            .iter()
            .find(|t| t.0.id == id && *lock(&t.0.state) == TransferState::Running);
        found.inspect(|t| t.cancel()).is_some()
    }
}

/// Why a cancellation request was not taken.
#[derive(Debug, thiserror::Error)]
pub enum CancelRefused {
    /// No transfer of the project has that name.
    #[error("no transfer is named {0:?}; `heartwood model list` shows the project's transfers")]
    Unknown(String),
    /// It is no longer running.
    #[error("transfer {0:?} is not running (it finished, failed or was cancelled)")]
    NotRunning(String),
    /// The request could not be written.
    #[error("the cancellation of {handle:?} could not be written: {source}")]
    Unwritten {
        /// The transfer.
        handle: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Asks the transfer `handle` of the project whose transfers are in `dir` to stop, whichever
/// process runs it: the worker sees the request between chunks, publishes nothing and ends
/// as cancelled. Refused when no such transfer is running.
pub fn request_cancel(dir: &Path, handle: &str) -> Result<(), CancelRefused> {
    let named = |h: &str| {
        !h.is_empty() && h.len() <= 41 && h.bytes().all(|b| b.is_ascii_digit() || b == b'-')
    };
    if !named(handle) {
        return Err(CancelRefused::Unknown(handle.to_owned()));
    }
    let view = dir.join(format!("{handle}.json"));
    let Ok(bytes) = std::fs::read(&view) else {
        return Err(CancelRefused::Unknown(handle.to_owned()));
    };
    let running =
        read_persisted_one(&view, &bytes).is_some_and(|v| v.state == TransferState::Running);
    if !running {
        return Err(CancelRefused::NotRunning(handle.to_owned()));
    }
    std::fs::write(view.with_extension("cancel"), b"").map_err(|source| CancelRefused::Unwritten {
        handle: handle.to_owned(),
        source,
    })
}

/// One persisted view, with a running transfer whose process ended read as interrupted.
fn read_persisted_one(path: &Path, bytes: &[u8]) -> Option<TransferView> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let pid = name
        .strip_suffix(".json")?
        .split('-')
        .next()?
        .parse::<u32>()
        .ok()?;
    let mut view: TransferView = serde_json::from_slice(bytes).ok()?;
    let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
    if view.state == TransferState::Running && !alive {
        view.state = TransferState::Failed(
            "interrupted: the process running it ended; run the same command again \
             (a download resumes)"
                .to_owned(),
        );
        view.eta_seconds = None;
    }
    Some(view)
}

/// The views other processes wrote to `dir`, newest first, at most `limit`. A transfer still
/// marked running whose process has ended is shown as interrupted.
pub fn read_persisted(dir: &Path, limit: usize) -> Vec<TransferView> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, TransferView)> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                return None;
            }
            let modified = entry.metadata().ok()?.modified().ok()?;
            let view = read_persisted_one(&path, &std::fs::read(&path).ok()?)?;
            Some((modified, view))
        })
        .collect();
    found.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    found.into_iter().take(limit).map(|(_, v)| v).collect()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A worker that panicked mid-update leaves counters, not broken invariants.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_carry_progress_lifecycle_and_cancellation() {
        let transfers = Transfers::default();
        let t = transfers.begin(TransferKind::Download, "tiny");
        t.set_total(100);
        t.advance(40);
        t.warn("restarted".into());
        let view = &transfers.views()[0];
        assert_eq!((view.id, view.bytes_done, view.bytes_total), (1, 40, 100));
        assert_eq!(view.state, TransferState::Running);
        assert_eq!(view.warnings, ["restarted"]);
        assert!(transfers.cancel(1));
        assert!(t.is_cancelled());
        t.finish::<()>(&Err(crate::ModelError::Cancelled), |_| String::new());
        assert_eq!(transfers.views()[0].state, TransferState::Cancelled);
        assert!(
            !transfers.cancel(1),
            "a finished transfer cannot be cancelled"
        );
    }

    #[test]
    fn a_persisted_transfer_is_cancelled_by_name_from_anywhere_in_the_project() {
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path().join("transfers");
        let worker = Transfers::persisted(root.clone());
        let t = worker.begin(TransferKind::Download, "tiny");
        let handle = t.view().handle.expect("a persisted transfer has a handle");
        assert!(!t.is_cancelled());
        // Another interface (another process) knows only the directory and the handle.
        request_cancel(&root, &handle).expect("running");
        assert!(
            t.is_cancelled(),
            "the worker sees the request between chunks"
        );
        t.finish::<()>(&Err(crate::ModelError::Cancelled), |_| String::new());
        assert_eq!(read_persisted(&root, 5)[0].state, TransferState::Cancelled);
        assert!(matches!(
            request_cancel(&root, &handle),
            Err(CancelRefused::NotRunning(h)) if h == handle
        ));
        assert!(matches!(
            request_cancel(&root, "../../etc/passwd"),
            Err(CancelRefused::Unknown(_))
        ));
        assert!(
            !root.join(format!("{handle}.cancel")).exists(),
            "the request is consumed"
        );
    }

    #[test]
    fn persisted_views_reach_other_readers_and_a_dead_writer_reads_as_interrupted() {
        let dir = tempfile::tempdir().expect("dir");
        let transfers = Transfers::persisted(dir.path().join("transfers"));
        let t = transfers.begin(TransferKind::Import, "tiny");
        t.set_total(10);
        t.advance(4);
        t.finish(&Ok::<(), crate::ModelError>(()), |()| {
            "published tiny".to_owned()
        });
        let seen = read_persisted(&dir.path().join("transfers"), 5);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].state, TransferState::Done("published tiny".into()));
        assert_eq!(seen[0].bytes_done, 4);

        // A view left running by a process that no longer exists.
        let mut orphan = seen[0].clone();
        orphan.state = TransferState::Running;
        let path = dir
            .path()
            .join("transfers")
            .join(format!("{}-1.json", u32::MAX - 1));
        std::fs::write(&path, serde_json::to_vec(&orphan).expect("json")).expect("write");
        let seen = read_persisted(&dir.path().join("transfers"), 5);
        assert!(
            seen.iter().any(
                |v| matches!(&v.state, TransferState::Failed(why) if why.contains("interrupted"))
            ),
            "{seen:?}"
        );
    }
}
