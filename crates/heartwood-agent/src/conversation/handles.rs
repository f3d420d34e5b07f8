//! Handles that reach into a running conversation from elsewhere (another task or thread): pause
//! it between steps, or add the researcher's guidance at the next step. (The handle that stops
//! the running tool now is the tools' own, [`crate::tools::InterruptHandle`].)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Asks a running conversation to pause at its next step boundary, or just before its next
/// model call (after the actions already allowed have run).
#[derive(Debug, Clone, Default)]
pub struct PauseHandle {
    next_step: Arc<AtomicBool>,
    before_model: Arc<AtomicBool>,
}

impl PauseHandle {
    /// Requests a pause; the run stops before its next step.
    pub fn pause(&self) {
        self.next_step.store(true, Ordering::SeqCst);
    }

    /// Requests a pause before the next model call: actions already allowed still run, and the
    /// agent gets no further continuation (a used-up budget).
    pub fn pause_before_model(&self) {
        self.before_model.store(true, Ordering::SeqCst);
    }

    /// Withdraws a pause request no run has acted on yet (a new task starts unpaused).
    pub fn withdraw(&self) {
        self.next_step.store(false, Ordering::SeqCst);
        self.before_model.store(false, Ordering::SeqCst);
    }

    pub(super) fn take(&self) -> bool {
        self.next_step.swap(false, Ordering::SeqCst)
    }

    pub(super) fn take_before_model(&self) -> bool {
        self.before_model.swap(false, Ordering::SeqCst)
    }
}

/// Sends guidance to a running conversation: each message joins the conversation at the next
/// step boundary, before the model is asked again.
#[derive(Debug, Clone, Default)]
pub struct GuidanceHandle(Arc<std::sync::Mutex<Vec<String>>>);

impl GuidanceHandle {
    /// Queues a message from the researcher.
    pub fn send(&self, text: &str) {
        self.lock().push(text.to_owned());
    }

    /// Takes every queued message that no step has read yet.
    pub fn drain(&self) -> Vec<String> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
