//! The one bounded, confined, read-only view of a Heartwood project.
//!
//! This crate owns how Heartwood reads the researcher's project: the tree, UTF-8 text files,
//! changed paths, per-file diffs against `HEAD`, and content digests with evidence snapshots.
//! Interfaces reach it through the gateway; evidence checks read through it too, so it must be
//! impossible to escape and impossible to fool.
//!
//! It must never write to the project, follow a symbolic link, open a special file, show
//! anything inside `.heartwood/` or `.git/`, or accept a path that is not a normalized
//! project-relative one. Every response carries the bounds it applied and says when a result is
//! binary, truncated, too large, or not available because the project is not a Git work tree.

mod changes;
mod confined;
mod diff;
mod evidence;
mod git;
pub use git::GitError;
mod path;
mod text;
mod tree;

use std::path::{Path, PathBuf};

pub use changes::{Change, ChangeKind, ChangeLimits, ChangeSource, Changes};
pub use confined::{AccessError, EntryKind};
pub use diff::{DiffLimits, DiffStatus, FileDiff};
pub use evidence::{
    EvidenceCheck, EvidenceError, EvidenceSnapshot, EvidenceState, FileDigest, TextDigest,
};
pub use path::{EXCLUDED, MAX_COMPONENTS, MAX_PATH_BYTES, PathError, ProjectPath};
pub use text::{TextFile, TextLimits, TextStatus};
pub use tree::{Tree, TreeEntry, TreeLimits};

/// Why a workspace operation failed; each message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    /// The path was refused.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The path could not be read.
    #[error(transparent)]
    Access(#[from] AccessError),
    /// Git could not answer.
    #[error("git could not read the repository: {0}")]
    Git(#[from] git::GitError),
    /// The project folder itself could not be opened.
    #[error("cannot open the project folder {0}")]
    Project(String),
}

/// Read-only access to one project folder.
#[derive(Debug)]
pub struct Workspace {
    root: confined::Root,
    dir: PathBuf,
    git: Option<git::Git>,
}

impl Workspace {
    /// The project at `root`. Opens the folder once; detects whether it is in a Git work tree.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let root = root.as_ref();
        let dir = std::fs::canonicalize(root)
            .map_err(|e| WorkspaceError::Project(format!("{}: {e}", root.display())))?;
        let handle = confined::Root::open(&dir)
            .map_err(|e| WorkspaceError::Project(format!("{}: {e}", dir.display())))?;
        let git = git::Git::detect(&dir);
        Ok(Workspace {
            root: handle,
            dir,
            git,
        })
    }

    /// The project folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the project is in a Git work tree (changes and diffs come from Git).
    pub fn is_git(&self) -> bool {
        self.git.is_some()
    }

    /// The commit `HEAD` names when the work tree matches it exactly (no change, no untracked
    /// file outside `.heartwood/`), so the project's files can be recreated from it later.
    pub fn clean_head(&self) -> Option<String> {
        let git = self.git.as_ref()?;
        if !git.prefix.is_empty() {
            return None; // the project is part of a larger work tree: its files alone are not a commit
        }
        let head = git.run(&["rev-parse", "--verify", "HEAD"]).ok()?;
        let head = String::from_utf8(head).ok()?.trim().to_owned();
        let changes = self.changes(&[], ChangeLimits { max_paths: 1 }).ok()?;
        // Paths the listing leaves out are Heartwood's own state (and names a project path cannot
        // hold); they are not part of the starting files.
        changes.changes.is_empty().then_some(head)
    }

    /// Writes the files of `commit` (a full commit id, as [`Workspace::clean_head`] gives) into
    /// `into`, which must be an empty folder; for replaying a session from its starting files.
    pub fn export_commit(&self, commit: &str, into: &Path) -> Result<(), WorkspaceError> {
        let git = self
            .git
            .as_ref()
            .ok_or(WorkspaceError::Git(git::GitError::NotWorkTree))?;
        let empty = std::fs::read_dir(into)
            .map(|mut d| d.next().is_none())
            .map_err(|e| WorkspaceError::Project(format!("{}: {e}", into.display())))?;
        if !empty {
            return Err(WorkspaceError::Project(format!(
                "{} is not empty; starting files go into an empty folder",
                into.display()
            )));
        }
        git.export(commit, into).map_err(WorkspaceError::Git)
    }

    /// What sits at `path` (links not followed) and, for files, its size.
    pub fn kind(&self, path: &ProjectPath) -> Result<(EntryKind, u64), AccessError> {
        self.root.kind(path)
    }
}
