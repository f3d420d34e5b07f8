//! Running one request (a model listing, a qualification request, a sign-in) to completion
//! from synchronous code, wherever that code runs, on the process's one waiting runtime
//! ([`heartwood_skills::blocking`]): built once, on first use, never per call.

use heartwood_skills::blocking::{Unfinished, wait_for};

use crate::ProjectError;

/// Runs `future` to completion and waits for it, blocking the calling thread (as the blocking
/// call it stands for would). A panic in the future is the caller's panic.
pub(crate) fn on_own_runtime<T, E>(
    future: impl std::future::Future<Output = Result<T, E>> + Send + 'static,
) -> Result<T, ProjectError>
where
    T: Send + 'static,
    E: Send + 'static + Into<ProjectError>,
{
    match wait_for(future) {
        Ok(answered) => answered.map_err(Into::into),
        Err(Unfinished::NoRuntime(e)) => Err(ProjectError::io(
            "cannot start a runtime for the request",
            e,
        )),
        Err(cut @ Unfinished::CutOff) => Err(ProjectError::io(
            "the request was cut off",
            std::io::Error::other(cut.to_string()),
        )),
    }
}
