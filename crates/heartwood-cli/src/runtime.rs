//! The command's one async runtime: every subcommand that awaits (the terminal interface,
//! `exec`, `serve`, sign-in, review qualification, closing a session) runs its future here,
//! so the runtime's shape (timers and I/O on, how many workers) is decided in one place.

use std::future::Future;

/// How many worker threads the runtime gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// Two: one session's tasks and the interface's. Blocking work (fsync, git, verification)
    /// goes to the blocking pool, so more workers would only sit idle.
    Two,
    /// One per core: a server answering many browsers at once.
    PerCore,
}

/// Runs `work` to completion on a runtime made for it; the error says the runtime itself could
/// not start (threads or file descriptors exhausted).
pub fn block_on<F: Future>(workers: Workers, work: F) -> anyhow::Result<F::Output> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if workers == Workers::Two {
        builder.worker_threads(2);
    }
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    Ok(runtime.block_on(work))
}
