//! Per-file unified diffs against `HEAD`: the committed side from Git's object store, the work
//! tree side through the confined reader (so links and special files are never read).

use serde::Serialize;

use crate::confined::{AccessError, read_bounded};
use crate::text::as_text;
use crate::{ProjectPath, Workspace, WorkspaceError};

/// Bounds for [`Workspace::diff`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DiffLimits {
    /// Most bytes read from each side.
    pub max_bytes: u64,
    /// Most lines of diff returned.
    pub max_lines: usize,
}

impl Default for DiffLimits {
    fn default() -> Self {
        DiffLimits {
            max_bytes: 1024 * 1024,
            max_lines: 5_000,
        }
    }
}

/// What a diff request found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiffStatus {
    /// `unified` holds the diff.
    Changed,
    /// The work tree matches `HEAD`.
    Unchanged,
    /// One side is not text; no lines are compared.
    Binary,
    /// One side is over `max_bytes`; no lines are compared.
    TooLarge,
    /// Not a Git project: there is no committed version to compare with.
    NotGit,
}

/// One file's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FileDiff {
    /// The file.
    pub path: ProjectPath,
    /// The outcome.
    pub status: DiffStatus,
    /// Size in `HEAD`, if the file is there.
    pub old_size: Option<u64>,
    /// Size in the work tree, if the file is there.
    pub new_size: Option<u64>,
    /// The unified diff (`---`/`+++` headers and hunks).
    pub unified: String,
    /// Whether lines were left out because of `max_lines`.
    pub truncated: bool,
    /// The bounds applied.
    pub limits: DiffLimits,
}

impl Workspace {
    /// The unified diff of `path` between `HEAD` and the work tree.
    pub fn diff(&self, path: &ProjectPath, limits: DiffLimits) -> Result<FileDiff, WorkspaceError> {
        let mut diff = FileDiff {
            path: path.clone(),
            status: DiffStatus::NotGit,
            old_size: None,
            new_size: None,
            unified: String::new(),
            truncated: false,
            limits,
        };
        let Some(git) = &self.git else {
            return Ok(diff);
        };
        let object = format!("HEAD:{}{}", git.prefix, path.as_str());
        // What HEAD holds there: a file to compare, a directory (refused as such), or nothing.
        let in_head = git
            .run(&["cat-file", "-t", &object])
            .ok()
            .map(|kind| String::from_utf8_lossy(&kind).trim().to_owned());
        if in_head.as_deref().is_some_and(|k| k != "blob") {
            return Err(WorkspaceError::Access(AccessError::WrongKind {
                path: path.clone(),
                found: "directory",
                wanted: "file",
            }));
        }
        let old = if in_head.is_some() {
            let size: u64 = String::from_utf8_lossy(
                &git.run(&["cat-file", "-s", &object])
                    .map_err(WorkspaceError::Git)?,
            )
            .trim()
            .parse()
            .unwrap_or(0);
            diff.old_size = Some(size);
            if size > limits.max_bytes {
                diff.status = DiffStatus::TooLarge;
                return Ok(diff);
            }
            Some(
                git.run(&["cat-file", "blob", &object])
                    .map_err(WorkspaceError::Git)?,
            )
        } else {
            None
        };
        let new = match self.root.open_file(path) {
            Ok(opened) => {
                diff.new_size = Some(crate::confined::size_of(&opened.1));
                let (bytes, complete) = read_bounded(path, opened, limits.max_bytes)?;
                if !complete {
                    diff.status = DiffStatus::TooLarge;
                    return Ok(diff);
                }
                Some(bytes)
            }
            Err(AccessError::Missing(_)) if old.is_some() => None,
            // In neither the work tree nor HEAD: not a file of this project at all.
            Err(AccessError::Missing(missing)) => {
                return Err(WorkspaceError::Access(AccessError::Missing(missing)));
            }
            Err(e) => return Err(e.into()),
        };
        if old == new {
            diff.status = DiffStatus::Unchanged;
            return Ok(diff);
        }
        let empty: &[u8] = &[];
        let (Some(old_text), Some(new_text)) = (
            as_text(old.as_deref().unwrap_or(empty), true),
            as_text(new.as_deref().unwrap_or(empty), true),
        ) else {
            diff.status = DiffStatus::Binary;
            return Ok(diff);
        };
        diff.status = DiffStatus::Changed;
        let old_name = if old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_owned()
        };
        let new_name = if new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".to_owned()
        };
        let text = similar::TextDiff::from_lines(old_text, new_text);
        let unified = text
            .unified_diff()
            .context_radius(3)
            .header(&old_name, &new_name)
            .to_string();
        for (i, line) in unified.split_inclusive('\n').enumerate() {
            if i == limits.max_lines {
                diff.truncated = true;
                break;
            }
            diff.unified.push_str(line);
        }
        Ok(diff)
    }
}
