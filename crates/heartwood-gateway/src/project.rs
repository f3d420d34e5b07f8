//! Which project this process serves: always the process's current directory, with
//! `.heartwood/` reserved beneath it. No interface accepts another workspace path.

use std::path::{Path, PathBuf};

use crate::GatewayError;

/// The project a Heartwood process serves.
#[derive(Debug, Clone)]
pub struct ProjectContext {
    root: PathBuf,
}

impl ProjectContext {
    /// The project in the process's current directory. Creates nothing.
    pub fn current() -> Result<Self, GatewayError> {
        let root = std::env::current_dir().map_err(|e| GatewayError::NoProject(e.to_string()))?;
        Ok(ProjectContext { root })
    }

    /// The project at `root`, for tests and for programs embedding Heartwood that have already
    /// changed into the project (interfaces use [`ProjectContext::current`]).
    pub fn at(root: &Path) -> Self {
        ProjectContext {
            root: root.to_owned(),
        }
    }

    /// The project's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/.heartwood`, reserved for Heartwood's private state.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(".heartwood")
    }
}
