//! The manifest: the exact payload of a model (paths, sizes, SHA-256) with its source, license,
//! runtime settings and resource needs. Its identity is the SHA-256 of its canonical JSON, which
//! is what a license decision is bound to and what an export writes first.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ModelError;

/// The manifest format this build writes and reads.
pub const FORMAT: u32 = 1;

/// Longest model name, file path and file count a manifest may hold: generous for real models,
/// small enough that a hostile manifest cannot make the store do unbounded work.
const MAX_NAME: usize = 64;
const MAX_PATH: usize = 255;
const MAX_FILES: usize = 256;

/// One model's exact payload and how to run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// The name the project's store and the `local` route use (`[a-z0-9._-]`, at most 64).
    pub name: String,
    /// Where the payload came from.
    pub source: ModelSource,
    /// The license as its source states it (an SPDX identifier where there is one), or
    /// `unknown`.
    pub license: String,
    /// Every file of the payload, sorted by path.
    pub files: Vec<FileEntry>,
    /// How the runtime loads it.
    pub runtime: RuntimeSettings,
    /// What running it needs.
    pub resources: Resources,
}

/// Where a payload came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelSource {
    /// An entry of the trusted catalog (`id`), pinned to a repository's exact revision.
    Catalog {
        /// The catalog's id.
        id: String,
        /// The Hugging Face repository.
        repository: String,
        /// The immutable commit.
        revision: String,
    },
    /// A Hugging Face repository, resolved to an immutable commit before anything was written.
    Hub {
        /// The repository (`owner/name`).
        repository: String,
        /// The commit the revision resolved to.
        revision: String,
    },
    /// Files the researcher imported from this machine.
    Files,
}

impl ModelSource {
    /// One line for listings.
    pub fn describe(&self) -> String {
        match self {
            ModelSource::Catalog { id, revision, .. } => {
                format!("catalog {id} @ {}", short(revision))
            }
            ModelSource::Hub {
                repository,
                revision,
            } => format!("{repository} @ {}", short(revision)),
            ModelSource::Files => "imported files".to_owned(),
        }
    }
}

fn short(revision: &str) -> &str {
    revision.get(..12).unwrap_or(revision)
}

/// One payload file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Relative path with `/` separators.
    pub path: String,
    /// Exact size in bytes.
    pub size: u64,
    /// Lowercase hexadecimal SHA-256 of the contents.
    pub sha256: String,
}

/// How the runtime loads the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSettings {
    /// The GGUF file the runtime loads (one of `files`).
    pub model_file: String,
    /// Context window in tokens.
    pub context_length: u32,
    /// The runtime's chat format, when the file's own template should not be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_format: Option<String>,
}

/// What running the model needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// Memory (RAM, or GPU memory where the runtime offloads) in bytes.
    pub memory_bytes: u64,
}

impl Resources {
    /// The need of a payload that declares none: its weights, a quarter more for the context
    /// cache and the runtime, and 256 MiB for the process itself.
    pub fn estimate(payload_bytes: u64) -> Resources {
        Resources {
            memory_bytes: payload_bytes
                .saturating_add(payload_bytes / 4)
                .saturating_add(256 << 20),
        }
    }
}

impl Manifest {
    /// The canonical JSON bytes: what is hashed, exported and stored.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        heartwood_events::to_canonical_bytes(self).expect("a manifest is plain JSON")
    }

    /// The manifest's identity: SHA-256 of its canonical bytes, lowercase hex.
    pub fn digest(&self) -> String {
        hex(&Sha256::digest(self.canonical_bytes()))
    }

    /// Total payload size.
    pub fn payload_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The manifest of a payload that declares no memory need: `files` sorted, the model file
    /// its first `.gguf` file, the need estimated from its size, checked.
    pub fn of_payload(
        name: &str,
        source: ModelSource,
        license: &str,
        mut files: Vec<FileEntry>,
        context_length: u32,
        chat_format: Option<String>,
    ) -> Result<Manifest, ModelError> {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let model_file = files
            .iter()
            .find(|f| f.path.ends_with(".gguf"))
            .map(|f| f.path.clone())
            .ok_or_else(|| ModelError::Invalid("one of the files must be a .gguf model".into()))?;
        let payload = files.iter().map(|f| f.size).sum();
        let manifest = Manifest {
            format: FORMAT,
            name: name.to_owned(),
            source,
            license: license.to_owned(),
            files,
            runtime: RuntimeSettings {
                model_file,
                context_length,
                chat_format,
            },
            resources: Resources::estimate(payload),
        };
        manifest.validate()?;
        Ok(manifest)
    }

    /// Parses and checks a manifest from bytes of unknown origin.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, ModelError> {
        let manifest: Manifest = serde_json::from_slice(bytes)
            .map_err(|e| ModelError::Refused(format!("the manifest does not parse: {e}")))?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// Checks everything a manifest promises about itself: format, a safe name, safe unique
    /// sorted paths, well-formed digests, a model file among the files.
    pub fn validate(&self) -> Result<(), ModelError> {
        let refuse = |m: String| Err(ModelError::Refused(m));
        if self.format != FORMAT {
            return refuse(format!(
                "manifest format {} is not {FORMAT}, the one this Heartwood reads",
                self.format
            ));
        }
        check_name(&self.name)?;
        if self.files.is_empty() || self.files.len() > MAX_FILES {
            return refuse(format!(
                "a manifest lists 1 to {MAX_FILES} files, not {}",
                self.files.len()
            ));
        }
        for pair in self.files.windows(2) {
            if pair[0].path >= pair[1].path {
                return refuse(format!(
                    "manifest paths must be unique and sorted ({:?} before {:?})",
                    pair[0].path, pair[1].path
                ));
            }
        }
        for file in &self.files {
            check_path(&file.path)?;
            if !is_sha256(&file.sha256) {
                return refuse(format!("{:?} has no valid SHA-256", file.path));
            }
        }
        if !self.files.iter().any(|f| f.path == self.runtime.model_file) {
            return refuse(format!(
                "the model file {:?} is not among the manifest's files",
                self.runtime.model_file
            ));
        }
        if self.runtime.context_length == 0 {
            return refuse("the context length must be positive".to_owned());
        }
        Ok(())
    }
}

/// Checks a store name: `[a-z0-9._-]`, 1 to 64 characters, not starting with `.`.
pub fn check_name(name: &str) -> Result<(), ModelError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ModelError::Invalid(format!(
            "{name:?} is not a model name; use 1 to {MAX_NAME} of a-z, 0-9, '.', '_' and '-', \
             not starting with '.'"
        )))
    }
}

/// A name derived from a repository or file name (`Org/Tiny-Model-GGUF` → `tiny-model-gguf`).
pub fn name_from(text: &str) -> String {
    let last = text.rsplit('/').next().unwrap_or(text);
    let last = last.strip_suffix(".gguf").unwrap_or(last);
    let mut name: String = last
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '.' | '_' | '-') => c,
            _ => '-',
        })
        .collect();
    name = name.trim_start_matches('.').to_owned();
    name.truncate(MAX_NAME);
    if name.is_empty() {
        "model".to_owned()
    } else {
        name
    }
}

/// Checks a payload path: relative, `/`-separated, no empty, `.` or `..` component, no
/// backslash, colon or control character, at most 255 bytes.
pub fn check_path(path: &str) -> Result<(), ModelError> {
    let refuse = |why: &str| Err(ModelError::Refused(format!("unsafe path {path:?}: {why}")));
    if path.is_empty() || path.len() > MAX_PATH {
        return refuse("empty or too long");
    }
    if path.starts_with('/') {
        return refuse("absolute");
    }
    if path
        .chars()
        .any(|c| c.is_control() || c == '\\' || c == ':')
    {
        return refuse("backslash, colon or control character");
    }
    for part in path.split('/') {
        match part {
            "" => return refuse("empty component"),
            "." | ".." => return refuse("'.' or '..' component"),
            _ => {}
        }
    }
    Ok(())
}

/// Is `text` 64 lowercase hexadecimal digits?
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Manifest {
        Manifest {
            format: FORMAT,
            name: "tiny".into(),
            source: ModelSource::Files,
            license: "apache-2.0".into(),
            files: vec![FileEntry {
                path: "tiny.gguf".into(),
                size: 3,
                sha256: hex(&Sha256::digest(b"abc")),
            }],
            runtime: RuntimeSettings {
                model_file: "tiny.gguf".into(),
                context_length: 512,
                chat_format: None,
            },
            resources: Resources::estimate(3),
        }
    }

    #[test]
    fn the_digest_follows_every_field() {
        let base = sample();
        let mut other = base.clone();
        other.license = "mit".into();
        assert_ne!(base.digest(), other.digest());
        assert_eq!(base.digest(), sample().digest());
        assert_eq!(
            Manifest::parse(&base.canonical_bytes()).expect("should succeed"),
            base
        );
    }

    #[test]
    fn unsafe_paths_and_unsorted_files_are_refused() {
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../b",
            "a//b",
            "a\\b",
            "c:x",
            "./a",
            "",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?} accepted");
        }
        check_path("sub/model.gguf").expect("should succeed");
        let mut m = sample();
        m.files.push(m.files[0].clone());
        assert!(m.validate().is_err(), "a duplicate path was accepted");
        let mut m = sample();
        m.runtime.model_file = "other.gguf".into();
        assert!(m.validate().is_err());
    }

    #[test]
    fn names_are_checked_and_derived() {
        assert_eq!(name_from("Org/Tiny-Model_GGUF"), "tiny-model_gguf");
        assert_eq!(name_from("weights Q4.gguf"), "weights-q4");
        check_name(&name_from("..hidden")).expect("should succeed");
        assert!(check_name(".staging").is_err());
        assert!(check_name("A").is_err());
    }
}
