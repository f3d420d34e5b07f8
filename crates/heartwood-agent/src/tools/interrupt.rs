//! The handle that stops the running tool now, from another task or thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Asks a running conversation to stop now: the running tool is killed with its whole process
/// group (within a tenth of a second), its action is recorded with the partial output, and the
/// conversation pauses.
#[derive(Debug, Clone, Default)]
pub struct InterruptHandle(Arc<AtomicBool>);

impl InterruptHandle {
    /// Requests the interruption.
    pub fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Withdraws a request nothing acted on yet (a new task starts uninterrupted).
    pub fn withdraw(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    /// Whether an interruption is requested (and not yet taken).
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    pub(crate) fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}
