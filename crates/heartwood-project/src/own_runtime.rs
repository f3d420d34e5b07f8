//! Running one future to completion from synchronous code, wherever that code runs, on the
//! one runtime this crate keeps for its requests (a model listing, a qualification request, a
//! sign-in): built once, on first use, never per call.

use std::sync::{Mutex, OnceLock, PoisonError};

use tokio::runtime::Runtime;

use crate::ProjectError;

/// The requests' runtime, once built.
static SHARED: OnceLock<Runtime> = OnceLock::new();

/// Held while the runtime is built, so two first callers do not both build one (a runtime
/// dropped on an async thread would panic).
static BUILDING: Mutex<()> = Mutex::new(());

/// The requests' runtime: one worker of its own, so a caller inside another runtime (where
/// blocking on a second one would panic) or on a blocking thread can wait for it alike.
fn shared() -> Result<&'static Runtime, ProjectError> {
    if let Some(runtime) = SHARED.get() {
        return Ok(runtime);
    }
    let _building = BUILDING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(runtime) = SHARED.get() {
        return Ok(runtime);
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("heartwood-requests")
        .enable_all()
        .build()
        .map_err(|e| ProjectError::io("cannot start a runtime for the request", e))?;
    Ok(SHARED.get_or_init(|| built))
}

/// Runs `future` to completion on the requests' runtime and waits for it, blocking the
/// calling thread (as the blocking call it stands for would). A panic in the future is the
/// caller's panic.
pub(crate) fn on_own_runtime<T, E>(
    future: impl std::future::Future<Output = Result<T, E>> + Send + 'static,
) -> Result<T, ProjectError>
where
    T: Send + 'static,
    E: Send + 'static + Into<ProjectError>,
{
    let runtime = shared()?;
    let (done, answer) = std::sync::mpsc::sync_channel(1);
    let running = runtime.spawn(future);
    runtime.spawn(async move {
        let _ = done.send(running.await);
    });
    match answer.recv() {
        Ok(Ok(answered)) => answered.map_err(Into::into),
        Ok(Err(joined)) if joined.is_panic() => std::panic::resume_unwind(joined.into_panic()),
        // Cancelled: only a runtime shutting down does that, and this one lives as long as
        // the process.
        Ok(Err(_)) | Err(_) => Err(ProjectError::io(
            "the request was cut off",
            std::io::Error::other("the requests' runtime stopped"),
        )),
    }
}
