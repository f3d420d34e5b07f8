//! What changed: from Git against `HEAD` (untracked files included) in a Git project; in any
//! other project, exactly the paths the session's successful file-editor actions changed.
//! Terminal command text is never read as evidence of a change.

use serde::Serialize;

use crate::git::Git;
use crate::{ProjectPath, Workspace, WorkspaceError};

/// Bounds for [`Workspace::changes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ChangeLimits {
    /// Most paths returned.
    pub max_paths: usize,
}

impl Default for ChangeLimits {
    fn default() -> Self {
        ChangeLimits { max_paths: 5_000 }
    }
}

/// Where a change list comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeSource {
    /// `git status` against `HEAD`.
    Git,
    /// Not a Git project: the file-editor actions of the selected session.
    SessionEdits,
}

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Different from `HEAD`.
    Modified,
    /// New and staged.
    Added,
    /// Gone from the work tree or the index.
    Deleted,
    /// Moved (`from` says where from).
    Renamed,
    /// Became a link, or stopped being one.
    TypeChanged,
    /// In a merge conflict.
    Unmerged,
    /// Not tracked by Git.
    Untracked,
    /// Written by the agent's file editor (non-Git projects).
    Edited,
}

impl ChangeKind {
    /// The one-letter mark every listing shows (Git's, and `E` for an edit).
    pub fn mark(self) -> char {
        match self {
            ChangeKind::Modified => 'M',
            ChangeKind::Added => 'A',
            ChangeKind::Deleted => 'D',
            ChangeKind::Renamed => 'R',
            ChangeKind::TypeChanged => 'T',
            ChangeKind::Unmerged => 'U',
            ChangeKind::Untracked => '?',
            ChangeKind::Edited => 'E',
        }
    }
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(rename = "WorkspaceChange")]
pub struct Change {
    /// The path.
    pub path: ProjectPath,
    /// How it changed.
    pub kind: ChangeKind,
    /// For renames, the old path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<ProjectPath>,
}

/// The changed paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Changes {
    /// Where the list comes from.
    pub source: ChangeSource,
    /// Changes in path order.
    pub changes: Vec<Change>,
    /// The bounds applied.
    pub limits: ChangeLimits,
    /// Whether paths were left out because of `max_paths`.
    pub truncated: bool,
    /// Changed paths not shown: inside `.heartwood/`, outside the project, or unnameable.
    pub excluded: usize,
}

impl Workspace {
    /// The changed paths. `session_edits` are the paths the selected session's successful
    /// file-editor actions wrote; they are used only when the project is not a Git work tree.
    pub fn changes(
        &self,
        session_edits: &[String],
        limits: ChangeLimits,
    ) -> Result<Changes, WorkspaceError> {
        let mut changes = Changes {
            source: ChangeSource::SessionEdits,
            changes: Vec::new(),
            limits,
            truncated: false,
            excluded: 0,
        };
        let found = match &self.git {
            Some(git) => {
                changes.source = ChangeSource::Git;
                git_changes(git, &mut changes.excluded)?
            }
            None => {
                let mut edited = Vec::new();
                for path in session_edits {
                    match ProjectPath::parse(path) {
                        Ok(path) => edited.push(Change {
                            kind: if self.root.kind(&path).is_ok() {
                                ChangeKind::Edited
                            } else {
                                ChangeKind::Deleted
                            },
                            path,
                            from: None,
                        }),
                        Err(_) => changes.excluded += 1,
                    }
                }
                edited
            }
        };
        let mut found = found;
        found.sort_by(|a, b| a.path.cmp(&b.path));
        found.dedup_by(|a, b| a.path == b.path);
        changes.truncated = found.len() > limits.max_paths;
        found.truncate(limits.max_paths);
        changes.changes = found;
        Ok(changes)
    }
}

/// Parses `git status --porcelain=v2 -z` against `HEAD`.
fn git_changes(git: &Git, excluded: &mut usize) -> Result<Vec<Change>, WorkspaceError> {
    let out = git
        .run(&[
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--ignored=no",
            "--find-renames",
            "--",
            ".",
        ])
        .map_err(WorkspaceError::Git)?;
    let mut records = out.split(|b| *b == 0).filter(|r| !r.is_empty());
    let mut found = Vec::new();
    while let Some(record) = records.next() {
        let text = String::from_utf8_lossy(record);
        let (kind, path, from) = match text.as_bytes().first() {
            Some(b'1') => {
                let Some((xy, path)) = fields(&text, 8) else {
                    continue;
                };
                let kind = match (xy.as_bytes()[0], xy.as_bytes()[1]) {
                    (b'A', b'D') => continue, // added and deleted again: nothing against HEAD
                    (b'A', _) => ChangeKind::Added,
                    (b'D', _) | (_, b'D') => ChangeKind::Deleted,
                    (b'T', _) | (_, b'T') => ChangeKind::TypeChanged,
                    _ => ChangeKind::Modified,
                };
                (kind, path, None)
            }
            Some(b'2') => {
                let from = records
                    .next()
                    .map(|r| String::from_utf8_lossy(r).into_owned());
                let Some((_, path)) = fields(&text, 9) else {
                    continue;
                };
                (ChangeKind::Renamed, path, from)
            }
            Some(b'u') => {
                let Some((_, path)) = fields(&text, 10) else {
                    continue;
                };
                (ChangeKind::Unmerged, path, None)
            }
            Some(b'?') => (
                ChangeKind::Untracked,
                text.get(2..).unwrap_or_default(),
                None,
            ),
            _ => continue,
        };
        let in_project = |p: &str| {
            p.strip_prefix(git.prefix.as_str())
                .and_then(|rel| ProjectPath::parse(rel).ok())
        };
        match in_project(path) {
            Some(path) => found.push(Change {
                path,
                kind,
                from: from.as_deref().and_then(in_project),
            }),
            None => *excluded += 1,
        }
    }
    Ok(found)
}

/// The `XY` field and the path after `skip` space-separated fields (paths may hold spaces).
fn fields(record: &str, skip: usize) -> Option<(&str, &str)> {
    let mut parts = record.splitn(skip + 1, ' ');
    parts.next()?;
    let xy = parts.next()?;
    let path = parts.nth(skip - 2)?;
    (xy.len() == 2).then_some((xy, path))
}
