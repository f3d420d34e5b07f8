//! Project paths: the only form of path the workspace accepts.
//!
//! A [`ProjectPath`] is relative, normalized and free of anything that could name a place
//! outside the project or inside Heartwood's or Git's private directories. Parsing is the only
//! constructor, so every operation that takes one can trust it.

use std::fmt;

use serde::Serialize;

/// Directories excluded at every depth: Heartwood's state and Git's.
pub const EXCLUDED: [&str; 2] = [".heartwood", ".git"];

/// The longest accepted path, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// The most components an accepted path may have.
pub const MAX_COMPONENTS: usize = 64;

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Empty, `.` or only slashes.
    #[error("the path is empty; give a path relative to the project folder, like data/cohort.csv")]
    Empty,
    /// Starts with `/`.
    #[error("{0:?} is absolute; give a path relative to the project folder")]
    Absolute(String),
    /// Holds `..`, `.` or an empty component.
    #[error(
        "{0:?} is not normalized (no '..', '.' or '//'); name the file by its plain path inside the project"
    )]
    NotNormalized(String),
    /// Holds NUL, a backslash or another control character.
    #[error("{0:?} contains {1:?}, which project paths may not contain")]
    BadCharacter(String, char),
    /// Names `.heartwood` or `.git`.
    #[error("{0:?} is inside {1}/, which the workspace never shows")]
    Excluded(String, &'static str),
    /// A file was asked for with a trailing `/`, which names a directory.
    #[error("{0:?} ends with '/', which names a directory; name the file without it")]
    DirectorySlash(String),
    /// Longer than [`MAX_PATH_BYTES`] or deeper than [`MAX_COMPONENTS`].
    #[error(
        "the path is too long (at most {MAX_PATH_BYTES} bytes and {MAX_COMPONENTS} components)"
    )]
    TooLong,
}

/// A normalized, project-relative path (`data/cohort.csv`), or the project itself (empty).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct ProjectPath(String);

impl ProjectPath {
    /// The project folder itself.
    pub fn root() -> Self {
        ProjectPath(String::new())
    }

    /// Checks `text` as a path to something in the project.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        let shown = || text.chars().take(200).collect::<String>();
        if text.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong);
        }
        if let Some(bad) = text.chars().find(|c| *c == '\\' || c.is_control()) {
            return Err(PathError::BadCharacter(shown(), bad));
        }
        if text.starts_with('/') {
            return Err(PathError::Absolute(shown()));
        }
        // One trailing slash is how people write directories; accept it.
        let trimmed = text.strip_suffix('/').unwrap_or(text);
        if trimmed.is_empty() || trimmed == "." {
            return Err(PathError::Empty);
        }
        let mut count = 0;
        for component in trimmed.split('/') {
            count += 1;
            if component.is_empty() || component == "." || component == ".." {
                return Err(PathError::NotNormalized(shown()));
            }
            if let Some(excluded) = EXCLUDED.iter().find(|e| **e == component) {
                return Err(PathError::Excluded(shown(), excluded));
            }
        }
        if count > MAX_COMPONENTS {
            return Err(PathError::TooLong);
        }
        Ok(ProjectPath(trimmed.to_owned()))
    }

    /// Checks `text` as a path to a file: as [`ProjectPath::parse`], without the trailing
    /// slash a directory may be written with.
    pub fn parse_file(text: &str) -> Result<Self, PathError> {
        if text.ends_with('/') && !text.trim_end_matches('/').is_empty() {
            return Err(PathError::DirectorySlash(text.chars().take(200).collect()));
        }
        Self::parse(text)
    }

    /// The path as text (empty for the project itself).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components, outermost first.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|c| !c.is_empty())
    }

    /// The path of `name` inside this directory path. `name` must be one plain component.
    pub(crate) fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            ProjectPath(name.to_owned())
        } else {
            ProjectPath(format!("{}/{name}", self.0))
        }
    }

    /// Whether this is the project itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for ProjectPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str(".")
        } else {
            f.write_str(&self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_are_accepted_and_kept_as_written() {
        for ok in [
            "a",
            "data/cohort.csv",
            "reports/",
            "a b/ç.txt",
            "..a",
            "a..",
            "․․/x",
        ] {
            let parsed = ProjectPath::parse(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
            assert_eq!(parsed.as_str(), ok.strip_suffix('/').unwrap_or(ok));
        }
    }
}
