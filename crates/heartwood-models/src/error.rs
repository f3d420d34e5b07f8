//! The one error type of local model work; each message says what to do next.

use std::path::Path;

/// Why a model operation did not complete. Nothing was published when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file concerned.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The bytes are not what the manifest says.
    #[error("{0}")]
    Integrity(String),
    /// A bundle or manifest is malformed or unsafe.
    #[error("refused: {0}")]
    Refused(String),
    /// The request cannot be done as asked (unknown model, missing decision, does not fit).
    #[error("{0}")]
    Invalid(String),
    /// The model hub could not be used.
    #[error("model hub: {0}")]
    Hub(String),
    /// The researcher cancelled the transfer.
    #[error("cancelled; nothing was published")]
    Cancelled,
    /// The model runtime could not be started, reached or stopped.
    #[error("model runtime: {0}")]
    Runtime(String),
}

impl ModelError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        ModelError::Io {
            action,
            path: path.display().to_string(),
            source,
        }
    }
}

/// Adds the file and action to an I/O result.
pub(crate) trait IoContext<T> {
    fn ctx(self, action: &'static str, path: &Path) -> Result<T, ModelError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, action: &'static str, path: &Path) -> Result<T, ModelError> {
        self.map_err(|e| ModelError::io(action, path, e))
    }
}
