//! Confining tool paths to the project: every path the editor touches resolves inside the
//! project root, never through a symbolic link that leaves it, and never into `.heartwood/`
//! (Heartwood's private state) or `.git/`. Directories outside the project that were declared
//! to the tools (an active skill's verified copy, a data mount) are reached by their absolute
//! path: viewed always, edited only when declared writable.

use std::path::{Component, Path, PathBuf};

use super::refusal::PathRefused;

/// Directory names the tools refuse at any depth.
const RESERVED: [&str; 2] = [".heartwood", ".git"];

/// A directory outside the project the tools may reach by its absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideDirectory {
    /// The directory.
    pub path: PathBuf,
    /// The file editor may create and change files inside it.
    pub writable: bool,
    /// What it is, in a few words, for the model's error messages ("an active skill's
    /// verified copy", "data mount /data/cohort").
    pub what: String,
}

impl OutsideDirectory {
    /// A directory the tools may view and never edit.
    pub fn read_only(path: PathBuf, what: impl Into<String>) -> Self {
        OutsideDirectory {
            path,
            writable: false,
            what: what.into(),
        }
    }
}

/// The project root and the rules for paths inside it.
#[derive(Debug, Clone)]
pub struct ProjectPaths {
    root: PathBuf,
    outside: Vec<OutsideDirectory>,
}

impl ProjectPaths {
    /// The project rooted at `root` (resolved once, so later checks compare real paths).
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(ProjectPaths {
            root: root.canonicalize()?,
            outside: Vec::new(),
        })
    }

    /// Adds directories outside the project the tools may reach (each resolved once, so later
    /// checks compare real paths).
    pub fn with_outside(mut self, dirs: &[OutsideDirectory]) -> std::io::Result<Self> {
        for dir in dirs {
            self.outside.push(OutsideDirectory {
                path: dir.path.canonicalize()?,
                ..dir.clone()
            });
        }
        Ok(self)
    }

    /// Resolves a path to read: inside a declared outside directory (by its absolute path), or
    /// as [`ProjectPaths::resolve`] would.
    pub fn resolve_for_reading(&self, given: &str) -> Result<(PathBuf, String), PathRefused> {
        match self.outside_path(given) {
            Some(found) => found.map(|(path, _)| (path, given.to_owned())),
            None => self.resolve(given),
        }
    }

    /// Resolves a path to write; inside a read-only outside directory it is refused with that
    /// reason.
    pub fn resolve_for_writing(&self, given: &str) -> Result<(PathBuf, String), PathRefused> {
        match self.outside_path(given) {
            Some(Ok((_, dir))) if !dir.writable => Err(PathRefused::ReadOnly {
                given: given.to_owned(),
                what: dir.what.clone(),
            }),
            Some(found) => found.map(|(path, _)| (path, given.to_owned())),
            None => self.resolve(given),
        }
    }

    /// `Some` when `given` names something inside a declared outside directory: the path to
    /// use and the directory, or why it may not be used (it leaves the directory).
    fn outside_path(
        &self,
        given: &str,
    ) -> Option<Result<(PathBuf, &OutsideDirectory), PathRefused>> {
        let candidate = Path::new(given);
        if !candidate.is_absolute() || given.contains('\0') {
            return None;
        }
        let dir = self
            .outside
            .iter()
            .find(|d| candidate.starts_with(&d.path))?;
        if candidate
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return Some(Err(PathRefused::NotPlain(given.to_owned())));
        }
        // The deepest part that exists must really be inside the directory: a symbolic link on
        // the way must not lead out of it (a new file in a writable mount does not exist yet).
        let mut existing = candidate;
        while !existing.exists() {
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break,
            }
        }
        Some(match existing.canonicalize() {
            Ok(real) if real.starts_with(&dir.path) => {
                // Joining an empty rest would add a trailing slash, which a file refuses.
                match candidate.strip_prefix(existing) {
                    Ok(rest) if !rest.as_os_str().is_empty() => Ok((real.join(rest), dir)),
                    _ => Ok((real, dir)),
                }
            }
            Ok(_) => Err(PathRefused::LeavesDirectory {
                given: given.to_owned(),
                what: dir.what.clone(),
            }),
            Err(source) => Err(PathRefused::Unreadable {
                given: given.to_owned(),
                source,
            }),
        })
    }

    /// The directory `absolute` (a path [`ProjectPaths::resolve`] or its outside forms gave)
    /// lies in, opened so the kernel resolves the rest beneath it, and that rest. With `links`
    /// false no symbolic link is followed at all (every write): a link that was checked by
    /// name could still be dangling, or be swapped before the open.
    pub fn beneath(
        &self,
        absolute: &Path,
        links: bool,
    ) -> Result<(heartwood_sandbox::beneath::Beneath, PathBuf), PathRefused> {
        let base = self
            .outside
            .iter()
            .map(|d| d.path.as_path())
            .find(|d| absolute.starts_with(d))
            .unwrap_or(&self.root);
        let rest = absolute
            .strip_prefix(base)
            .map_err(|_| PathRefused::Unplaced(absolute.to_owned()))?;
        let opened = heartwood_sandbox::beneath::Beneath::open(base).map_err(|source| {
            PathRefused::CannotOpen {
                base: base.to_owned(),
                source,
            }
        })?;
        Ok((
            if links {
                opened
            } else {
                opened.without_links()
            },
            rest.to_owned(),
        ))
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path the model gave (project-relative, or absolute inside the project) to an
    /// absolute path and its project-relative spelling. The error is what the model is told.
    pub fn resolve(&self, given: &str) -> Result<(PathBuf, String), PathRefused> {
        if given.is_empty() || given.contains('\0') {
            return Err(PathRefused::Empty);
        }
        let candidate = Path::new(given);
        let relative = if candidate.is_absolute() {
            candidate
                .strip_prefix(&self.root)
                .map_err(|_| PathRefused::OutsideProject {
                    given: given.to_owned(),
                    root: self.root.clone(),
                })?
        } else {
            candidate
        };
        let mut clean = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => {
                    if RESERVED.iter().any(|r| part == *r) {
                        return Err(PathRefused::Reserved {
                            given: given.to_owned(),
                            part: part.to_string_lossy().into_owned(),
                        });
                    }
                    clean.push(part);
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    if !clean.pop() {
                        return Err(PathRefused::LeadsOutside(given.to_owned()));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(PathRefused::NotInside(given.to_owned()));
                }
            }
        }
        let absolute = self.root.join(&clean);
        // The deepest part that exists must really be inside the project: a symbolic link
        // anywhere on the way must not lead out of it or into reserved state.
        let mut existing = absolute.as_path();
        while !existing.exists() {
            existing = existing.parent().unwrap_or(&self.root);
        }
        let real = existing
            .canonicalize()
            .map_err(|source| PathRefused::Unresolvable {
                given: given.to_owned(),
                source,
            })?;
        let inside = real
            .strip_prefix(&self.root)
            .map_err(|_| PathRefused::ThroughLink(given.to_owned()))?;
        if inside
            .components()
            .any(|c| RESERVED.iter().any(|r| c.as_os_str() == *r))
        {
            return Err(PathRefused::PrivateState(given.to_owned()));
        }
        let display = clean.to_string_lossy().into_owned();
        Ok((
            absolute,
            if display.is_empty() {
                ".".to_owned()
            } else {
                display
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_project_and_out_of_private_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("data/raw")).expect("mkdir");
        let outside = tempfile::tempdir().expect("outside");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).expect("symlink");
        std::os::unix::fs::symlink(dir.path().join("data"), dir.path().join("alias"))
            .expect("symlink");
        let paths = ProjectPaths::new(dir.path()).expect("paths");

        assert_eq!(
            paths
                .resolve("data/raw/../x.csv")
                .map(|p| p.1)
                .map_err(|e| e.to_string()),
            Ok("data/x.csv".to_owned())
        );
        assert_eq!(
            paths
                .resolve("alias/new.txt")
                .map(|p| p.1)
                .map_err(|e| e.to_string()),
            Ok("alias/new.txt".to_owned())
        );
        let absolute = paths.root().join("data/x.csv");
        assert_eq!(
            paths
                .resolve(absolute.to_str().expect("utf-8"))
                .map(|p| p.1)
                .map_err(|e| e.to_string()),
            Ok("data/x.csv".to_owned())
        );
        for bad in [
            "../etc/passwd",
            "data/../../x",
            "/etc/passwd",
            ".heartwood/sessions",
            "a/.git/config",
            "escape/file",
            "",
            "a\0b",
        ] {
            assert!(paths.resolve(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_read_only_directory_is_read_by_its_absolute_path_and_never_written() {
        let project = tempfile::tempdir().expect("tempdir");
        let skill = project.path().join(".heartwood/skills/objects/ab/tidy");
        std::fs::create_dir_all(&skill).expect("mkdir");
        std::fs::write(skill.join("SKILL.md"), "x").expect("write");
        let paths = ProjectPaths::new(project.path())
            .expect("paths")
            .with_outside(&[OutsideDirectory::read_only(skill.clone(), "a skill")])
            .expect("read-only");
        let file = skill.canonicalize().expect("real").join("SKILL.md");
        let file = file.to_str().expect("utf-8");
        assert!(paths.resolve_for_reading(file).is_ok());
        assert!(
            paths
                .resolve_for_writing(file)
                .expect_err("read-only")
                .to_string()
                .contains("read-only")
        );
        let sibling = project.path().join(".heartwood/skills/state.json");
        std::fs::write(&sibling, "{}").expect("write");
        let sibling = sibling.canonicalize().expect("real");
        assert!(
            paths
                .resolve_for_reading(sibling.to_str().expect("utf-8"))
                .is_err(),
            "only the read-only directory itself is opened, not the rest of private state"
        );
        let escape = format!(
            "{}/../../state.json",
            skill.canonicalize().expect("real").display()
        );
        assert!(paths.resolve_for_reading(&escape).is_err());
    }

    #[test]
    fn a_writable_mount_takes_new_files_and_a_link_out_of_it_is_refused() {
        let project = tempfile::tempdir().expect("tempdir");
        let mount = tempfile::tempdir().expect("mount");
        let elsewhere = tempfile::tempdir().expect("elsewhere");
        std::os::unix::fs::symlink(elsewhere.path(), mount.path().join("out")).expect("link");
        let paths = ProjectPaths::new(project.path())
            .expect("paths")
            .with_outside(&[OutsideDirectory {
                path: mount.path().to_path_buf(),
                writable: true,
                what: "data mount".into(),
            }])
            .expect("outside");
        let real = mount.path().canonicalize().expect("real");
        let new_file = real.join("results/table.csv");
        let (path, _) = paths
            .resolve_for_writing(new_file.to_str().expect("utf-8"))
            .expect("a new file in a writable mount");
        assert_eq!(path, new_file);
        let through_link = real.join("out/x.csv");
        assert!(
            paths
                .resolve_for_writing(through_link.to_str().expect("utf-8"))
                .expect_err("escape")
                .to_string()
                .contains("leads out of data mount")
        );
    }
}
