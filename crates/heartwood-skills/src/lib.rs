//! Agent Skills for Heartwood (layer 2): what a skill is, checked completely, and the one
//! identity an approval binds to.
//!
//! A skill is a directory holding `SKILL.md` (YAML front matter with `name` and `description`,
//! then the instructions) and any resources. [`tree`] reads a complete skill directory into a
//! canonical, content-addressed listing and its BLAKE3 [`tree::TreeDigest`], refusing links and
//! special files and bounding size, count and depth; [`skill`] validates the front matter, the
//! name and the body. [`bundle`] carries a skill as one file (as a signed source publishes
//! it); [`signed`] verifies TUF sources through `tough`; [`bundled`] holds the curated skills
//! compiled in; [`store`] keeps verified trees by digest and the researcher's decisions under
//! `.heartwood/skills/`; [`catalog`] revalidates all of it and answers which skills reach the
//! agent. The gateway is the only caller.

pub mod blocking;
pub mod bundle;
pub mod bundled;
pub mod catalog;
pub mod prompt;
pub mod signed;
pub mod skill;
pub mod store;
pub mod tree;

/// Why a skill cannot be used; the text names the file and what to change.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {detail}")]
    Read {
        /// The path, relative to the skill when it is inside one.
        path: String,
        /// What the system said.
        detail: String,
    },
    /// The directory holds something a skill may not (a link, a special file, a bad name) or
    /// more than the limits allow.
    #[error("{0}")]
    Refused(String),
    /// `SKILL.md` is missing or not as the Agent Skills format requires.
    #[error("{0}")]
    Invalid(String),
}

/// A file or directory at `path` that could not be read (or written) as a [`SkillError`].
pub(crate) fn io_error(path: &std::path::Path, e: &std::io::Error) -> SkillError {
    SkillError::Read {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}
