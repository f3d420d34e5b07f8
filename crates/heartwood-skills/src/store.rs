//! The project's skill store under `.heartwood/skills/`: verified trees by digest, and the
//! researcher's decisions.
//!
//! - `objects/<hex>/<name>/`: each verified tree, named by its digest. A tree is assembled in
//!   `staging/`, read back through the tree verifier, and published by one rename, so a
//!   directory under `objects/` is always complete; one already there is verified again, never
//!   trusted, and replaced when it does not match its name.
//! - `state.json`: approvals (each bound to a tree digest), activations, registered local
//!   directories, signed sources and the revocations seen; replaced atomically under
//!   `lock`, so two processes never lose each other's change.
//! - `sources/<name>/`: each signed source's trusted root, datastore and verified cache.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::signed::{SourceDir, SourceUrls};
use crate::skill::{Skill, validate};
use crate::tree::{EntryKind, Limits, TreeDigest};
use crate::{SkillError, io_error};

/// The state format version this build writes.
const STATE_SCHEMA: u32 = 1;

/// The researcher's decisions and the sources they added.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// The format version.
    #[serde(default)]
    pub schema: u32,
    /// Approvals, each of one exact tree.
    #[serde(default)]
    pub approvals: Vec<Approval>,
    /// Active skills, each at the tree that was approved.
    #[serde(default)]
    pub active: Vec<Activation>,
    /// Local skill directories, absolute.
    #[serde(default)]
    pub local: Vec<String>,
    /// Signed sources.
    #[serde(default)]
    pub signed: Vec<SignedSource>,
    /// Every revocation a verified source has signed; kept when the source later drops it, so
    /// a revoked tree stays revoked.
    #[serde(default)]
    pub revoked: Vec<Revoked>,
}

/// An approval of one exact tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// The skill's name.
    pub name: String,
    /// Its source (the catalog's `SourceId`, as text).
    pub source: String,
    /// The tree the researcher reviewed.
    pub digest: String,
    /// When (RFC 3339).
    pub approved_at: String,
}

/// An active skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Activation {
    /// The skill's name.
    pub name: String,
    /// Its source.
    pub source: String,
    /// The approved tree that is active.
    pub digest: String,
}

/// A signed source the deployment added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedSource {
    /// Its name (a directory under `sources/`).
    pub name: String,
    /// Where it is served.
    pub urls: SourceUrls,
}

/// A revoked tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revoked {
    /// The tree digest.
    pub tree: String,
    /// The source that signed the revocation.
    pub source: String,
    /// Its reason.
    pub reason: String,
}

/// The store of one project.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The store at `root` (`<project>/.heartwood/skills`); nothing is created until written.
    pub fn new(root: PathBuf) -> Self {
        Store { root }
    }

    /// Its directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the verified tree `digest` of skill `name` lives.
    pub fn object_dir(&self, digest: &TreeDigest, name: &str) -> PathBuf {
        self.root.join("objects").join(digest.hex()).join(name)
    }

    /// The files of signed source `name`.
    pub fn source_dir(&self, name: &str) -> SourceDir {
        SourceDir::new(self.root.join("sources").join(name))
    }

    /// Reads the state (empty when none was written).
    pub fn state(&self) -> Result<State, SkillError> {
        let path = self.root.join("state.json");
        match std::fs::read(&path) {
            Ok(bytes) => {
                let state: State = serde_json::from_slice(&bytes).map_err(|e| {
                    SkillError::Invalid(format!(
                        "{} is not a skills state this Heartwood reads: {e}",
                        path.display()
                    ))
                })?;
                if state.schema > STATE_SCHEMA {
                    return Err(SkillError::Invalid(format!(
                        "{} was written by a newer Heartwood (format {})",
                        path.display(),
                        state.schema
                    )));
                }
                Ok(state)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
            Err(e) => Err(io_error(&path, &e)),
        }
    }

    /// Applies `change` to the state under the store's lock and writes it atomically (only when
    /// `change` succeeds and changed something).
    pub fn update<T>(
        &self,
        change: impl FnOnce(&mut State) -> Result<T, SkillError>,
    ) -> Result<T, SkillError> {
        std::fs::create_dir_all(&self.root).map_err(|e| io_error(&self.root, &e))?;
        let lock_path = self.root.join("lock");
        let lock_file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io_error(&lock_path, &e))?;
        let mut lock = fd_lock::RwLock::new(lock_file);
        let _guard = lock.write().map_err(|e| io_error(&lock_path, &e))?;
        let before = self.state()?;
        let mut state = before.clone();
        let out = change(&mut state)?;
        if state != before {
            state.schema = STATE_SCHEMA;
            let mut text = serde_json::to_vec_pretty(&state)
                .map_err(|e| SkillError::Invalid(e.to_string()))?;
            text.push(b'\n');
            write_atomic(&self.root.join("state.json"), &text)?;
        }
        Ok(out)
    }

    /// Copies the skill directory `dir` into the store and verifies the copy is the tree that
    /// was read (a directory changed while it was copied is refused).
    pub fn publish_directory(&self, dir: &Path, limits: &Limits) -> Result<Skill, SkillError> {
        let original = validate(dir, limits)?;
        let expected = original.tree.digest.clone();
        self.publish(
            |staging| {
                let root = staging.join(&original.front.name);
                std::fs::create_dir(&root).map_err(|e| io_error(&root, &e))?;
                for entry in &original.tree.entries {
                    let to = root.join(&entry.path);
                    match entry.kind {
                        EntryKind::Directory => {
                            std::fs::create_dir(&to).map_err(|e| io_error(&to, &e))?;
                        }
                        EntryKind::File { executable } => {
                            let bytes = std::fs::read(dir.join(&entry.path))
                                .map_err(|e| io_error(&dir.join(&entry.path), &e))?;
                            crate::bundle::write_file(&to, &bytes, executable)?;
                        }
                    }
                }
                validate(&root, limits)
            },
            Some(&expected),
            limits,
        )
    }

    /// Unpacks a bundle into the store, requiring the tree `expected` (the digest its signed
    /// metadata pins).
    pub fn publish_bundle(
        &self,
        bundle: &[u8],
        expected: &TreeDigest,
        limits: &Limits,
    ) -> Result<Skill, SkillError> {
        self.publish(
            |staging| crate::bundle::unpack(bundle, staging, limits),
            Some(expected),
            limits,
        )
    }

    /// Writes a skill from `(path, bytes)` files (the bundled skills compiled into Heartwood).
    pub fn publish_files(
        &self,
        name: &str,
        files: &[(&str, &[u8])],
        limits: &Limits,
    ) -> Result<Skill, SkillError> {
        self.publish(
            |staging| {
                let root = staging.join(name);
                std::fs::create_dir(&root).map_err(|e| io_error(&root, &e))?;
                for (path, bytes) in files {
                    crate::bundle::write_file(&root.join(path), bytes, false)?;
                }
                validate(&root, limits)
            },
            None,
            limits,
        )
    }

    /// Reads the stored tree `digest` of `name` again and checks it is that tree.
    pub fn verify(
        &self,
        digest: &TreeDigest,
        name: &str,
        limits: &Limits,
    ) -> Result<Skill, SkillError> {
        let dir = self.object_dir(digest, name);
        let skill = validate(&dir, limits)?;
        if &skill.tree.digest != digest {
            return Err(SkillError::Refused(format!(
                "the stored copy of {name} no longer matches {digest} (it reads as {}); it was \
                 changed on disk",
                skill.tree.digest
            )));
        }
        Ok(skill)
    }

    fn new_staging(&self) -> Result<PathBuf, SkillError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let staging = self.root.join("staging").join(format!(
            "{}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&staging).map_err(|e| io_error(&staging, &e))?;
        Ok(staging)
    }

    /// Assembles a tree in a fresh staging directory with `stage`, checks it is `expected` (when
    /// a digest is pinned), and publishes it under `objects/` by one rename (or verifies the
    /// copy already there).
    fn publish(
        &self,
        stage: impl FnOnce(&Path) -> Result<Skill, SkillError>,
        expected: Option<&TreeDigest>,
        limits: &Limits,
    ) -> Result<Skill, SkillError> {
        let staging = self.new_staging()?;
        let result = self.publish_staged(&staging, stage, expected, limits);
        let _ = std::fs::remove_dir_all(&staging);
        result
    }

    fn publish_staged(
        &self,
        staging: &Path,
        stage: impl FnOnce(&Path) -> Result<Skill, SkillError>,
        expected: Option<&TreeDigest>,
        limits: &Limits,
    ) -> Result<Skill, SkillError> {
        let skill = stage(staging)?;
        let expected = expected.unwrap_or(&skill.tree.digest).clone();
        if skill.tree.digest != expected {
            return Err(SkillError::Refused(format!(
                "{} reads as {}, not the {expected} it was expected to be",
                skill.front.name, skill.tree.digest
            )));
        }
        let name = skill.front.name.clone();
        let objects = self.root.join("objects");
        std::fs::create_dir_all(&objects).map_err(|e| io_error(&objects, &e))?;
        let dest = objects.join(expected.hex());
        if dest.exists() {
            if self.verify(&expected, &name, limits).is_ok() {
                return Ok(skill);
            }
            // A damaged copy is moved into staging (removed with it) and replaced.
            std::fs::rename(&dest, staging.join("damaged")).map_err(|e| io_error(&dest, &e))?;
        }
        let built = staging.join("object");
        std::fs::create_dir(&built).map_err(|e| io_error(&built, &e))?;
        std::fs::rename(staging.join(&name), built.join(&name))
            .map_err(|e| io_error(&built, &e))?;
        if let Err(e) = std::fs::rename(&built, &dest) {
            // Another process published the same tree first: its copy is used once verified.
            if dest.exists() && self.verify(&expected, &name, limits).is_ok() {
                return Ok(skill);
            }
            return Err(io_error(&dest, &e));
        }
        sync_dir(&objects)?;
        Ok(skill)
    }
}

/// Replaces `path` with `bytes`: written to a temporary file, synced, renamed, and the
/// directory synced.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SkillError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("state"),
        std::process::id()
    ));
    let mut file = std::fs::File::create(&tmp).map_err(|e| io_error(&tmp, &e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(&tmp, &e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_error(path, &e))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), SkillError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(dir, &e))
}
