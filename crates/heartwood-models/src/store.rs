//! The project's model store, `.heartwood/models/`: one directory per model (`model.json` and
//! `files/`), private to the user. Every way in writes into a staging directory under
//! `.staging/`, which is never listed or selected; [`ModelStore::publish`] verifies every byte
//! against the manifest and renames the directory into place. A retry finds the published
//! model and verifies it again instead of trusting it.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ModelError;
use crate::digest::verify_file;
use crate::error::IoContext;
use crate::manifest::{Manifest, check_name};
use crate::private::{private_dirs, write_synced};
use crate::transfer::Transfer;

const RECORD: &str = "model.json";
const STAGING: &str = ".staging";

/// How a model entered the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WayIn {
    /// Downloaded from a model hub (a catalog entry or an inspected repository).
    Download,
    /// Local files the researcher imported.
    Import,
    /// A transferred bundle.
    Bundle,
}

/// What the store keeps beside the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// How it came in.
    pub way_in: WayIn,
    /// True only when the manifest is an exact entry of the trusted local catalog (rehydrated
    /// from the catalog, not from what a transfer claimed). Everything else is shown
    /// `unvalidated`.
    pub validated: bool,
    /// The SHA-256 of the manifest whose license the researcher accepted.
    pub license_accepted: String,
    /// When it was published (RFC 3339).
    pub published_at: String,
}

impl Provenance {
    /// A provenance published now.
    pub fn now(way_in: WayIn, validated: bool, license_accepted: &str) -> Provenance {
        Provenance {
            way_in,
            validated,
            license_accepted: license_accepted.to_owned(),
            published_at: jiff::Timestamp::now().to_string(),
        }
    }
}

/// `model.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    manifest: Manifest,
    provenance: Provenance,
}

/// A published model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredModel {
    /// Its exact payload.
    pub manifest: Manifest,
    /// How it came in and whether it is validated.
    pub provenance: Provenance,
    /// Its directory.
    pub dir: PathBuf,
}

impl StoredModel {
    /// Where payload file `path` lives.
    pub fn file(&self, path: &str) -> PathBuf {
        self.dir.join("files").join(path)
    }

    /// The GGUF file the runtime loads.
    pub fn model_file(&self) -> PathBuf {
        self.file(&self.manifest.runtime.model_file)
    }

    /// Whether it is an exact entry of the trusted catalog.
    pub fn validation(&self) -> Validation {
        Validation::of(self.provenance.validated)
    }
}

/// Whether a model is an exact entry of the trusted catalog, as every interface shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Validation {
    /// An exact entry of the trusted catalog.
    Validated,
    /// Anything else (an import, a bundle, an entry that differs).
    Unvalidated,
}

impl Validation {
    /// `Validated` when `validated`.
    pub fn of(validated: bool) -> Self {
        if validated {
            Validation::Validated
        } else {
            Validation::Unvalidated
        }
    }
}

impl std::fmt::Display for Validation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Validation::Validated => "validated",
            Validation::Unvalidated => "unvalidated",
        })
    }
}

/// A directory being filled; dropped without publishing, it stays under `.staging/` where
/// nothing selects it (a resumable download picks it up again by its key).
pub struct Staging {
    dir: PathBuf,
}

impl Staging {
    /// Where payload file `path` is written; its parent directories are made.
    pub fn file(&self, path: &str) -> Result<PathBuf, ModelError> {
        crate::manifest::check_path(path)?;
        let target = self.dir.join("files").join(path);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).ctx("create", parent)?;
        }
        Ok(target)
    }

    /// The staging directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Deletes it.
    pub fn discard(self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The store of one project.
#[derive(Debug, Clone)]
pub struct ModelStore {
    root: PathBuf,
}

impl ModelStore {
    /// The store of the project at `project_root` (nothing is created until something is
    /// written).
    pub fn new(project_root: &Path) -> ModelStore {
        ModelStore {
            root: project_root.join(".heartwood").join("models"),
        }
    }

    /// `.heartwood/models`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every published model, by name. Staging directories and unreadable entries are not
    /// models.
    pub fn list(&self) -> Result<Vec<StoredModel>, ModelError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ModelError::io("list", &self.root, e)),
        };
        let mut models = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if check_name(&name).is_ok()
                && let Some(model) = self.get(&name)?
            {
                models.push(model);
            }
        }
        models.sort_by(|a, b| a.manifest.name.cmp(&b.manifest.name));
        Ok(models)
    }

    /// The published model `name`, if there is one.
    pub fn get(&self, name: &str) -> Result<Option<StoredModel>, ModelError> {
        check_name(name)?;
        let dir = self.root.join(name);
        let path = dir.join(RECORD);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ModelError::io("read", &path, e)),
        };
        let record: Record = serde_json::from_slice(&bytes).map_err(|e| {
            ModelError::Integrity(format!(
                "{} does not parse ({e}); remove the model and bring it in again",
                path.display()
            ))
        })?;
        record.manifest.validate()?;
        if record.manifest.name != name {
            return Err(ModelError::Integrity(format!(
                "{} names model {:?}, not {name:?}",
                path.display(),
                record.manifest.name
            )));
        }
        Ok(Some(StoredModel {
            manifest: record.manifest,
            provenance: record.provenance,
            dir,
        }))
    }

    /// A staging directory. With a `key`, the same directory each time (a download resumes in
    /// it); without one, a fresh one.
    pub fn stage(&self, key: Option<&str>) -> Result<Staging, ModelError> {
        let staging = self.root.join(STAGING);
        private_dirs(&staging)?;
        let name = match key {
            Some(key) => format!("keep-{}", crate::manifest::name_from(key)),
            None => format!("tmp-{:016x}", fastrand::u64(..)),
        };
        let dir = staging.join(name);
        fs::create_dir_all(dir.join("files")).ctx("create", &dir)?;
        Ok(Staging { dir })
    }

    /// Verifies every file of `staging` against `manifest` (no file missing, none extra, every
    /// size and SHA-256 equal), then renames it into place as model `manifest.name`.
    ///
    /// When that model is already published: the same manifest, verified again, is returned
    /// as it is; a damaged copy is replaced; a different model is refused.
    ///
    /// A staging directory that cannot be published is deleted: what it holds is wrong.
    pub fn publish(
        &self,
        staging: Staging,
        manifest: &Manifest,
        provenance: Provenance,
        transfer: &Transfer,
    ) -> Result<StoredModel, ModelError> {
        let dir = staging.dir.clone();
        let published = self.publish_checked(staging, manifest, provenance, transfer);
        if published.is_err() {
            let _ = fs::remove_dir_all(dir);
        }
        published
    }

    fn publish_checked(
        &self,
        staging: Staging,
        manifest: &Manifest,
        provenance: Provenance,
        transfer: &Transfer,
    ) -> Result<StoredModel, ModelError> {
        manifest.validate()?;
        transfer.set_total(manifest.payload_bytes());
        transfer.set_done(0);
        let files = staging.dir.join("files");
        check_no_extra_files(&files, manifest)?;
        for entry in &manifest.files {
            let path = files.join(&entry.path);
            verify_file(&path, entry, transfer)?;
            fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .ctx("sync", &path)?;
        }
        let record = Record {
            manifest: manifest.clone(),
            provenance,
        };
        let record_path = staging.dir.join(RECORD);
        let bytes = serde_json::to_vec_pretty(&record).expect("plain JSON");
        write_synced(&record_path, &bytes)?;

        let destination = self.root.join(&manifest.name);
        if let Some(existing) = self.get(&manifest.name).ok().flatten() {
            if existing.manifest.digest() == manifest.digest() {
                let check = Transfer::detached(crate::transfer::TransferKind::Verify, "");
                if self.verify(&existing, &check).is_ok() {
                    staging.discard();
                    return Ok(existing);
                }
            } else {
                staging.discard();
                return Err(ModelError::Invalid(format!(
                    "a different model named {} is already in the store; remove it first \
                     (heartwood model remove {}) or choose another --name",
                    manifest.name, manifest.name
                )));
            }
        }
        if destination.exists() {
            // Damaged or half-removed: moved aside first, so the rename below is atomic.
            self.delete_model_dir(&destination)?;
        }
        fs::rename(&staging.dir, &destination).ctx("publish", &destination)?;
        fs::File::open(&self.root)
            .and_then(|d| d.sync_all())
            .ctx("sync", &self.root)?;
        Ok(StoredModel {
            manifest: record.manifest,
            provenance: record.provenance,
            dir: destination,
        })
    }

    /// Re-reads every byte of `model` against its manifest.
    pub fn verify(&self, model: &StoredModel, transfer: &Transfer) -> Result<(), ModelError> {
        transfer.set_total(model.manifest.payload_bytes());
        check_no_extra_files(&model.dir.join("files"), &model.manifest)?;
        for entry in &model.manifest.files {
            verify_file(&model.file(&entry.path), entry, transfer)?;
        }
        Ok(())
    }

    /// Deletes model `name`; false when there was none.
    pub fn remove(&self, name: &str) -> Result<bool, ModelError> {
        check_name(name)?;
        let dir = self.root.join(name);
        if !dir.exists() {
            return Ok(false);
        }
        self.delete_model_dir(&dir)?;
        Ok(true)
    }
}

impl ModelStore {
    /// Renames a model's directory into `.staging/` (so it stops being a model at once, even
    /// if the deletion is interrupted) and deletes it there.
    fn delete_model_dir(&self, dir: &Path) -> Result<(), ModelError> {
        let staging = self.root.join(STAGING);
        private_dirs(&staging)?;
        let aside = staging.join(format!("old-{:016x}", fastrand::u64(..)));
        fs::rename(dir, &aside).ctx("move aside", dir)?;
        fs::remove_dir_all(&aside).ctx("remove", &aside)
    }
}

/// Refuses anything under `files` that the manifest does not list, and any link.
fn check_no_extra_files(files: &Path, manifest: &Manifest) -> Result<(), ModelError> {
    let mut pending = vec![(files.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        for entry in fs::read_dir(&dir).ctx("list", &dir)? {
            let entry = entry.ctx("list", &dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = format!("{prefix}{name}");
            let kind = entry.file_type().ctx("stat", &entry.path())?;
            if kind.is_dir() {
                pending.push((entry.path(), format!("{relative}/")));
            } else if !kind.is_file() || manifest.files.iter().all(|f| f.path != relative) {
                return Err(ModelError::Integrity(format!(
                    "{relative} is not a file of the manifest"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    use crate::digest::describe_file;
    use crate::manifest::{FORMAT, ModelSource, Resources, RuntimeSettings};
    use crate::transfer::TransferKind;

    fn manifest_for(store: &ModelStore, staging: &Staging, name: &str) -> Manifest {
        let _ = store;
        let t = Transfer::detached(TransferKind::Import, name);
        let entry =
            describe_file(&staging.dir.join("files/w.gguf"), "w.gguf", &t).expect("should succeed");
        Manifest {
            format: FORMAT,
            name: name.into(),
            source: ModelSource::Files,
            license: "mit".into(),
            files: vec![entry],
            runtime: RuntimeSettings {
                model_file: "w.gguf".into(),
                context_length: 256,
                chat_format: None,
            },
            resources: Resources::estimate(4),
        }
    }

    fn provenance() -> Provenance {
        Provenance {
            way_in: WayIn::Import,
            validated: false,
            license_accepted: String::new(),
            published_at: String::new(),
        }
    }

    #[test]
    fn staging_is_never_listed_and_publish_verifies_and_retries_reverify() {
        let project = tempfile::tempdir().expect("should succeed");
        let store = ModelStore::new(project.path());
        let t = Transfer::detached(TransferKind::Import, "w");
        let staging = store.stage(None).expect("should succeed");
        fs::write(staging.file("w.gguf").expect("should succeed"), b"wxyz")
            .expect("should succeed");
        assert!(
            store.list().expect("should succeed").is_empty(),
            "staging is not a model"
        );
        let manifest = manifest_for(&store, &staging, "w");

        // A byte changed after the manifest was made: refused, nothing published.
        fs::write(staging.dir.join("files/w.gguf"), b"wxyZ").expect("should succeed");
        let bad = store.stage(None).expect("should succeed");
        fs::rename(staging.dir.join("files"), bad.dir.join("files")).ok();
        let err = store
            .publish(bad, &manifest, provenance(), &t)
            .expect_err("should fail");
        assert!(err.to_string().contains("SHA-256"), "{err}");
        assert!(store.list().expect("should succeed").is_empty());

        // Published once, then a retry re-verifies the existing copy and keeps it.
        let good = store.stage(None).expect("should succeed");
        fs::write(good.file("w.gguf").expect("should succeed"), b"wxyz").expect("should succeed");
        let model = store
            .publish(good, &manifest, provenance(), &t)
            .expect("should succeed");
        assert_eq!(
            fs::read(model.model_file()).expect("should succeed"),
            b"wxyz"
        );
        let mode = fs::metadata(store.root())
            .expect("should succeed")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the store is private");

        // The published copy was damaged: a retry replaces it rather than trusting it.
        fs::write(model.model_file(), b"oops").expect("should succeed");
        let again = store.stage(None).expect("should succeed");
        fs::write(again.file("w.gguf").expect("should succeed"), b"wxyz").expect("should succeed");
        let model = store
            .publish(again, &manifest, provenance(), &t)
            .expect("should succeed");
        assert_eq!(
            fs::read(model.model_file()).expect("should succeed"),
            b"wxyz"
        );
        store.verify(&model, &t).expect("should succeed");

        // An extra file in the published directory fails verification.
        fs::write(model.dir.join("files/extra"), b"x").expect("should succeed");
        assert!(store.verify(&model, &t).is_err());
        assert!(store.remove("w").expect("should succeed"));
        assert!(store.list().expect("should succeed").is_empty());
    }
}
