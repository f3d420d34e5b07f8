//! Running one future to completion from synchronous code, wherever that code runs.

use crate::ProjectError;

/// Runs `future` to completion on a runtime of its own, on a thread of its own: the caller may
/// be inside a runtime (where blocking on another would panic) or on a blocking thread. A panic
/// in the future is the caller's panic.
pub(crate) fn on_own_runtime<T: Send, E: Send + Into<ProjectError>>(
    future: impl std::future::Future<Output = Result<T, E>> + Send,
) -> Result<T, ProjectError> {
    std::thread::scope(|scope| {
        let ran = scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| ProjectError::io("cannot start a runtime for the request", e))?;
                runtime.block_on(future).map_err(Into::into)
            })
            .join();
        ran.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
