//! The trusted catalog of recommended models: exact repository revisions, every file's size and
//! SHA-256, license, runtime settings and resource needs. It is local metadata (the
//! deployment's `$HEARTWOOD_MODEL_CATALOG`, else `/etc/heartwood/models.toml`), never fetched:
//! a model is `validated` only when its manifest is rehydrated from here.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ModelError;
use crate::manifest::{FORMAT, FileEntry, Manifest, ModelSource, Resources, RuntimeSettings};

/// The deployment-wide catalog file, when `$HEARTWOOD_MODEL_CATALOG` is unset.
pub const SYSTEM_CATALOG: &str = "/etc/heartwood/models.toml";

/// One recommended model.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    /// The catalog's id (also the default store name).
    pub id: String,
    /// What it is good for, in one line.
    #[serde(default)]
    pub summary: String,
    /// The Hugging Face repository.
    pub repository: String,
    /// The immutable commit (40 hexadecimal digits).
    pub revision: String,
    /// The license.
    pub license: String,
    /// Every file, with size and SHA-256.
    pub files: Vec<FileEntry>,
    /// The GGUF file to load.
    pub model_file: String,
    /// Context window.
    pub context_length: u32,
    /// The runtime's chat format, when the file's template should not be used.
    #[serde(default)]
    pub chat_format: Option<String>,
    /// Memory needed to run it.
    pub memory_bytes: u64,
}

impl CatalogEntry {
    /// The manifest of this entry, stored as `name`.
    pub fn manifest(&self, name: &str) -> Manifest {
        let mut files = self.files.clone();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Manifest {
            format: FORMAT,
            name: name.to_owned(),
            source: ModelSource::Catalog {
                id: self.id.clone(),
                repository: self.repository.clone(),
                revision: self.revision.clone(),
            },
            license: self.license.clone(),
            files,
            runtime: RuntimeSettings {
                model_file: self.model_file.clone(),
                context_length: self.context_length,
                chat_format: self.chat_format.clone(),
            },
            resources: Resources {
                memory_bytes: self.memory_bytes,
            },
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default)]
    model: Vec<CatalogEntry>,
}

/// The loaded catalog.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Its entries.
    pub entries: Vec<CatalogEntry>,
    /// The file they came from, if any.
    pub source: Option<PathBuf>,
}

impl Catalog {
    /// The deployment's catalog (`$HEARTWOOD_MODEL_CATALOG`, else [`SYSTEM_CATALOG`]); empty
    /// when neither exists. A file that exists and does not parse is an error, never skipped.
    pub fn load() -> Result<Catalog, ModelError> {
        let path = std::env::var_os("HEARTWOOD_MODEL_CATALOG")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(SYSTEM_CATALOG));
        if !path.exists() {
            return Ok(Catalog::default());
        }
        Catalog::from_file(&path)
    }

    /// Reads a catalog file.
    pub fn from_file(path: &Path) -> Result<Catalog, ModelError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::io("read the model catalog", path, e))?;
        let file: CatalogFile = toml::from_str(&text).map_err(|e| {
            ModelError::Invalid(format!(
                "the model catalog {} does not parse: {e}",
                path.display()
            ))
        })?;
        for entry in &file.model {
            let bad = |why: &str| {
                ModelError::Invalid(format!(
                    "the model catalog {}: entry {:?} {why}",
                    path.display(),
                    entry.id
                ))
            };
            if !is_commit(&entry.revision) {
                return Err(bad("has a revision that is not a 40-digit commit"));
            }
            entry
                .manifest(&crate::manifest::name_from(&entry.id))
                .validate()
                .map_err(|e| bad(&e.to_string()))?;
        }
        Ok(Catalog {
            entries: file.model,
            source: Some(path.to_path_buf()),
        })
    }

    /// The entry with `id`.
    pub fn entry(&self, id: &str) -> Option<&CatalogEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// The catalog's own manifest for a payload identical to `manifest`'s (same files, sizes and
    /// digests), keeping `manifest`'s name; `None` when no entry matches exactly.
    pub fn rehydrate(&self, manifest: &Manifest) -> Option<Manifest> {
        self.entries
            .iter()
            .map(|e| e.manifest(&manifest.name))
            .find(|m| {
                m.files == manifest.files && m.runtime.model_file == manifest.runtime.model_file
            })
    }
}

/// Is `text` a full 40-digit lowercase hexadecimal commit id?
pub fn is_commit(text: &str) -> bool {
    text.len() == 40
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
