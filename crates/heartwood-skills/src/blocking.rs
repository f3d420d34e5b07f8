//! Waiting for a future from synchronous code, wherever that code runs (a blocking thread, or
//! a thread inside another runtime, where blocking on a second one would panic), on the one
//! runtime the process keeps for such waits: built on first use, never per call. The crates
//! above wait through it too (heartwood-project's model listings, qualification requests and
//! sign-ins), so a process keeps one such runtime, not one per crate.

use std::future::Future;
use std::sync::{Mutex, OnceLock, PoisonError};

use tokio::runtime::Runtime;

/// The runtime, once built.
static SHARED: OnceLock<Runtime> = OnceLock::new();

/// Held while the runtime is built, so two first callers do not both build one (a runtime
/// dropped on an async thread would panic), and a failed build is tried again next time.
static BUILDING: Mutex<()> = Mutex::new(());

/// Why a future was not waited for to its end.
#[derive(Debug, thiserror::Error)]
pub enum Unfinished {
    /// The runtime could not be built.
    #[error("cannot start a runtime: {0}")]
    NoRuntime(#[source] std::io::Error),
    /// The runtime stopped first (only a process shutting down does that).
    #[error("the runtime stopped before the work finished")]
    CutOff,
}

fn shared() -> Result<&'static Runtime, Unfinished> {
    if let Some(runtime) = SHARED.get() {
        return Ok(runtime);
    }
    let _building = BUILDING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(runtime) = SHARED.get() {
        return Ok(runtime);
    }
    // One worker of its own: the callers wait on it from outside.
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("heartwood-waits")
        .enable_all()
        .build()
        .map_err(Unfinished::NoRuntime)?;
    Ok(SHARED.get_or_init(|| built))
}

/// Runs `future` to completion on the process's waiting runtime, blocking the calling thread
/// (as the blocking call it stands for would). A panic in the future is the caller's panic.
pub fn wait_for<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> Result<T, Unfinished> {
    let runtime = shared()?;
    let (done, answer) = std::sync::mpsc::sync_channel(1);
    let running = runtime.spawn(future);
    runtime.spawn(async move {
        let _ = done.send(running.await);
    });
    match answer.recv() {
        Ok(Ok(finished)) => Ok(finished),
        Ok(Err(joined)) if joined.is_panic() => std::panic::resume_unwind(joined.into_panic()),
        Ok(Err(_)) | Err(_) => Err(Unfinished::CutOff),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_from_inside_a_runtime_and_from_a_plain_thread_use_one_runtime() {
        let plain =
            wait_for(async { std::thread::current().name().map(str::to_owned) }).expect("waited");
        let inside = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a caller's runtime")
            .block_on(async {
                wait_for(async { std::thread::current().name().map(str::to_owned) })
            })
            .expect("waited from inside a runtime");
        assert_eq!(plain.as_deref(), Some("heartwood-waits"));
        assert_eq!(inside, plain);
    }
}
