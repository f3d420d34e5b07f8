//! Downloads from a Hugging Face hub over its HTTP API: a revision (branch, tag or commit) is
//! resolved to its immutable commit before anything is written, every file is fetched from that
//! commit, resumably (HTTP ranges into a staging directory kept between attempts), and the
//! result is published only when every SHA-256 matches the hub's metadata.
//!
//! The endpoint is `HF_ENDPOINT` (the variable Hugging Face's own tools read), so a mirror or a
//! test server can stand in for `https://huggingface.co`; `HF_TOKEN`, when set, is sent to it.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::Client;
use reqwest::header::{AUTHORIZATION, CONTENT_RANGE, RANGE};
use serde::Deserialize;

use crate::ModelError;
use crate::catalog::is_commit;
use crate::error::IoContext;
use crate::manifest::{FileEntry, Manifest, ModelSource};
use crate::store::{ModelStore, Provenance, StoredModel};
use crate::transfer::Transfer;

/// The public hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// A context window for GGUF repositories whose metadata states none.
const DEFAULT_CONTEXT: u32 = 4_096;

/// A hub client.
pub struct Hub {
    endpoint: String,
    token: Option<String>,
    client: Client,
}

/// One file as the hub describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubFile {
    /// Path in the repository.
    pub path: String,
    /// Size, when the hub says it.
    pub size: Option<u64>,
    /// SHA-256, which the hub gives for files kept in LFS (every weights file).
    pub sha256: Option<String>,
}

/// A repository revision resolved to its commit.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// `owner/name`.
    pub repository: String,
    /// The immutable commit the revision named when it was resolved.
    pub commit: String,
    /// The license the repository declares, or `unknown`.
    pub license: String,
    /// Its files.
    pub files: Vec<HubFile>,
    /// The GGUF context length the hub reports, if any.
    pub context_length: Option<u32>,
}

#[derive(Deserialize)]
struct ApiModel {
    sha: String,
    #[serde(default)]
    siblings: Vec<ApiSibling>,
    #[serde(default, rename = "cardData")]
    card_data: Option<ApiCard>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    gguf: Option<ApiGguf>,
}

#[derive(Deserialize)]
struct ApiSibling {
    rfilename: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    lfs: Option<ApiLfs>,
}

#[derive(Deserialize)]
struct ApiLfs {
    sha256: String,
    size: u64,
}

#[derive(Deserialize)]
struct ApiCard {
    #[serde(default)]
    license: Option<String>,
}

#[derive(Deserialize)]
struct ApiGguf {
    #[serde(default)]
    context_length: Option<u32>,
}

impl Hub {
    /// The hub at `HF_ENDPOINT` (else the public one), with `HF_TOKEN` when set.
    pub fn from_env() -> Result<Hub, ModelError> {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        let token = std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty());
        Hub::at(&endpoint, token)
    }

    /// The hub at `endpoint`.
    pub fn at(endpoint: &str, token: Option<String>) -> Result<Hub, ModelError> {
        let client = Client::builder()
            .connect_timeout(Duration::from_secs(30))
            // The blocking client applies this to the response's headers and to each read of
            // its body, not to the whole transfer: a large file takes as long as it takes, a
            // stalled one is noticed.
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| ModelError::Hub(e.to_string()))?;
        Ok(Hub {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            token,
            client,
        })
    }

    fn get(&self, url: &str) -> reqwest::blocking::RequestBuilder {
        let request = self.client.get(url);
        match &self.token {
            Some(token) => request.header(AUTHORIZATION, format!("Bearer {token}")),
            None => request,
        }
    }

    /// Resolves `revision` of `repository` to its commit and lists its files.
    pub fn resolve(&self, repository: &str, revision: &str) -> Result<Resolved, ModelError> {
        check_repository(repository)?;
        if revision.is_empty()
            || !revision
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
        {
            return Err(ModelError::Invalid(format!(
                "{revision:?} is not a revision name"
            )));
        }
        let url = format!(
            "{}/api/models/{repository}/revision/{}?blobs=true",
            self.endpoint,
            revision.replace('/', "%2F")
        );
        let response = self
            .get(&url)
            .send()
            .map_err(|e| ModelError::Hub(format!("cannot reach {}: {e}", self.endpoint)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(ModelError::Hub(match status {
                StatusCode::NOT_FOUND => format!(
                    "{repository} has no revision {revision:?} (or is private: set HF_TOKEN)"
                ),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => format!(
                    "{repository} needs access: accept its terms on the hub and set HF_TOKEN"
                ),
                _ => format!("{url} answered {status}"),
            }));
        }
        let api: ApiModel = response.json().map_err(|e| {
            ModelError::Hub(format!("{url} sent metadata that does not parse: {e}"))
        })?;
        if !is_commit(&api.sha) {
            return Err(ModelError::Hub(format!(
                "{repository}@{revision} did not resolve to a commit ({:?})",
                api.sha
            )));
        }
        let license = api
            .card_data
            .and_then(|c| c.license)
            .or_else(|| {
                api.tags
                    .iter()
                    .find_map(|t| t.strip_prefix("license:").map(str::to_owned))
            })
            .unwrap_or_else(|| "unknown".to_owned());
        let files = api
            .siblings
            .into_iter()
            .map(|s| HubFile {
                size: s.lfs.as_ref().map(|l| l.size).or(s.size),
                sha256: s.lfs.map(|l| l.sha256.to_ascii_lowercase()),
                path: s.rfilename,
            })
            .collect();
        Ok(Resolved {
            repository: repository.to_owned(),
            commit: api.sha,
            license,
            files,
            context_length: api.gguf.and_then(|g| g.context_length),
        })
    }

    /// Fetches `manifest`'s files (a [`ModelSource::Hub`] or [`ModelSource::Catalog`] one)
    /// from its pinned commit and publishes them. An interrupted download resumes where it
    /// stopped when run again; a cancelled one leaves nothing behind; a file whose SHA-256
    /// differs is deleted and refused.
    pub fn download(
        &self,
        store: &ModelStore,
        manifest: &Manifest,
        provenance: Provenance,
        transfer: &Transfer,
    ) -> Result<StoredModel, ModelError> {
        let (repository, commit) = match &manifest.source {
            ModelSource::Hub {
                repository,
                revision,
            }
            | ModelSource::Catalog {
                repository,
                revision,
                ..
            } => (repository, revision),
            ModelSource::Files => {
                return Err(ModelError::Invalid(
                    "imported files have no hub to download from".into(),
                ));
            }
        };
        if !is_commit(commit) {
            return Err(ModelError::Invalid(format!(
                "{commit:?} is not a commit; downloads are pinned to one"
            )));
        }
        let staging = store.stage(Some(&format!("{repository}-{commit}")))?;
        transfer.set_total(manifest.payload_bytes());
        let fetched = (|| {
            let mut done = 0;
            for file in &manifest.files {
                let url = format!(
                    "{}/{repository}/resolve/{commit}/{}",
                    self.endpoint, file.path
                );
                self.fetch(&url, &staging, file, &mut done, transfer)?;
            }
            Ok(())
        })();
        match fetched {
            Ok(()) => {}
            Err(ModelError::Cancelled) => {
                staging.discard();
                return Err(ModelError::Cancelled);
            }
            Err(e) => return Err(e),
        }
        // A staging directory that fails verification is deleted by `publish`.
        match store.publish(staging, manifest, provenance, transfer) {
            Err(ModelError::Integrity(why)) => Err(ModelError::Integrity(format!(
                "{why}; the download was corrupted or the hub's copy changed, so it was \
                     deleted and nothing was published"
            ))),
            other => other,
        }
    }

    fn fetch(
        &self,
        url: &str,
        staging: &crate::store::Staging,
        file: &FileEntry,
        done: &mut u64,
        transfer: &Transfer,
    ) -> Result<(), ModelError> {
        let target = staging.file(&file.path)?;
        let have = std::fs::metadata(&target).map_or(0, |m| m.len());
        if have == file.size {
            *done += have;
            transfer.set_done(*done);
            return Ok(());
        }
        let mut request = self.get(url);
        let resume = have > 0 && have < file.size;
        if resume {
            request = request.header(RANGE, format!("bytes={have}-"));
        }
        let mut response = request.send().map_err(|e| {
            ModelError::Hub(format!(
                "cannot fetch {}: {e}; run the same command again to retry (what was \
                     downloaded is kept)",
                file.path
            ))
        })?;
        let status = response.status();
        let start = if status == StatusCode::PARTIAL_CONTENT && resume {
            let range = response
                .headers()
                .get(CONTENT_RANGE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if !range.starts_with(&format!("bytes {have}-")) {
                return Err(ModelError::Hub(format!(
                    "{} answered range {range:?} to a request from byte {have}",
                    file.path
                )));
            }
            have
        } else if status.is_success() {
            if resume {
                transfer.warn(format!(
                    "{}: the hub ignored the resume request; downloading it again from the start",
                    file.path
                ));
            }
            0
        } else {
            return Err(ModelError::Hub(format!("{url} answered {status}")));
        };
        let mut out = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(start == 0)
            .append(start > 0)
            .open(&target)
            .ctx("open", &target)?;
        *done += start;
        transfer.set_done(*done);
        let mut buffer = vec![0u8; 256 << 10];
        let mut written = start;
        loop {
            if transfer.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
            let n = match response.read(&mut buffer) {
                Ok(n) => n,
                Err(e) => {
                    out.sync_all().ctx("sync", &target)?;
                    return Err(ModelError::Hub(format!(
                        "the download of {} stopped after {written} of {} bytes ({e}); run the \
                         same command again to resume it",
                        file.path, file.size
                    )));
                }
            };
            if n == 0 {
                break;
            }
            written += n as u64;
            if written > file.size {
                drop(out);
                let _ = std::fs::remove_file(&target);
                return Err(ModelError::Integrity(format!(
                    "the hub sent more than the {} bytes of {}; it was deleted",
                    file.size, file.path
                )));
            }
            out.write_all(&buffer[..n]).ctx("write", &target)?;
            *done += n as u64;
            transfer.advance(n as u64);
        }
        out.sync_all().ctx("sync", &target)?;
        if written != file.size {
            return Err(ModelError::Hub(format!(
                "the download of {} ended after {written} of {} bytes; run the same command \
                 again to resume it",
                file.path, file.size
            )));
        }
        Ok(())
    }
}

impl Resolved {
    /// The manifest of `files` (all `.gguf` files when empty, which must then be one) stored
    /// as `name`; refused when a file is missing or the hub gives no SHA-256 for it.
    pub fn manifest(
        &self,
        name: &str,
        files: &[String],
        context_length: Option<u32>,
    ) -> Result<Manifest, ModelError> {
        let chosen: Vec<&HubFile> = if files.is_empty() {
            let ggufs: Vec<&HubFile> = self
                .files
                .iter()
                .filter(|f| f.path.ends_with(".gguf"))
                .collect();
            if ggufs.len() != 1 {
                let names: Vec<&str> = ggufs.iter().map(|f| f.path.as_str()).collect();
                return Err(ModelError::Invalid(format!(
                    "{} has {} GGUF files{}; choose one with --file",
                    self.repository,
                    ggufs.len(),
                    if names.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", names.join(", "))
                    }
                )));
            }
            ggufs
        } else {
            files
                .iter()
                .map(|wanted| {
                    self.files
                        .iter()
                        .find(|f| &f.path == wanted)
                        .ok_or_else(|| {
                            ModelError::Invalid(format!(
                                "{} has no file {wanted:?}",
                                self.repository
                            ))
                        })
                })
                .collect::<Result<_, _>>()?
        };
        let mut entries = Vec::new();
        for file in &chosen {
            let (Some(size), Some(sha256)) = (file.size, file.sha256.clone()) else {
                return Err(ModelError::Invalid(format!(
                    "the hub gives no SHA-256 for {} (it is not in LFS); Heartwood downloads only \
                     files it can verify",
                    file.path
                )));
            };
            entries.push(FileEntry {
                path: file.path.clone(),
                size,
                sha256,
            });
        }
        let context = context_length
            .or(self.context_length.map(|c| c.min(32_768)))
            .unwrap_or(DEFAULT_CONTEXT);
        let source = ModelSource::Hub {
            repository: self.repository.clone(),
            revision: self.commit.clone(),
        };
        Manifest::of_payload(name, source, &self.license, entries, context, None)
    }
}

/// Checks `owner/name`.
fn check_repository(repository: &str) -> Result<(), ModelError> {
    let ok = repository.split('/').count() == 2
        && repository.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
    if ok {
        Ok(())
    } else {
        Err(ModelError::Invalid(format!(
            "{repository:?} is not a repository; use owner/name"
        )))
    }
}
