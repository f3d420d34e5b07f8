//! Which project this process serves: always the process's current directory, with
//! `.heartwood/` reserved beneath it. No interface accepts another workspace path.
//!
//! Project paths are UTF-8 ([`camino`]): every interface shows them, the journal records
//! project-relative paths as text, and a path that is not text could not be shown or recorded
//! faithfully, so such a folder is refused once, here, with a message.

use std::path::Path;

use camino::{Utf8Path, Utf8PathBuf};

use crate::{ProjectError, ProjectUnusable};

/// The project a Heartwood process serves.
#[derive(Debug, Clone)]
pub struct ProjectContext {
    root: Utf8PathBuf,
    /// The folder the process runs in, when the project was found above it.
    below: Option<Utf8PathBuf>,
}

impl ProjectContext {
    /// The project of the process's current directory: the directory itself when it holds
    /// `.heartwood/` (or nothing above it does), else the nearest ancestor that holds one, as
    /// git finds its work tree; the search stops below the home folder and the filesystem root,
    /// and never crosses into another filesystem. A new project is still created only in the
    /// current directory. Creates nothing.
    pub fn current() -> Result<Self, ProjectError> {
        let cwd = std::env::current_dir().map_err(ProjectUnusable::CurrentDir)?;
        let here = Self::utf8(&cwd)?;
        match nearest_project_above(&cwd) {
            Some(root) => {
                let mut found = Self::utf8(&root)?;
                found.below = Some(here.root);
                Ok(found)
            }
            None => Ok(here),
        }
    }

    /// The folder the process runs in, when the project was found above it (`None` when the
    /// project is the current directory).
    pub fn found_from(&self) -> Option<&Utf8Path> {
        self.below.as_deref()
    }

    /// The project at `root`, for tests and for programs embedding Heartwood that have already
    /// changed into the project (interfaces use [`ProjectContext::current`]).
    ///
    /// ```
    /// # fn main() -> Result<(), heartwood_project::ProjectError> {
    /// let folder = std::env::temp_dir();
    /// let project = heartwood_project::ProjectContext::at(&folder)?;
    /// assert!(project.state_dir().ends_with(".heartwood"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn at(root: impl AsRef<Path>) -> Result<Self, ProjectError> {
        Self::utf8(root.as_ref())
    }

    fn utf8(root: &Path) -> Result<Self, ProjectError> {
        let root = Utf8PathBuf::from_path_buf(root.to_owned()).map_err(ProjectUnusable::NotUtf8)?;
        Ok(ProjectContext { root, below: None })
    }

    /// The project's root directory.
    pub fn root(&self) -> &Utf8Path {
        &self.root
    }

    /// `<root>/.heartwood`, reserved for Heartwood's private state.
    pub fn state_dir(&self) -> Utf8PathBuf {
        self.root.join(".heartwood")
    }

    /// Creates `.heartwood/` (private to its owner) when it is missing, and then writes its
    /// own ignore file in it, so `git add -A` in the project never commits journals, leases or
    /// settings. A folder that already exists is left as it is: whoever removed the ignore file
    /// meant to. Call it before the first write beneath the folder.
    pub fn prepare_state_dir(&self) -> Result<(), ProjectError> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self.state_dir();
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
            Err(e) => return Err(ProjectError::io(format!("cannot create {dir}"), e)),
        }
        let ignore = dir.join(STATE_IGNORE_FILE);
        std::fs::write(&ignore, STATE_IGNORE_TEXT)
            .map_err(|e| ProjectError::io(format!("cannot write {ignore}"), e))
    }

    /// Whether version control leaves `.heartwood/` out, in words for `status`.
    pub fn state_folder(&self) -> heartwood_events::startup::StateFolder {
        let dir = self.state_dir();
        let ignore = dir.join(STATE_IGNORE_FILE);
        // Git leaves the whole folder out when its own ignore file names everything.
        let ignored = std::fs::read_to_string(&ignore)
            .is_ok_and(|text| text.lines().any(|line| line.trim() == "*"));
        let detail = if !dir.is_dir() {
            "not created yet; Heartwood writes its own .gitignore in .heartwood/ when it \
             creates it, so `git add -A` never commits the journals"
                .to_owned()
        } else if ignored {
            ".heartwood/ is kept out of git by its own .gitignore: `git add -A` does not \
             commit journals, leases or settings"
                .to_owned()
        } else {
            format!(
                ".heartwood/ is not kept out of git (its .gitignore does not leave out `*`): \
                 `git add -A` would commit its journals; `printf '*\\n' > {ignore}` keeps them \
                 out"
            )
        };
        heartwood_events::startup::StateFolder {
            exists: dir.is_dir(),
            ignored,
            detail,
        }
    }
}

/// The ignore file Heartwood writes in `.heartwood/`: read by git from inside the folder, so
/// it needs no change to the project's own `.gitignore`.
const STATE_IGNORE_FILE: &str = ".gitignore";

/// Its text: everything in the folder, the file itself included, is left out.
const STATE_IGNORE_TEXT: &str = "# Written by Heartwood when it created this folder: its journals, leases and\n\
# settings are the project's private state. Delete this file to commit them on purpose.\n*\n";

/// The nearest strict ancestor of `start` holding `.heartwood/`, when `start` holds none; the
/// search stops below the home folder and the filesystem root, and at a filesystem boundary.
fn nearest_project_above(start: &Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    if start.join(".heartwood").is_dir() {
        return None;
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let device = std::fs::metadata(start).ok()?.dev();
    let mut dir = start.parent();
    while let Some(candidate) = dir {
        let is_ceiling = candidate.parent().is_none() || home.as_deref() == Some(candidate);
        if is_ceiling || std::fs::metadata(candidate).ok()?.dev() != device {
            return None;
        }
        if candidate.join(".heartwood").is_dir() {
            return Some(candidate.to_owned());
        }
        dir = candidate.parent();
    }
    None
}
