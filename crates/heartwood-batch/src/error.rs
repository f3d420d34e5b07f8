//! What can go wrong driving, reading or collecting a batch, as values a frontend can print
//! (each says what happened and, where there is one, what to do next).

use std::path::{Path, PathBuf};

use heartwood_gateway::GatewayError;

/// A batch operation that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The manifest is not valid: every problem found, one per line.
    #[error("{path}: {} problem{}:\n  {}", problems.len(), if problems.len() == 1 { "" } else { "s" }, problems.join("\n  "))]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// Each problem, naming the item and the field.
        problems: Vec<String>,
    },
    /// The manifest file itself cannot be read or parsed.
    #[error("{path}: {why}")]
    ManifestUnreadable {
        /// The manifest.
        path: PathBuf,
        /// Why, in words.
        why: String,
    },
    /// A file or directory of the batch could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the path.
        what: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A batch file does not hold what it should.
    #[error("{path} is not {what}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        what: &'static str,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The gateway refused or failed an operation on an item's session.
    #[error("{what}: {source}")]
    Gateway {
        /// What was being done.
        what: String,
        /// The gateway's error (boxed: it is large, and rare).
        #[source]
        source: Box<GatewayError>,
    },
    /// There is no item at this index.
    #[error("the batch has {count} items; there is no item {index}")]
    NoItem {
        /// The index asked for.
        index: usize,
        /// How many items there are.
        count: usize,
    },
    /// A template holds something other than files and folders.
    #[error(
        "the template holds {}, which is not a regular file or directory; a template holds only \
         files and folders",
        .0.display()
    )]
    TemplateEntry(PathBuf),
    /// An item is made from a template the manifest does not name.
    #[error("the manifest names no template")]
    NoTemplate,
    /// The route could not be used (what the frontend that connects routes said).
    #[error("the route: {0}")]
    Route(String),
    /// Slurm's `sbatch` could not be run or refused the job.
    #[error("{0}")]
    Sbatch(String),
    /// The async runtime the items' sessions are followed on could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// An id the batch made is not one (an item name the manifest let through).
    #[error(transparent)]
    Id(#[from] heartwood_events::IdError),
    /// The batch's RO-Crate could not be written.
    #[error("{0}")]
    Crate(String),
}

impl BatchError {
    /// An I/O failure while doing `what` to `path`.
    pub(crate) fn io(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> BatchError {
        let what = format!("cannot {what} {}", path.display());
        move |source| BatchError::Io { what, source }
    }

    /// A gateway failure while doing `what`.
    pub(crate) fn gateway(what: impl Into<String>) -> impl FnOnce(GatewayError) -> BatchError {
        let what = what.into();
        move |source| BatchError::Gateway {
            what,
            source: Box::new(source),
        }
    }
}

/// A batch operation's result.
pub type Result<T, E = BatchError> = std::result::Result<T, E>;
