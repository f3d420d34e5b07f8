//! Why a process could not be confined.

/// Why a process could not be confined or a path could not be opened beneath its root.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// This machine cannot confine (the detail says why and what to do).
    #[error("{0}")]
    Unavailable(String),
    /// A program Heartwood runs itself is not in the system's directories.
    #[error(
        "{program} is not installed in /usr/bin or /bin; install it with the system's package manager"
    )]
    ProgramMissing {
        /// The program's name.
        program: String,
    },
    /// The project folder is one a sandbox cannot show alone (the root, a shared temporary
    /// folder, the home itself): everything else there would be visible too.
    #[error(
        "{root} is too broad to be a project the sandbox shows (everything else in it would be \
         visible to commands, other users' files and Heartwood's own state among them); move \
         the project into a folder of its own"
    )]
    ProjectTooBroad {
        /// The project folder.
        root: String,
    },
    /// The syscall filter could not be prepared.
    #[error("cannot prepare the sandbox's syscall filter: {0}")]
    Filter(String),
    /// An I/O error while preparing the sandbox.
    #[error("cannot prepare the sandbox: {0}")]
    Io(#[from] std::io::Error),
}
