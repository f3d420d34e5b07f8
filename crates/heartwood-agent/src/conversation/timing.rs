//! Where a conversation's time goes: model calls, tools, and the engine itself.

use std::time::{Duration, Instant};

/// Where a conversation's time went, accumulated over every run since it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunTiming {
    /// Wall time inside [`Conversation::run`].
    pub run: Duration,
    /// Time waiting for model replies (including condensation calls).
    pub model: Duration,
    /// Time tools took.
    pub tools: Duration,
    /// Model calls made.
    pub model_calls: u64,
}

impl RunTiming {
    /// The engine's own time: everything in `run` that was not a model call or a tool.
    pub fn engine(&self) -> Duration {
        self.run.saturating_sub(self.model + self.tools)
    }
}

/// Awaits one model call, counting its time and the call in `timing`.
pub(super) async fn timed<T>(
    timing: &mut RunTiming,
    call: impl std::future::Future<Output = T>,
) -> T {
    let asked = Instant::now();
    let reply = call.await;
    timing.model += asked.elapsed();
    timing.model_calls += 1;
    reply
}
