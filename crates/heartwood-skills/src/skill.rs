//! A skill, validated completely: its tree (see [`crate::tree`]) and its `SKILL.md`.
//!
//! `SKILL.md` opens with YAML front matter between `---` lines, then the instructions. The
//! front matter follows the Agent Skills format: `name` (1–64 characters of lowercase letters,
//! digits and single hyphens, neither first nor last, and the same as the directory's name),
//! `description` (1–1024 characters: what the skill does and when to use it, the only part the
//! agent sees before it reads the skill), and optionally `license`, `compatibility`,
//! `allowed-tools` and `metadata` (a map of strings). Any other key is refused rather than
//! ignored, so a typo is not silently dropped.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::SkillError;
use crate::tree::{Limits, Tree};

/// Longest `name`.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest `description`.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `SKILL.md`.
pub const MAX_SKILL_MD_BYTES: usize = 256 * 1024;

/// The front matter of `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontMatter {
    /// The skill's name.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Its license, as a name or a file in the skill.
    #[serde(default)]
    pub license: Option<String>,
    /// What it needs of the environment.
    #[serde(default)]
    pub compatibility: Option<String>,
    /// Tools it is meant to use (advisory; Heartwood's review still applies to every action).
    #[serde(default, rename = "allowed-tools")]
    pub allowed_tools: Option<String>,
    /// Anything else its author records.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// A complete, valid skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its front matter.
    pub front: FrontMatter,
    /// Its instructions (`SKILL.md` after the front matter).
    pub body: String,
    /// Its tree and digest.
    pub tree: Tree,
}

/// Reads and validates the skill in directory `dir` within `limits`.
pub fn validate(dir: &Path, limits: &Limits) -> Result<Skill, SkillError> {
    let tree = crate::tree::read(dir, limits)?;
    if !tree.entries.iter().any(|e| e.path == "SKILL.md") {
        return Err(SkillError::Invalid(format!(
            "{} has no SKILL.md (a skill is a directory holding SKILL.md)",
            dir.display()
        )));
    }
    let text = std::fs::read(dir.join("SKILL.md")).map_err(|e| SkillError::Read {
        path: "SKILL.md".into(),
        detail: e.to_string(),
    })?;
    let text = String::from_utf8(text)
        .map_err(|_| SkillError::Invalid("SKILL.md is not UTF-8 text".into()))?;
    let (front, body) = parse(&text)?;
    let directory = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if front.name != directory {
        return Err(SkillError::Invalid(format!(
            "SKILL.md names the skill {:?}, but its directory is {directory:?}; they must be \
             the same",
            front.name
        )));
    }
    Ok(Skill { front, body, tree })
}

/// Splits `SKILL.md` into its validated front matter and its instructions.
pub fn parse(text: &str) -> Result<(FrontMatter, String), SkillError> {
    let invalid = |why: String| SkillError::Invalid(format!("SKILL.md: {why}"));
    if text.len() > MAX_SKILL_MD_BYTES {
        return Err(invalid(format!(
            "{} bytes; at most {MAX_SKILL_MD_BYTES}",
            text.len()
        )));
    }
    let text = text.replace("\r\n", "\n");
    let rest = text.strip_prefix("---\n").ok_or_else(|| {
        invalid("it must open with front matter: a line `---`, the YAML, a line `---`".into())
    })?;
    let (yaml, body) = match rest.find("\n---\n") {
        Some(end) => (&rest[..end], &rest[end + 5..]),
        None => match rest.strip_suffix("\n---") {
            Some(yaml) => (yaml, ""),
            None => return Err(invalid("the front matter has no closing `---` line".into())),
        },
    };
    let front: FrontMatter =
        serde_norway::from_str(yaml).map_err(|e| invalid(format!("front matter: {e}")))?;
    check_name(&front.name).map_err(|why| invalid(format!("name {:?}: {why}", front.name)))?;
    let description = front.description.trim();
    if description.is_empty() {
        return Err(invalid(
            "description is empty; say what the skill does and when to use it".into(),
        ));
    }
    if front.description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(invalid(format!(
            "description is longer than {MAX_DESCRIPTION_CHARS} characters"
        )));
    }
    if body.trim().is_empty() {
        return Err(invalid("no instructions follow the front matter".into()));
    }
    Ok((front, body.to_owned()))
}

/// Which Agent Skills rule a name breaks (said after the name: "… {name:?} {rule}").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameRule {
    /// Empty, or too long.
    #[error("must be 1 to {MAX_NAME_CHARS} characters")]
    Length,
    /// A character other than a lowercase letter, a digit or a hyphen.
    #[error("may hold only lowercase letters, digits and hyphens")]
    Characters,
    /// A hyphen at either end, or two in a row.
    #[error("may not start or end with a hyphen, or hold two in a row")]
    Hyphens,
}

/// The Agent Skills rules for a name.
pub fn check_name(name: &str) -> Result<(), NameRule> {
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(NameRule::Length);
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(NameRule::Characters);
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(NameRule::Hyphens);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill_md(front: &str) -> String {
        format!("---\n{front}\n---\n# Steps\n\n1. Read the data dictionary.\n")
    }

    #[test]
    fn a_valid_skill_is_read_with_its_front_matter_body_and_digest() {
        let root = tempfile::tempdir().expect("root");
        let dir = root.path().join("data-dictionary");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(
            dir.join("SKILL.md"),
            skill_md("name: data-dictionary\ndescription: Read a data dictionary before analysis.\nmetadata:\n  version: \"1\""),
        )
        .expect("write");
        let skill = validate(&dir, &Limits::default()).expect("valid");
        assert_eq!(skill.front.name, "data-dictionary");
        assert_eq!(
            skill.front.metadata.get("version").map(String::as_str),
            Some("1")
        );
        assert!(skill.body.contains("Read the data dictionary"));
        assert_eq!(skill.tree.entries.len(), 1);
    }

    #[test]
    fn front_matter_that_breaks_the_format_is_refused_with_the_reason() {
        let cases = [
            (
                "no front matter",
                "# just text\n".to_owned(),
                "must open with front matter",
            ),
            (
                "unclosed",
                "---\nname: a\ndescription: b\n# body\n".to_owned(),
                "closing",
            ),
            (
                "upper case",
                skill_md("name: Data\ndescription: d"),
                "lowercase",
            ),
            (
                "double hyphen",
                skill_md("name: a--b\ndescription: d"),
                "two in a row",
            ),
            (
                "too long",
                skill_md(&format!("name: {}\ndescription: d", "a".repeat(65))),
                "1 to 64",
            ),
            (
                "empty description",
                skill_md("name: a\ndescription: \"\""),
                "empty",
            ),
            (
                "unknown key",
                skill_md("name: a\ndescription: d\nauthor: me"),
                "unknown field",
            ),
            (
                "no body",
                "---\nname: a\ndescription: d\n---\n\n".to_owned(),
                "no instructions",
            ),
            ("not a map", skill_md("- a\n- b"), "front matter"),
        ];
        for (case, text, expected) in cases {
            let error = parse(&text).expect_err(case).to_string();
            assert!(error.contains(expected), "{case}: {error}");
        }
    }

    #[test]
    fn the_name_must_be_the_directorys() {
        let root = tempfile::tempdir().expect("root");
        let dir = root.path().join("other-name");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(
            dir.join("SKILL.md"),
            skill_md("name: splits\ndescription: d"),
        )
        .expect("write");
        let error = validate(&dir, &Limits::default()).expect_err("mismatch");
        assert!(error.to_string().contains("must be the same"), "{error}");
        std::fs::remove_file(dir.join("SKILL.md")).expect("rm");
        let error = validate(&dir, &Limits::default()).expect_err("no SKILL.md");
        assert!(error.to_string().contains("has no SKILL.md"), "{error}");
    }
}
