//! Signed skill sources: TUF repositories (through `tough`) whose root metadata the deployment
//! owns.
//!
//! A source is trusted through the root metadata the deployment installed, never through what
//! the network says. [`refresh`] loads the repository's metadata from its URLs and verifies it
//! completely (signatures against each role's threshold, expiry, and versions against the last
//! ones seen, kept in the source's datastore, so a rolled-back repository is refused) before
//! any target is read; every target is then read through `tough`, which checks its length and
//! SHA-256 against the signed metadata. The verified metadata and targets are cached, and
//! [`revalidate`] verifies that cache again the same way (expiry included) before every agent
//! start, without a network.
//!
//! A skill is a target whose `custom` metadata carries `heartwood-skill`: its name and its tree
//! digest, which the unpacked bundle must match. The optional target `revocations.json` lists
//! revoked tree digests with reasons.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tough::{ExpirationEnforcement, IntoVec, RepositoryLoader, TargetName};
use url::Url;

use crate::tree::TreeDigest;
use crate::{SkillError, io_error};

/// The `custom` key a skill target carries.
pub const SKILL_CUSTOM_KEY: &str = "heartwood-skill";
/// The target that lists revocations.
pub const REVOCATIONS_TARGET: &str = "revocations.json";
/// The format tag of the revocation list.
pub const REVOCATIONS_FORMAT: &str = "heartwood-skill-revocations-v1";
/// The largest target read (a bundle holds at most a skill's 8 MiB, in base64).
const MAX_TARGET_BYTES: u64 = 16 << 20;

/// Where a signed source lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceUrls {
    /// The base URL of its metadata (`file://` or `https://`).
    pub metadata: Url,
    /// The base URL of its targets.
    pub targets: Url,
}

impl SourceUrls {
    /// Reads the two locations as given: `https://`, `http://` or `file://` URLs, or absolute
    /// directory paths. Each is a base a file name is joined to, so it ends in `/`.
    pub fn parse(metadata: &str, targets: &str) -> Result<SourceUrls, SkillError> {
        Ok(SourceUrls {
            metadata: base_url(metadata)?,
            targets: base_url(targets)?,
        })
    }
}

fn base_url(text: &str) -> Result<Url, SkillError> {
    let url = if Path::new(text).is_absolute() {
        directory_url(Path::new(text))?
    } else {
        let with_slash = if text.ends_with('/') {
            text.to_owned()
        } else {
            format!("{text}/")
        };
        Url::parse(&with_slash).map_err(|e| {
            SkillError::Invalid(format!(
                "{text:?} is not a URL or an absolute directory path: {e}"
            ))
        })?
    };
    match url.scheme() {
        "https" | "http" | "file" => Ok(url),
        other => Err(SkillError::Invalid(format!(
            "{text:?}: a source is reached over https, http or file, not {other}"
        ))),
    }
}

/// A skill target's `custom` metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillTarget {
    /// The skill's name.
    pub name: String,
    /// Its tree digest.
    pub tree: String,
}

/// A revocation list, as the `revocations.json` target holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revocations {
    /// [`REVOCATIONS_FORMAT`].
    pub format: String,
    /// The revoked trees.
    pub revoked: Vec<Revocation>,
}

/// One revoked tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revocation {
    /// The tree digest.
    pub tree: String,
    /// Why, as the source says it.
    pub reason: String,
}

/// What a verified source offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Each skill with its bundle's bytes (verified against the signed length and SHA-256).
    pub skills: Vec<OfferedBundle>,
    /// The revocations it signs.
    pub revoked: Vec<Revocation>,
    /// The version of its targets metadata.
    pub targets_version: u64,
    /// When the earliest of its metadata expires.
    pub expires: String,
}

/// One skill a verified source offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferedBundle {
    /// The skill's name.
    pub name: String,
    /// The tree digest the metadata pins.
    pub tree: TreeDigest,
    /// The bundle.
    pub bundle: Vec<u8>,
}

/// The files of one source under the store: `root.json` (the deployment's trusted root),
/// `datastore/` (the last versions seen), `cache/` (the last verified metadata and targets).
#[derive(Debug, Clone)]
pub struct SourceDir(PathBuf);

impl SourceDir {
    /// The source directory at `path`.
    pub fn new(path: PathBuf) -> Self {
        SourceDir(path)
    }

    /// The trusted root metadata.
    pub fn root(&self) -> PathBuf {
        self.0.join("root.json")
    }

    fn datastore(&self) -> PathBuf {
        self.0.join("datastore")
    }

    fn cache(&self) -> PathBuf {
        self.0.join("cache")
    }
}

/// Loads the repository at `urls` against the trusted root, verifies everything, reads every
/// target, and replaces the source's cache with what was verified.
pub async fn refresh(dir: &SourceDir, urls: &SourceUrls) -> Result<Listing, SkillError> {
    let listing_and_repo = load(dir, urls.metadata.clone(), urls.targets.clone()).await?;
    let (listing, repository) = listing_and_repo;
    // Cache into a fresh directory and swap it in, so a failed write never leaves a cache that
    // mixes two refreshes.
    let staging = dir.0.join("cache.new");
    let _ = tokio::fs::remove_dir_all(&staging).await;
    repository
        .cache(
            staging.join("metadata"),
            staging.join("targets"),
            None::<&[&str]>,
            true,
        )
        .await
        .map_err(|e| refused("cannot cache the verified repository", &e))?;
    let old = dir.0.join("cache.old");
    let _ = tokio::fs::remove_dir_all(&old).await;
    if tokio::fs::try_exists(dir.cache()).await.unwrap_or(false) {
        tokio::fs::rename(dir.cache(), &old)
            .await
            .map_err(|e| io_error(&dir.cache(), &e))?;
    }
    tokio::fs::rename(&staging, dir.cache())
        .await
        .map_err(|e| io_error(&dir.cache(), &e))?;
    let _ = tokio::fs::remove_dir_all(&old).await;
    Ok(listing)
}

/// Verifies the source's cache again, as [`refresh`] verified the repository: signatures,
/// thresholds, expiry and versions, then every target's length and SHA-256.
pub async fn revalidate(dir: &SourceDir) -> Result<Listing, SkillError> {
    let cache = dir.cache();
    if !tokio::fs::try_exists(&cache).await.unwrap_or(false) {
        return Err(SkillError::Refused(
            "the source has not been refreshed yet; run `heartwood skills refresh`".into(),
        ));
    }
    let metadata = directory_url(&cache.join("metadata"))?;
    let targets = directory_url(&cache.join("targets"))?;
    Ok(load(dir, metadata, targets).await?.0)
}

async fn load(
    dir: &SourceDir,
    metadata: Url,
    targets: Url,
) -> Result<(Listing, tough::Repository), SkillError> {
    let root = tokio::fs::read(dir.root())
        .await
        .map_err(|e| io_error(&dir.root(), &e))?;
    tokio::fs::create_dir_all(dir.datastore())
        .await
        .map_err(|e| io_error(&dir.datastore(), &e))?;
    let repository = RepositoryLoader::new(&root, metadata, targets)
        .datastore(dir.datastore())
        .expiration_enforcement(ExpirationEnforcement::Safe)
        .load()
        .await
        .map_err(|e| refused("its signed metadata does not verify", &e))?;
    let mut skills = Vec::new();
    let mut revoked = Vec::new();
    let targets_meta = &repository.targets().signed;
    // Collected first: the library's iterator is not `Send`, and the reads below await.
    let targets: Vec<_> = repository.all_targets().collect();
    for (name, target) in targets {
        if target.length > MAX_TARGET_BYTES {
            return Err(SkillError::Refused(format!(
                "the target {} is {} bytes; a skill bundle is at most {MAX_TARGET_BYTES}",
                name.raw(),
                target.length
            )));
        }
        let skill = match target.custom.get(SKILL_CUSTOM_KEY) {
            Some(value) => Some(
                serde_json::from_value::<SkillTarget>(value.clone()).map_err(|e| {
                    SkillError::Refused(format!(
                        "the target {} has malformed {SKILL_CUSTOM_KEY} metadata: {e}",
                        name.raw()
                    ))
                })?,
            ),
            None if name.raw() == REVOCATIONS_TARGET => None,
            // Other targets are not Heartwood's; they are neither read nor used.
            None => continue,
        };
        let bytes = read_target(&repository, name).await?;
        match skill {
            Some(skill) => skills.push(OfferedBundle {
                tree: crate::tree::parse_digest(&skill.tree).ok_or_else(|| {
                    SkillError::Refused(format!(
                        "the target {} pins {:?}, which is not a tree digest",
                        name.raw(),
                        skill.tree
                    ))
                })?,
                name: skill.name,
                bundle: bytes,
            }),
            None => {
                let list: Revocations = serde_json::from_slice(&bytes).map_err(|e| {
                    SkillError::Refused(format!("{REVOCATIONS_TARGET} is malformed: {e}"))
                })?;
                if list.format != REVOCATIONS_FORMAT {
                    return Err(SkillError::Refused(format!(
                        "{REVOCATIONS_TARGET} has format {:?}; this Heartwood reads \
                         {REVOCATIONS_FORMAT:?}",
                        list.format
                    )));
                }
                revoked = list.revoked;
            }
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    let expires = [
        repository.root().signed.expires,
        repository.timestamp().signed.expires,
        repository.snapshot().signed.expires,
        targets_meta.expires,
    ]
    .into_iter()
    .min()
    .map(|t| t.to_string())
    .unwrap_or_default();
    let listing = Listing {
        skills,
        revoked,
        targets_version: targets_meta.version.get(),
        expires,
    };
    Ok((listing, repository))
}

async fn read_target(
    repository: &tough::Repository,
    name: &TargetName,
) -> Result<Vec<u8>, SkillError> {
    let stream = repository
        .read_target(name)
        .await
        .map_err(|e| refused(&format!("cannot read the target {}", name.raw()), &e))?
        .ok_or_else(|| {
            SkillError::Refused(format!("the target {} is not in the metadata", name.raw()))
        })?;
    stream.into_vec().await.map_err(|e| {
        refused(
            &format!(
                "the target {} does not match its signed length and digest",
                name.raw()
            ),
            &e,
        )
    })
}

fn directory_url(path: &Path) -> Result<Url, SkillError> {
    Url::from_directory_path(path).map_err(|()| {
        SkillError::Refused(format!("{} is not an absolute directory", path.display()))
    })
}

/// A `tough` error with its chain of causes (the innermost says which rule failed); a cause
/// whose text the message already holds is not repeated.
fn refused(what: &str, error: &dyn std::error::Error) -> SkillError {
    let mut text = format!("{what}: {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(&format!(": {cause_text}"));
        }
        source = cause.source();
    }
    SkillError::Refused(text)
}
