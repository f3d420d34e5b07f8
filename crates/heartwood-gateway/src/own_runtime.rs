//! Running one future to completion from synchronous code, wherever that code runs.

/// Runs `future` to completion on a runtime of its own, on a thread of its own: the caller may
/// be inside a runtime (where blocking on another would panic) or on a blocking thread.
pub(crate) fn on_own_runtime<T: Send, E: std::fmt::Display>(
    future: impl std::future::Future<Output = Result<T, E>> + Send,
) -> Result<T, String> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?
                    .block_on(future)
                    .map_err(|e| e.to_string())
            })
            .join()
            .map_err(|_| "the request panicked".to_owned())?
    })
}
