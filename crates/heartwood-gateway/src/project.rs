//! Which project this process serves: always the process's current directory, with
//! `.heartwood/` reserved beneath it. No interface accepts another workspace path.
//!
//! Project paths are UTF-8 ([`camino`]): every interface shows them, the journal records
//! project-relative paths as text, and a path that is not text could not be shown or recorded
//! faithfully, so such a folder is refused once, here, with a message.

use std::path::Path;

use camino::{Utf8Path, Utf8PathBuf};

use crate::GatewayError;

/// The project a Heartwood process serves.
#[derive(Debug, Clone)]
pub struct ProjectContext {
    root: Utf8PathBuf,
}

impl ProjectContext {
    /// The project in the process's current directory. Creates nothing.
    pub fn current() -> Result<Self, GatewayError> {
        let root = std::env::current_dir().map_err(|e| GatewayError::NoProject(e.to_string()))?;
        Self::utf8(&root)
    }

    /// The project at `root`, for tests and for programs embedding Heartwood that have already
    /// changed into the project (interfaces use [`ProjectContext::current`]).
    ///
    /// ```
    /// # fn main() -> Result<(), heartwood_gateway::GatewayError> {
    /// let folder = std::env::temp_dir();
    /// let project = heartwood_gateway::ProjectContext::at(&folder)?;
    /// assert!(project.state_dir().ends_with(".heartwood"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn at(root: impl AsRef<Path>) -> Result<Self, GatewayError> {
        Self::utf8(root.as_ref())
    }

    fn utf8(root: &Path) -> Result<Self, GatewayError> {
        let root = Utf8PathBuf::from_path_buf(root.to_owned()).map_err(|path| {
            GatewayError::NoProject(format!(
                "the folder {} has a name that is not valid UTF-8; Heartwood shows and records \
                 project paths as text, so move the project to a folder whose path is",
                path.display()
            ))
        })?;
        Ok(ProjectContext { root })
    }

    /// The project's root directory.
    pub fn root(&self) -> &Utf8Path {
        &self.root
    }

    /// `<root>/.heartwood`, reserved for Heartwood's private state.
    pub fn state_dir(&self) -> Utf8PathBuf {
        self.root.join(".heartwood")
    }
}
