//! The canonical tree digest of a complete skill directory.
//!
//! The directory is walked without following links; every entry must be a directory or a
//! regular file with a plain UTF-8 name. The listing has one line per entry, sorted by path:
//! kind, mode, size, path and the file's BLAKE3 digest, tab-separated (names may hold no tab or
//! newline, so the listing cannot be read two ways). The tree digest is BLAKE3 over a version
//! tag and that listing. It depends on nothing the file system adds by itself: not the order
//! entries are listed in, not timestamps, owners or the umask (a file's mode is only whether it
//! is executable), so the same skill has the same digest on every machine, and any changed
//! byte, name or executable bit changes it.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::SkillError;

/// Versions the canonical form: a change to it changes every digest.
const TAG: &[u8] = b"heartwood-skill-tree-v1\n";

/// How much a skill may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most entries (files and directories).
    pub max_entries: usize,
    /// Most bytes in all files together.
    pub max_total_bytes: u64,
    /// Most bytes in one file.
    pub max_file_bytes: u64,
    /// Deepest nesting below the skill's directory.
    pub max_depth: usize,
    /// Longest name of one entry, in bytes.
    pub max_name_bytes: usize,
}

impl Default for Limits {
    /// A skill is instructions and a few resources: 256 entries, 8 MiB in all, 2 MiB a file,
    /// 8 levels, 128-byte names.
    fn default() -> Self {
        Limits {
            max_entries: 256,
            max_total_bytes: 8 << 20,
            max_file_bytes: 2 << 20,
            max_depth: 8,
            max_name_bytes: 128,
        }
    }
}

/// A tree digest: `blake3:` and 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TreeDigest(String);

impl TreeDigest {
    /// The digest as written (`blake3:…`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 64 hex digits alone (the store's directory name).
    pub fn hex(&self) -> &str {
        self.0.trim_start_matches("blake3:")
    }
}

/// Reads a digest as written: `blake3:` and 64 lowercase hex digits.
pub fn parse_digest(text: &str) -> Option<TreeDigest> {
    let hex = text.strip_prefix("blake3:")?;
    (hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then(|| TreeDigest(text.to_owned()))
}

impl std::fmt::Display for TreeDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Directory,
    /// A regular file.
    File {
        /// Whether any execute bit is set.
        executable: bool,
    },
}

/// One entry of a skill directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path relative to the skill's directory, `/`-separated.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Its size in bytes (0 for a directory).
    pub size: u64,
    /// The BLAKE3 digest of a file's bytes, in hex (empty for a directory).
    pub blake3: String,
}

/// A complete skill directory, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Every entry, sorted by path.
    pub entries: Vec<Entry>,
    /// The digest of the canonical listing.
    pub digest: TreeDigest,
    /// Bytes in all files.
    pub total_bytes: u64,
}

impl Tree {
    /// The canonical listing the digest is computed over.
    pub fn listing(&self) -> String {
        listing(&self.entries)
    }
}

/// Reads the complete directory at `root` within `limits`.
pub fn read(root: &Path, limits: &Limits) -> Result<Tree, SkillError> {
    let meta = std::fs::symlink_metadata(root).map_err(|e| read_error(root, &e))?;
    if !meta.is_dir() {
        return Err(SkillError::Refused(format!(
            "{} is not a directory (a skill is a directory holding SKILL.md)",
            root.display()
        )));
    }
    let mut walk = Walk {
        limits,
        entries: Vec::new(),
        total_bytes: 0,
    };
    walk.directory(root, "", 0)?;
    let mut entries = walk.entries;
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let mut hasher = blake3::Hasher::new();
    hasher.update(TAG);
    hasher.update(listing(&entries).as_bytes());
    Ok(Tree {
        digest: TreeDigest(format!("blake3:{}", hasher.finalize().to_hex())),
        entries,
        total_bytes: walk.total_bytes,
    })
}

struct Walk<'a> {
    limits: &'a Limits,
    entries: Vec<Entry>,
    total_bytes: u64,
}

impl Walk<'_> {
    fn directory(&mut self, dir: &Path, relative: &str, depth: usize) -> Result<(), SkillError> {
        if depth > self.limits.max_depth {
            return Err(SkillError::Refused(format!(
                "{relative} is nested deeper than {} levels",
                self.limits.max_depth
            )));
        }
        let listed = std::fs::read_dir(dir).map_err(|e| read_error(dir, &e))?;
        for entry in listed {
            let entry = entry.map_err(|e| read_error(dir, &e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(SkillError::Refused(format!(
                    "{relative}/{} is not a UTF-8 name",
                    name.to_string_lossy()
                )));
            };
            self.check_name(relative, name)?;
            let path = if relative.is_empty() {
                name.to_owned()
            } else {
                format!("{relative}/{name}")
            };
            if self.entries.len() >= self.limits.max_entries {
                return Err(SkillError::Refused(format!(
                    "the skill holds more than {} files and directories",
                    self.limits.max_entries
                )));
            }
            let full = entry.path();
            let meta = std::fs::symlink_metadata(&full).map_err(|e| read_error(&full, &e))?;
            let file_type = meta.file_type();
            if file_type.is_dir() {
                self.entries.push(Entry {
                    path: path.clone(),
                    kind: EntryKind::Directory,
                    size: 0,
                    blake3: String::new(),
                });
                self.directory(&full, &path, depth + 1)?;
            } else if file_type.is_file() {
                let (size, blake3, executable) = self.file(&full, &path)?;
                self.entries.push(Entry {
                    path,
                    kind: EntryKind::File { executable },
                    size,
                    blake3,
                });
            } else {
                let what = if file_type.is_symlink() {
                    "a symbolic link"
                } else {
                    "a special file (FIFO, socket or device)"
                };
                return Err(SkillError::Refused(format!(
                    "{path} is {what}; a skill holds only directories and regular files"
                )));
            }
        }
        Ok(())
    }

    /// Reads one file, opened without following a link (a link swapped in after the walk
    /// looked is refused, not read).
    fn file(&mut self, full: &Path, path: &str) -> Result<(u64, String, bool), SkillError> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(
            full,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )
        .map_err(|e| SkillError::Refused(format!("{path} cannot be opened as a file: {e}")))?;
        let file = std::fs::File::from(fd);
        let meta = file.metadata().map_err(|e| read_error(full, &e))?;
        if !meta.is_file() {
            return Err(SkillError::Refused(format!(
                "{path} is not a regular file; a skill holds only directories and regular files"
            )));
        }
        if meta.len() > self.limits.max_file_bytes {
            return Err(SkillError::Refused(format!(
                "{path} is {} bytes; a skill's file may hold at most {}",
                meta.len(),
                self.limits.max_file_bytes
            )));
        }
        let mut hasher = blake3::Hasher::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; 64 * 1024];
        let mut reader = file.take(self.limits.max_file_bytes + 1);
        loop {
            let n = reader.read(&mut buf).map_err(|e| read_error(full, &e))?;
            if n == 0 {
                break;
            }
            size += n as u64;
            hasher.update(&buf[..n]);
        }
        if size > self.limits.max_file_bytes {
            return Err(SkillError::Refused(format!(
                "{path} grew past {} bytes while it was read",
                self.limits.max_file_bytes
            )));
        }
        self.total_bytes += size;
        if self.total_bytes > self.limits.max_total_bytes {
            return Err(SkillError::Refused(format!(
                "the skill's files hold more than {} bytes together",
                self.limits.max_total_bytes
            )));
        }
        let executable = meta.permissions().mode() & 0o111 != 0;
        Ok((size, hasher.finalize().to_hex().to_string(), executable))
    }

    fn check_name(&self, relative: &str, name: &str) -> Result<(), SkillError> {
        let bad = if name.len() > self.limits.max_name_bytes {
            Some(format!("longer than {} bytes", self.limits.max_name_bytes))
        } else if name.chars().any(|c| c.is_control()) {
            Some("holds a control character".to_owned())
        } else if name.contains('\\') {
            Some("holds a backslash".to_owned())
        } else {
            None
        };
        match bad {
            Some(why) => Err(SkillError::Refused(format!(
                "the name {:?} in {} {why}",
                name,
                if relative.is_empty() {
                    "the skill"
                } else {
                    relative
                }
            ))),
            None => Ok(()),
        }
    }
}

fn listing(entries: &[Entry]) -> String {
    let mut out = String::new();
    for entry in entries {
        let (kind, mode) = match entry.kind {
            EntryKind::Directory => ("d", "755"),
            EntryKind::File { executable: true } => ("f", "755"),
            EntryKind::File { executable: false } => ("f", "644"),
        };
        out.push_str(&format!(
            "{kind}\t{mode}\t{}\t{}\t{}\n",
            entry.size, entry.path, entry.blake3
        ));
    }
    out
}

fn read_error(path: &Path, e: &std::io::Error) -> SkillError {
    SkillError::Read {
        path: PathBuf::from(path).display().to_string(),
        detail: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let full = root.join(path);
            std::fs::create_dir_all(full.parent().expect("a parent")).expect("mkdir");
            std::fs::write(full, text).expect("write");
        }
    }

    fn digest(root: &Path) -> TreeDigest {
        read(root, &Limits::default()).expect("a valid tree").digest
    }

    const FILES: [(&str, &str); 3] = [
        ("SKILL.md", "---\nname: s\ndescription: d\n---\nDo it.\n"),
        ("scripts/check.py", "print('ok')\n"),
        ("reference/notes.md", "# Notes\n"),
    ];

    #[test]
    fn the_digest_does_not_depend_on_the_order_files_were_made_in() {
        let (a, b) = (
            tempfile::tempdir().expect("a"),
            tempfile::tempdir().expect("b"),
        );
        write(a.path(), &FILES);
        let mut reversed = FILES;
        reversed.reverse();
        write(b.path(), &reversed);
        assert_eq!(digest(a.path()), digest(b.path()));
        assert!(digest(a.path()).as_str().starts_with("blake3:"));
    }

    #[test]
    fn the_digest_is_the_documented_canonical_form_so_every_machine_computes_the_same() {
        let dir = tempfile::tempdir().expect("dir");
        let text = "---\nname: s\ndescription: d\n---\nDo it.\n";
        write(
            dir.path(),
            &[("SKILL.md", text), ("bin/run", "#!/bin/sh\n")],
        );
        std::fs::set_permissions(
            dir.path().join("bin/run"),
            std::fs::Permissions::from_mode(0o700),
        )
        .expect("chmod");
        // Rebuilt by hand from the module's description, not from the code under test (sorted
        // by bytes: `S` before `b`).
        let listing = format!(
            "f\t644\t{}\tSKILL.md\t{}\nd\t755\t0\tbin\t\nf\t755\t10\tbin/run\t{}\n",
            text.len(),
            blake3::hash(text.as_bytes()).to_hex(),
            blake3::hash(b"#!/bin/sh\n").to_hex(),
        );
        let mut expected = b"heartwood-skill-tree-v1\n".to_vec();
        expected.extend_from_slice(listing.as_bytes());
        let tree = read(dir.path(), &Limits::default()).expect("tree");
        assert_eq!(tree.listing(), listing);
        assert_eq!(
            tree.digest.as_str(),
            format!("blake3:{}", blake3::hash(&expected).to_hex())
        );
    }

    #[test]
    fn any_byte_name_or_executable_bit_changes_the_digest() {
        let dir = tempfile::tempdir().expect("dir");
        write(dir.path(), &FILES);
        let before = digest(dir.path());
        std::fs::write(dir.path().join("reference/notes.md"), "# Notes.\n").expect("byte");
        let byte = digest(dir.path());
        assert_ne!(before, byte);
        std::fs::rename(
            dir.path().join("reference/notes.md"),
            dir.path().join("reference/note.md"),
        )
        .expect("rename");
        let name = digest(dir.path());
        assert_ne!(byte, name);
        let script = dir.path().join("scripts/check.py");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mode = digest(dir.path());
        assert_ne!(name, mode);
        // Only the executable bit counts: group-writable is the umask's business.
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o775)).expect("chmod");
        assert_eq!(mode, digest(dir.path()));
        std::fs::create_dir(dir.path().join("empty")).expect("mkdir");
        assert_ne!(
            mode,
            digest(dir.path()),
            "an empty directory is part of the tree"
        );
    }

    #[test]
    fn a_link_or_a_fifo_in_a_skill_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        write(dir.path(), &FILES);
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("reference/passwd"))
            .expect("symlink");
        let linked = read(dir.path(), &Limits::default()).expect_err("a link");
        assert!(
            linked
                .to_string()
                .contains("reference/passwd is a symbolic link"),
            "{linked}"
        );
        std::fs::remove_file(dir.path().join("reference/passwd")).expect("rm");
        let fifo = dir.path().join("scripts/pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let special = read(dir.path(), &Limits::default()).expect_err("a FIFO");
        assert!(special.to_string().contains("special file"), "{special}");
    }

    #[test]
    fn limits_are_enforced_with_the_numbers() {
        let dir = tempfile::tempdir().expect("dir");
        write(dir.path(), &FILES);
        let small = Limits {
            max_file_bytes: 8,
            ..Limits::default()
        };
        let big = read(dir.path(), &small).expect_err("too big");
        assert!(big.to_string().contains("at most 8"), "{big}");
        let few = Limits {
            max_entries: 2,
            ..Limits::default()
        };
        assert!(read(dir.path(), &few).is_err());
        let shallow = Limits {
            max_depth: 0,
            ..Limits::default()
        };
        assert!(read(dir.path(), &shallow).is_err());
    }
}
