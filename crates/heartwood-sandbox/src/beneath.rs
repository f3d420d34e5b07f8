//! Files opened beneath a directory by the kernel: every path is resolved by `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` from a descriptor of the directory, so no symbolic
//! link (dangling or not, planted before or between calls) and no `..` leads out of it, and
//! there is no check-then-open window. Where the kernel lacks `openat2` (before Linux 5.6),
//! each component is opened with `O_NOFOLLOW` instead, which refuses every link.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// A directory whose files are opened beneath it.
#[derive(Debug)]
pub struct Beneath {
    dir: OwnedFd,
    root: PathBuf,
    links: bool,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's name.
    pub name: OsString,
    /// Whether it is a directory (a link is never one).
    pub is_dir: bool,
}

fn io(e: Errno) -> std::io::Error {
    std::io::Error::from(e)
}

/// The path's components, refusing an absolute path; `..` is left to the kernel's `BENEATH`.
fn relative(path: &Path) -> std::io::Result<Vec<&std::ffi::OsStr>> {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            Component::ParentDir => Ok(std::ffi::OsStr::new("..")),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not a relative path", path.display()),
            )),
        })
        .collect()
}

impl Beneath {
    /// The directory at `root` (which is trusted: it is opened as given).
    pub fn open(root: &Path) -> std::io::Result<Self> {
        let dir = rustix::fs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io)?;
        Ok(Beneath {
            dir,
            root: root.to_owned(),
            links: true,
        })
    }

    /// The same directory, refusing every symbolic link on the way, even one that stays
    /// beneath it (for writes: a link inside could still name a place the caller keeps apart,
    /// such as Heartwood's own state, and a new file's link is never checked by resolving).
    pub fn without_links(mut self) -> Self {
        self.links = false;
        self
    }

    /// The directory's path as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens `path` (relative to the directory) with `flags`, creating with `mode`.
    fn open_at(&self, path: &Path, flags: OFlags, mode: Mode) -> std::io::Result<OwnedFd> {
        let parts = relative(path)?;
        let joined: PathBuf = if parts.is_empty() {
            PathBuf::from(".")
        } else {
            parts.iter().collect()
        };
        let flags = flags | OFlags::CLOEXEC;
        let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        if !self.links {
            resolve |= ResolveFlags::NO_SYMLINKS;
        }
        match rustix::fs::openat2(self.dir.as_fd(), &joined, flags, mode, resolve) {
            Err(Errno::NOSYS) => walk(self.dir.as_fd(), &parts, flags, mode),
            Err(Errno::LOOP) if !self.links => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{} goes through a symbolic link", path.display()),
            )),
            Err(Errno::XDEV) => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "{} leads outside {} (through a link or `..`)",
                    path.display(),
                    self.root.display()
                ),
            )),
            other => other.map_err(io),
        }
    }

    /// The directory holding `path`'s last component, and that component's name.
    fn parent_of<'p>(&self, path: &'p Path) -> std::io::Result<(OwnedFd, &'p std::ffi::OsStr)> {
        let name = path.file_name().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} names no file", path.display()),
            )
        })?;
        let parent = path.parent().unwrap_or(Path::new(""));
        let dir = self.open_at(parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
        Ok((dir, name))
    }

    /// Opens a file to read.
    pub fn open_read(&self, path: &Path) -> std::io::Result<File> {
        Ok(File::from(self.open_at(
            path,
            OFlags::RDONLY,
            Mode::empty(),
        )?))
    }

    /// Reads a whole file, refusing one larger than `limit` bytes.
    pub fn read(&self, path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
        let file = self.open_read(path)?;
        let size = file.metadata()?.len();
        if size > limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!("{} is {size} bytes, more than {limit}", path.display()),
            ));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// What `path` is, without following a link at its end.
    pub fn metadata(&self, path: &Path) -> std::io::Result<std::fs::Metadata> {
        let fd = self.open_at(path, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty())?;
        File::from(fd).metadata()
    }

    /// Whether `path` exists beneath the directory (a link leading out counts as absent).
    pub fn exists(&self, path: &Path) -> bool {
        self.metadata(path).is_ok()
    }

    /// Creates or replaces the contents of `path` with `bytes` (new files are 0644 less the
    /// umask). Only a regular file with no other hard link is written: a second name for the
    /// same file could sit anywhere on the file system, outside this directory.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NONBLOCK;
        let mut file = File::from(self.open_at(path, flags, Mode::from_raw_mode(0o644))?);
        let meta = file.metadata()?;
        let refuse = |why: &str| {
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{} {why}", path.display()),
            )
        };
        if !meta.is_file() {
            return Err(refuse("is not a regular file"));
        }
        if std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
            return Err(refuse(
                "has another hard link, which may lie outside the project; it is not written",
            ));
        }
        file.set_len(0)?;
        file.write_all(bytes)?;
        file.flush()
    }

    /// Creates `path` and its missing parents as directories.
    pub fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        let mut so_far = PathBuf::new();
        for part in relative(path)? {
            so_far.push(part);
            let (parent, name) = self.parent_of(&so_far)?;
            match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(io(e)),
            }
            // What exists must be a directory beneath, not a link out.
            self.open_at(&so_far, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
        }
        Ok(())
    }

    /// Removes the file (or link) `path`.
    pub fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        let (parent, name) = self.parent_of(path)?;
        rustix::fs::unlinkat(&parent, name, AtFlags::empty()).map_err(io)
    }

    /// The entries of the directory `path`, sorted by name.
    pub fn read_dir(&self, path: &Path) -> std::io::Result<Vec<Entry>> {
        let fd = self.open_at(path, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        let mut entries = Vec::new();
        for entry in rustix::fs::Dir::new(fd).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            entries.push(Entry {
                name: <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name)
                    .to_owned(),
                is_dir: entry.file_type() == rustix::fs::FileType::Directory,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}

/// The walk for kernels without `openat2`: every component opened with `O_NOFOLLOW`, `..`
/// refused.
fn walk(
    root: BorrowedFd<'_>,
    parts: &[&std::ffi::OsStr],
    flags: OFlags,
    mode: Mode,
) -> std::io::Result<OwnedFd> {
    let refuse = || {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "a path with `..` or a link is refused on this kernel (no openat2)",
        )
    };
    let Some((last, dirs)) = parts.split_last() else {
        return rustix::fs::openat(root, ".", flags, mode).map_err(io);
    };
    let mut here: Option<OwnedFd> = None;
    for part in dirs.iter().chain(std::iter::once(last)) {
        if *part == ".." {
            return Err(refuse());
        }
    }
    for part in dirs {
        let at = here.as_ref().map_or(root, AsFd::as_fd);
        let next = rustix::fs::openat(
            at,
            *part,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| if e == Errno::LOOP { refuse() } else { io(e) })?;
        here = Some(next);
    }
    let at = here.as_ref().map_or(root, AsFd::as_fd);
    rustix::fs::openat(at, *last, flags | OFlags::NOFOLLOW, mode)
        .map_err(|e| if e == Errno::LOOP { refuse() } else { io(e) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_of_the_directory_are_refused_even_dangling() {
        let dir = tempfile::tempdir().expect("dir");
        let outside = tempfile::tempdir().expect("outside");
        let target = outside.path().join("planted");
        std::os::unix::fs::symlink(&target, dir.path().join("dangling")).expect("link");
        std::os::unix::fs::symlink("../", dir.path().join("up")).expect("link");
        std::fs::write(dir.path().join("inside.txt"), "in").expect("write");
        std::os::unix::fs::symlink("inside.txt", dir.path().join("alias")).expect("link");
        let b = Beneath::open(dir.path()).expect("open");
        assert!(b.write(Path::new("dangling"), b"x").is_err());
        assert!(!target.exists(), "nothing was written outside");
        assert!(b.read(Path::new("up/etc/passwd"), 1 << 20).is_err());
        assert!(b.read(Path::new("../x"), 1 << 20).is_err());
        assert!(b.create_dir_all(Path::new("dangling/sub")).is_err());
        // A link that stays inside is followed; the file itself is read.
        assert_eq!(b.read(Path::new("alias"), 10).expect("read"), b"in");
        let strict = Beneath::open(dir.path()).expect("open").without_links();
        assert!(strict.write(Path::new("alias"), b"x").is_err());
        assert_eq!(
            strict.read(Path::new("inside.txt"), 10).expect("read"),
            b"in"
        );
        b.create_dir_all(Path::new("a/b")).expect("mkdir");
        b.write(Path::new("a/b/c.txt"), b"c").expect("write");
        assert_eq!(b.read_dir(Path::new("a")).expect("list")[0].name, "b");
        b.remove_file(Path::new("a/b/c.txt")).expect("remove");
        // A hard link to a file outside is never written through.
        let outside_file = outside.path().join("linked.txt");
        std::fs::write(&outside_file, "outside").expect("write");
        std::fs::hard_link(&outside_file, dir.path().join("hard.txt")).expect("hard link");
        assert!(b.write(Path::new("hard.txt"), b"changed").is_err());
        assert_eq!(
            std::fs::read_to_string(&outside_file).expect("read"),
            "outside"
        );
        assert!(!b.exists(Path::new("a/b/c.txt")));
    }
}
