//! Provenance out: a session's record exported as a Provenance Run RO-Crate 1.1, and such a
//! crate verified again without the session.
//!
//! The crate holds the workflow definition (as the computational workflow), every bound file
//! with its SHA-256 and size, the content-minimized journal (every audit record, and only the
//! event lines the provenance rests on), its Merkle checkpoint, `ro-crate-metadata.json`
//! mapping the run (stages as steps, stage executions, allowed actions, check runs, the
//! researcher's decisions and acceptances) and the standalone `verify_crate.py`. Files outside
//! the bound set, or marked private, are listed by digest only. It never reads a credential:
//! the model route is named by its category and model.
//!
//! This module only reads a bundle the journal wrote and project files through the confined
//! workspace; it never touches a session's own files.

mod archive;
mod batch;
mod build;
mod files;
mod graph;
mod journal;
mod runs;
#[cfg(test)]
mod tests;
mod verify;

use std::path::PathBuf;

pub use batch::{BatchItem, write_batch_crate};
pub use verify::{CrateVerdict, verify_crate};

pub(crate) use build::{CrateSource, write_crate};

/// The name of the verifier inside every crate.
pub const VERIFIER_NAME: &str = "verify_crate.py";

/// The verifier's text (standard-library Python), as shipped inside every crate.
pub const VERIFIER_SCRIPT: &str = include_str!("verify_crate.py");

/// The journal's folder inside a crate.
pub const JOURNAL_DIR: &str = "journal";

/// The largest project file a crate copies, in bytes (a bigger one is listed by digest only).
pub const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// Why a crate could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum CrateError {
    /// The destination is there already; an export never overwrites.
    #[error("{} already exists; name a new directory or file", .0.display())]
    Exists(PathBuf),
    /// Reading or writing failed.
    #[error("cannot {doing} {}: {source}", path.display())]
    Io {
        /// What was being done (`write`, `read`).
        doing: &'static str,
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A project file the run binds could not be read through the workspace.
    #[error("cannot read the project file {path} for the crate: {reason}")]
    ProjectFile {
        /// Project-relative path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The journal bundle could not be read as expected.
    #[error("the exported journal cannot be mapped: {0}; verify the session first")]
    Journal(String),
    /// The crate (or ZIP) is not in a form this build reads.
    #[error("{0}")]
    Unreadable(String),
}

impl CrateError {
    fn io(doing: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| CrateError::Io {
            doing,
            path,
            source,
        }
    }
}

/// What a written crate is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateReport {
    /// Where it was written (a directory, or a ZIP file).
    pub path: PathBuf,
    /// Files inside it, the metadata included.
    pub files: usize,
    /// Its size in bytes (the files' sum, or the ZIP's size).
    pub bytes: u64,
}
