//! The skill bundle: one file carrying a complete skill directory, as a signed source publishes
//! it (one TUF target per skill).
//!
//! A bundle is JSON: the format tag, the skill's name, and every entry (directories, and files
//! with their executable bit and base64 content). Unpacking never trusts the bundle: each path
//! must be a plain relative path of plain names, no entry may repeat, parents must come before
//! children, the limits hold, and the unpacked directory is read back through the one tree
//! verifier, whose digest must be the one the signed metadata pinned.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::SkillError;
use crate::skill::{Skill, validate};
use crate::tree::{EntryKind, Limits};

/// The format tag of this bundle version.
pub const BUNDLE_FORMAT: &str = "heartwood-skill-bundle-v1";

/// A skill bundle as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bundle {
    format: String,
    name: String,
    entries: Vec<BundleEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
enum BundleEntry {
    Directory {
        path: String,
    },
    File {
        path: String,
        executable: bool,
        base64: String,
    },
}

impl BundleEntry {
    fn path(&self) -> &str {
        match self {
            BundleEntry::Directory { path } | BundleEntry::File { path, .. } => path,
        }
    }
}

/// Packs the valid skill in `dir` into a bundle (entries in the tree's canonical order, so
/// the same skill always packs to the same bytes).
pub fn pack(dir: &Path, limits: &Limits) -> Result<Vec<u8>, SkillError> {
    let skill = validate(dir, limits)?;
    let mut entries = Vec::with_capacity(skill.tree.entries.len());
    for entry in &skill.tree.entries {
        entries.push(match entry.kind {
            EntryKind::Directory => BundleEntry::Directory {
                path: entry.path.clone(),
            },
            EntryKind::File { executable } => {
                let bytes = std::fs::read(dir.join(&entry.path)).map_err(|e| SkillError::Read {
                    path: entry.path.clone(),
                    detail: e.to_string(),
                })?;
                BundleEntry::File {
                    path: entry.path.clone(),
                    executable,
                    base64: base64::engine::general_purpose::STANDARD.encode(bytes),
                }
            }
        });
    }
    let bundle = Bundle {
        format: BUNDLE_FORMAT.to_owned(),
        name: skill.front.name,
        entries,
    };
    serde_json::to_vec(&bundle).map_err(|e| SkillError::Invalid(e.to_string()))
}

/// Unpacks `bytes` into a new directory `parent/<name>` (`parent` must exist and be empty of
/// that name) and validates the result; the caller compares its digest with the pinned one.
pub fn unpack(bytes: &[u8], parent: &Path, limits: &Limits) -> Result<Skill, SkillError> {
    let refused = |why: String| SkillError::Refused(format!("the skill bundle {why}"));
    let bundle: Bundle = serde_json::from_slice(bytes)
        .map_err(|e| refused(format!("is not a skill bundle: {e}")))?;
    if bundle.format != BUNDLE_FORMAT {
        return Err(refused(format!(
            "has format {:?}; this Heartwood reads {BUNDLE_FORMAT:?}",
            bundle.format
        )));
    }
    crate::skill::check_name(&bundle.name)
        .map_err(|why| refused(format!("names the skill {:?}, which {why}", bundle.name)))?;
    if bundle.entries.len() > limits.max_entries {
        return Err(refused(format!(
            "holds {} entries; a skill may hold {}",
            bundle.entries.len(),
            limits.max_entries
        )));
    }
    let root = parent.join(&bundle.name);
    std::fs::create_dir(&root).map_err(|e| write_error(&root, &e))?;
    let mut seen = BTreeSet::new();
    let mut directories = BTreeSet::new();
    for entry in &bundle.entries {
        let path = entry.path();
        let names: Vec<&str> = path.split('/').collect();
        if names
            .iter()
            .any(|n| n.is_empty() || *n == "." || *n == "..")
        {
            return Err(refused(format!(
                "holds the path {path:?}, which is not a plain relative path"
            )));
        }
        if !seen.insert(path.to_owned()) {
            return Err(refused(format!("holds {path:?} twice")));
        }
        if let Some((dir, _)) = path.rsplit_once('/')
            && !directories.contains(dir)
        {
            return Err(refused(format!(
                "holds {path:?} before (or without) its directory {dir:?}"
            )));
        }
        let target = root.join(path);
        match entry {
            BundleEntry::Directory { .. } => {
                std::fs::create_dir(&target).map_err(|e| write_error(&target, &e))?;
                directories.insert(path.to_owned());
            }
            BundleEntry::File {
                executable, base64, ..
            } => {
                // Base64 is 4 bytes for every 3: a file that decodes past the limit is refused
                // before it is decoded.
                if base64.len() as u64 / 4 * 3 > limits.max_file_bytes + 3 {
                    return Err(refused(format!(
                        "holds {path:?} larger than {} bytes",
                        limits.max_file_bytes
                    )));
                }
                let content = base64::engine::general_purpose::STANDARD
                    .decode(base64)
                    .map_err(|e| refused(format!("holds {path:?} with bad base64: {e}")))?;
                write_file(&target, &content, *executable)?;
            }
        }
    }
    validate(&root, limits)
}

/// Creates `path` (it must not exist) with `bytes`, synced, executable or not.
pub(crate) fn write_file(path: &Path, bytes: &[u8], executable: bool) -> Result<(), SkillError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| crate::io_error(path, &e))?;
    file.write_all(bytes)
        .and_then(|()| {
            file.set_permissions(std::fs::Permissions::from_mode(if executable {
                0o755
            } else {
                0o644
            }))
        })
        .and_then(|()| file.sync_all())
        .map_err(|e| crate::io_error(path, &e))
}

fn write_error(path: &Path, e: &std::io::Error) -> SkillError {
    SkillError::Read {
        path: path.display().to_string(),
        detail: format!("cannot write: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn skill(dir: &Path) -> std::path::PathBuf {
        let root = dir.join("tidy-data");
        std::fs::create_dir_all(root.join("scripts")).expect("test setup");
        std::fs::write(
            root.join("SKILL.md"),
            "---\nname: tidy-data\ndescription: Tidy a table so each row is one observation.\n---\nSteps.\n",
        )
        .expect("test setup");
        let script = root.join("scripts/check.sh");
        std::fs::write(&script, "#!/bin/sh\necho ok\n").expect("test setup");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
            .expect("test setup");
        root
    }

    #[test]
    fn a_packed_skill_unpacks_to_the_same_tree_and_packs_to_the_same_bytes() {
        let dir = tempfile::tempdir().expect("test setup");
        let source = skill(dir.path());
        let limits = Limits::default();
        let bytes = pack(&source, &limits).expect("test setup");
        assert_eq!(bytes, pack(&source, &limits).expect("test setup"));
        let out = tempfile::tempdir().expect("test setup");
        let unpacked = unpack(&bytes, out.path(), &limits).expect("test setup");
        let original = validate(&source, &limits).expect("test setup");
        assert_eq!(unpacked.tree.digest, original.tree.digest);
        assert_eq!(unpacked.tree.listing(), original.tree.listing());
    }

    fn hostile(entries: serde_json::Value) -> String {
        let bundle = serde_json::json!({
            "format": BUNDLE_FORMAT,
            "name": "tidy-data",
            "entries": entries,
        });
        let out = tempfile::tempdir().expect("test setup");
        let error = unpack(
            bundle.to_string().as_bytes(),
            out.path(),
            &Limits::default(),
        )
        .expect_err("a hostile bundle is refused");
        error.to_string()
    }

    #[test]
    fn hostile_bundles_are_refused_with_the_reason() {
        let md = base64::engine::general_purpose::STANDARD
            .encode("---\nname: tidy-data\ndescription: d\n---\nx\n");
        let file = |path: &str| serde_json::json!({"kind": "file", "path": path, "executable": false, "base64": md});
        assert!(hostile(serde_json::json!([file("../escape")])).contains("plain relative"));
        assert!(hostile(serde_json::json!([file("/etc/passwd")])).contains("plain relative"));
        assert!(hostile(serde_json::json!([file("SKILL.md"), file("SKILL.md")])).contains("twice"));
        assert!(hostile(serde_json::json!([file("a/b")])).contains("without) its directory"));
        assert!(
            hostile(serde_json::json!([{"kind": "link", "path": "x", "to": "/"}]))
                .contains("not a skill bundle")
        );
    }
}
