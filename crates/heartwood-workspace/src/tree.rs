//! The project tree: entries in name order, depth first, bounded in count and depth.

use std::os::fd::OwnedFd;

use rustix::fs::{Dir, FileType};
use serde::Serialize;

use crate::confined::{AccessError, EntryKind, kind_of, size_of, stat_at};
use crate::path::EXCLUDED;
use crate::{ProjectPath, Workspace};

/// Bounds for [`Workspace::tree`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TreeLimits {
    /// Most entries returned.
    pub max_entries: usize,
    /// Deepest level listed below the starting directory (1 = its direct children).
    pub max_depth: usize,
}

impl Default for TreeLimits {
    fn default() -> Self {
        TreeLimits {
            max_entries: 5_000,
            max_depth: 12,
        }
    }
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TreeEntry {
    /// Project-relative path.
    pub path: ProjectPath,
    /// What it is (links are not followed).
    pub kind: EntryKind,
    /// Size in bytes, for files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A bounded listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Tree {
    /// Where the listing starts.
    pub root: ProjectPath,
    /// Entries, depth first, names in byte order.
    pub entries: Vec<TreeEntry>,
    /// The bounds applied.
    pub limits: TreeLimits,
    /// Whether entries were left out because of `max_entries`.
    pub truncated: bool,
    /// Directories whose contents were not listed because of `max_depth`.
    pub depth_limited: usize,
    /// Entries whose names are not UTF-8, left out (they cannot be named in a project path).
    pub unsupported_names: usize,
}

impl Workspace {
    /// Lists the tree under `start` (the project itself when it is the root path).
    pub fn tree(&self, start: &ProjectPath, limits: TreeLimits) -> Result<Tree, AccessError> {
        let dir = self.root.open_dir(start)?;
        let mut tree = Tree {
            root: start.clone(),
            entries: Vec::new(),
            limits,
            truncated: false,
            depth_limited: 0,
            unsupported_names: 0,
        };
        walk(&mut tree, dir, start, 1)?;
        Ok(tree)
    }
}

fn walk(tree: &mut Tree, dir: OwnedFd, at: &ProjectPath, depth: usize) -> Result<(), AccessError> {
    let names = list(tree, &dir, at)?;
    for (name, kind) in names {
        if tree.entries.len() >= tree.limits.max_entries {
            tree.truncated = true;
            return Ok(());
        }
        let path = at.child(&name);
        let (kind, size) = match kind {
            Some(EntryKind::Dir) => (EntryKind::Dir, None),
            Some(EntryKind::Symlink) => (EntryKind::Symlink, None),
            Some(EntryKind::Special) => (EntryKind::Special, None),
            // Sizes (and unknown kinds) need the entry's own metadata.
            _ => match stat_at(&dir, &name, &path) {
                Ok(stat) => {
                    let kind = kind_of(&stat);
                    (kind, (kind == EntryKind::File).then(|| size_of(&stat)))
                }
                // Gone since the directory was read: nothing to list.
                Err(AccessError::Missing(_)) => continue,
                Err(e) => return Err(e),
            },
        };
        tree.entries.push(TreeEntry {
            path: path.clone(),
            kind,
            size,
        });
        if kind == EntryKind::Dir {
            if depth >= tree.limits.max_depth {
                tree.depth_limited += 1;
                continue;
            }
            match crate::confined::open_dir_at(&dir, &name, &path) {
                Ok(child) => walk(tree, child, &path, depth + 1)?,
                // Replaced by a link or removed since it was listed: it stays listed as it was.
                Err(AccessError::Symlink(_) | AccessError::Missing(_)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// The directory's entries in name order, at most one more than can still be returned.
fn list(
    tree: &mut Tree,
    dir: &OwnedFd,
    at: &ProjectPath,
) -> Result<Vec<(String, Option<EntryKind>)>, AccessError> {
    let room = tree.limits.max_entries.saturating_sub(tree.entries.len()) + 1;
    let reader = Dir::read_from(dir).map_err(|e| AccessError::Io {
        path: at.clone(),
        detail: std::io::Error::from(e).to_string(),
    })?;
    let mut names = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|e| AccessError::Io {
            path: at.clone(),
            detail: std::io::Error::from(e).to_string(),
        })?;
        let bytes = entry.file_name().to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let Ok(name) = std::str::from_utf8(bytes) else {
            tree.unsupported_names += 1;
            continue;
        };
        if EXCLUDED.contains(&name) || name.contains('\\') || name.chars().any(char::is_control) {
            if !EXCLUDED.contains(&name) {
                tree.unsupported_names += 1;
            }
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Directory => Some(EntryKind::Dir),
            FileType::Symlink => Some(EntryKind::Symlink),
            FileType::RegularFile => Some(EntryKind::File),
            FileType::Unknown => None,
            _ => Some(EntryKind::Special),
        };
        names.push((name.to_owned(), kind));
    }
    names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // Sorting needs every name, but only `room` of them can be returned.
    names.truncate(room);
    Ok(names)
}
