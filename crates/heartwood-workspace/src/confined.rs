//! Confined access to the project's files: every path is walked one component at a time from
//! the project's directory handle with `O_NOFOLLOW`, so no symbolic link is ever followed (a
//! link is reported as a link), and nothing outside the project can be reached.
//!
//! Special files (devices, sockets, FIFOs) are refused from their metadata before they are
//! opened, and a file that changes while it is read (or is swapped between checking and
//! opening) is reported as changed rather than returned as if whole.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use serde::Serialize;

use crate::ProjectPath;

/// What sits at a path, seen without following links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A device, socket or FIFO (never opened).
    Special,
}

/// Why a path could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// Nothing is there.
    #[error("{0} does not exist in the project")]
    Missing(ProjectPath),
    /// A symbolic link is on the way (or is the target); links are never followed.
    #[error("{0} is a symbolic link; the workspace never follows links")]
    Symlink(ProjectPath),
    /// A device, socket or FIFO.
    #[error("{0} is a special file (device, socket or FIFO); only regular files are read")]
    Special(ProjectPath),
    /// Expected a file, found a directory (or the other way round).
    #[error("{path} is a {found}, not a {wanted}")]
    WrongKind {
        /// The path.
        path: ProjectPath,
        /// What it is.
        found: &'static str,
        /// What was asked for.
        wanted: &'static str,
    },
    /// The file changed while it was being read.
    #[error("{0} changed while it was being read; try again")]
    Changed(ProjectPath),
    /// The operating system refused.
    #[error("cannot read {path}: {detail}")]
    Io {
        /// The path.
        path: ProjectPath,
        /// The system's words.
        detail: String,
    },
}

/// The project directory, opened once; everything is reached from this handle.
#[derive(Debug)]
pub(crate) struct Root {
    fd: OwnedFd,
}

impl Root {
    pub(crate) fn open(root: &Path) -> std::io::Result<Self> {
        let fd = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root { fd })
    }

    /// Opens the directory at `path` (the project itself when empty), refusing links.
    pub(crate) fn open_dir(&self, path: &ProjectPath) -> Result<OwnedFd, AccessError> {
        let mut current = rustix::io::dup(&self.fd).map_err(|e| io(path, e))?;
        for component in path.components() {
            current = open_dir_at(&current, component, path)?;
        }
        Ok(current)
    }

    /// Opens the regular file at `path` for reading, with the metadata it was opened with.
    pub(crate) fn open_file(&self, path: &ProjectPath) -> Result<(File, Stat), AccessError> {
        let mut components: Vec<&str> = path.components().collect();
        let Some(name) = components.pop() else {
            return Err(AccessError::WrongKind {
                path: path.clone(),
                found: "directory",
                wanted: "file",
            });
        };
        let mut dir = rustix::io::dup(&self.fd).map_err(|e| io(path, e))?;
        for component in components {
            dir = open_dir_at(&dir, component, path)?;
        }
        let before = stat_at(&dir, name, path)?;
        match FileType::from_raw_mode(before.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => {
                return Err(AccessError::WrongKind {
                    path: path.clone(),
                    found: "directory",
                    wanted: "file",
                });
            }
            FileType::Symlink => return Err(AccessError::Symlink(path.clone())),
            _ => return Err(AccessError::Special(path.clone())),
        }
        let fd = rustix::fs::openat(
            &dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|e| classify(e, path))?;
        let opened = rustix::fs::fstat(&fd).map_err(|e| io(path, e))?;
        // Swapped between the check and the open: whatever is there now is not what was checked.
        if opened.st_ino != before.st_ino || opened.st_dev != before.st_dev {
            return Err(AccessError::Changed(path.clone()));
        }
        if FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile {
            return Err(AccessError::Special(path.clone()));
        }
        Ok((File::from(fd), opened))
    }

    /// What sits at `path`, without following a link there.
    pub(crate) fn kind(&self, path: &ProjectPath) -> Result<(EntryKind, u64), AccessError> {
        let mut components: Vec<&str> = path.components().collect();
        let Some(name) = components.pop() else {
            return Ok((EntryKind::Dir, 0));
        };
        let mut dir = rustix::io::dup(&self.fd).map_err(|e| io(path, e))?;
        for component in components {
            dir = open_dir_at(&dir, component, path)?;
        }
        let stat = stat_at(&dir, name, path)?;
        Ok((kind_of(&stat), size_of(&stat)))
    }
}

/// Reads a whole regular file of at most `max` bytes; `Ok((bytes, false))` when it is bigger
/// (the first `max` bytes). The file must not change while it is read.
pub(crate) fn read_bounded(
    path: &ProjectPath,
    (mut file, before): (File, Stat),
    max: u64,
) -> Result<(Vec<u8>, bool), AccessError> {
    let mut bytes = Vec::with_capacity(usize::try_from(size_of(&before).min(max)).unwrap_or(0));
    (&mut file)
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| AccessError::Io {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    let complete = bytes.len() as u64 <= max;
    bytes.truncate(usize::try_from(max).unwrap_or(usize::MAX));
    unchanged(path, &file, &before)?;
    if complete && bytes.len() as u64 != size_of(&before) {
        return Err(AccessError::Changed(path.clone()));
    }
    Ok((bytes, complete))
}

/// Checks the open file still has the size and modification time it had when opened.
pub(crate) fn unchanged(path: &ProjectPath, file: &File, before: &Stat) -> Result<(), AccessError> {
    let after = rustix::fs::fstat(file.as_fd()).map_err(|e| io(path, e))?;
    let same = after.st_size == before.st_size
        && after.st_mtime == before.st_mtime
        && after.st_mtime_nsec == before.st_mtime_nsec
        && after.st_ctime == before.st_ctime
        && after.st_ctime_nsec == before.st_ctime_nsec;
    if same {
        Ok(())
    } else {
        Err(AccessError::Changed(path.clone()))
    }
}

pub(crate) fn kind_of(stat: &Stat) -> EntryKind {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Special,
    }
}

pub(crate) fn size_of(stat: &Stat) -> u64 {
    u64::try_from(stat.st_size).unwrap_or(0)
}

pub(crate) fn stat_at(dir: &OwnedFd, name: &str, path: &ProjectPath) -> Result<Stat, AccessError> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| classify(e, path))
}

pub(crate) fn open_dir_at(
    dir: &OwnedFd,
    name: &str,
    path: &ProjectPath,
) -> Result<OwnedFd, AccessError> {
    match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOTDIR | Errno::LOOP) => {
            let stat = stat_at(dir, name, path)?;
            Err(match kind_of(&stat) {
                EntryKind::Symlink => AccessError::Symlink(path.clone()),
                EntryKind::Special => AccessError::Special(path.clone()),
                _ => AccessError::WrongKind {
                    path: path.clone(),
                    found: "file",
                    wanted: "directory",
                },
            })
        }
        Err(e) => Err(classify(e, path)),
    }
}

fn classify(e: Errno, path: &ProjectPath) -> AccessError {
    match e {
        Errno::NOENT => AccessError::Missing(path.clone()),
        Errno::LOOP => AccessError::Symlink(path.clone()),
        other => io(path, other),
    }
}

fn io(path: &ProjectPath, e: Errno) -> AccessError {
    AccessError::Io {
        path: path.clone(),
        detail: std::io::Error::from(e).to_string(),
    }
}
