//! The transfer manager: one owner of every long model operation's byte progress, lifecycle,
//! warnings, cancellation and result. Workers advance a [`Transfer`]; interfaces read
//! [`TransferView`]s (bytes, rate, ETA) from [`Transfers::views`] and never compute them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

/// What a transfer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransferView {
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
}

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
        }))
    }

    /// Sets the number of bytes to move.
    pub fn set_total(&self, bytes: u64) {
        self.0.total.store(bytes, Ordering::Relaxed);
    }

    /// Counts bytes moved.
    pub fn advance(&self, bytes: u64) {
        self.0.done.fetch_add(bytes, Ordering::Relaxed);
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

    /// Has cancellation been asked for? Workers check between chunks.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancel.load(Ordering::Relaxed)
    }

    /// Ends the transfer with its outcome.
    pub fn finish<T>(
        &self,
        outcome: &Result<T, crate::ModelError>,
        done: impl FnOnce(&T) -> String,
    ) {
        *lock(&self.0.state) = match outcome {
            Ok(value) => TransferState::Done(done(value)),
            Err(crate::ModelError::Cancelled) => TransferState::Cancelled,
            Err(e) => TransferState::Failed(e.to_string()),
        };
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

/// Every transfer of one process, newest last.
#[derive(Clone, Default)]
pub struct Transfers {
    list: Arc<Mutex<Vec<Transfer>>>,
}

impl Transfers {
    /// Starts listing a new transfer.
    pub fn begin(&self, kind: TransferKind, label: &str) -> Transfer {
        let mut list = lock(&self.list);
        let transfer = Transfer::detached(kind, label);
        let transfer = Transfer(Arc::new(Shared {
            id: list.len() as u64 + 1,
            ..Arc::into_inner(transfer.0).expect("just made")
        }));
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
}
