//! The trusted model catalog as every interface lists it, and a download (of one of its entries
//! or of a hub repository inspected at a revision) started from an interface that cannot wait
//! for it (the page, the notebook): the license
//! decision is checked before anything starts, the bytes move on a thread of their own, and its
//! progress is the gateway's one transfer record, which every process (and a reloaded page)
//! reads back.

use heartwood_models::catalog::Catalog;
use heartwood_models::planner::{Machine, check_fits};
use serde::{Deserialize, Serialize};

use crate::models::{ModelDesk, Review, Transfer, TransferKind, TransferLine, human_bytes};
use crate::{ProjectContext, ProjectError};

/// One catalog entry as interfaces list it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CatalogLine {
    /// The entry's id (what a download names).
    pub id: String,
    /// What it is good for, in one line.
    pub summary: String,
    /// Its license.
    pub license: String,
    /// The repository and the commit it is pinned to.
    pub source: String,
    /// Bytes to download.
    pub download_bytes: u64,
    /// Memory it needs to run.
    pub memory_bytes: u64,
    /// Why it cannot run on this machine, when the resource planner refuses it.
    pub does_not_fit: Option<String>,
    /// Is a model of that name stored already?
    pub stored: bool,
    /// The entry in one line, as every interface shows it.
    pub label: String,
}

/// The deployment's catalog: its entries, and where it came from (or how to install one).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(rename = "ModelCatalogView")]
pub struct CatalogView {
    /// The catalog file, when there is one.
    pub source: Option<String>,
    /// Its entries, in the file's order.
    pub entries: Vec<CatalogLine>,
    /// What to do when there are none.
    pub note: Option<String>,
}

/// What a download fetches: a trusted catalog entry, or a hub repository inspected at a
/// revision (resolved to its commit when reviewed; unvalidated unless the catalog knows it).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum DownloadSource {
    /// A catalog entry.
    Catalog {
        /// The entry's id.
        catalog: String,
    },
    /// A repository on the hub.
    #[serde(rename_all = "snake_case")]
    Repository {
        /// `owner/name`.
        repository: String,
        /// A branch, tag or commit.
        revision: String,
        /// The files to fetch (all of its one GGUF file when empty).
        #[serde(default)]
        files: Vec<String>,
        /// The store name (from the repository's when absent).
        #[serde(default)]
        name: Option<String>,
        /// The context length to serve it with.
        #[serde(default)]
        context_length: Option<u32>,
    },
}

impl DownloadSource {
    /// The review of what this names: the exact manifest a license decision binds to.
    pub fn review(&self, desk: &ModelDesk) -> Result<Review, ProjectError> {
        match self {
            DownloadSource::Catalog { catalog } => desk.review_catalog(catalog, None),
            DownloadSource::Repository {
                repository,
                revision,
                files,
                name,
                context_length,
            } => desk.review_hub(
                repository,
                revision,
                files,
                name.as_deref(),
                *context_length,
            ),
        }
    }
}

/// A download started in the background.
#[derive(Clone, Serialize, schemars::JsonSchema)]
pub struct StartedDownload {
    /// The model's store name.
    pub name: String,
    /// The transfer's id in the project's transfer record (`LocalModelsView.transfers`).
    pub transfer: u64,
    /// The transfer's name in the project, by which any interface cancels it.
    pub transfer_handle: Option<String>,
    /// The manifest whose license was accepted.
    pub manifest_sha256: String,
    #[serde(skip)]
    handle: Transfer,
}

impl StartedDownload {
    /// Where the download stands now, in the line every interface shows.
    pub fn progress(&self) -> TransferLine {
        TransferLine::of(self.handle.view())
    }

    /// Asks the download to stop; it ends cancelled, with nothing published.
    pub fn cancel(&self) {
        self.handle.cancel();
    }
}

/// The catalog as `project`'s interfaces list it. Reads only.
pub fn catalog(project: &ProjectContext) -> Result<CatalogView, ProjectError> {
    let catalog = Catalog::load()?;
    let stored: Vec<String> = ModelDesk::new(project)
        .list()?
        .into_iter()
        .map(|m| m.name)
        .collect();
    let machine = Machine::read();
    let entries: Vec<CatalogLine> = catalog
        .entries
        .iter()
        .map(|e| {
            let download_bytes = e.files.iter().map(|f| f.size).sum();
            let does_not_fit = check_fits(&e.id, e.memory_bytes, machine)
                .err()
                .map(|e| e.to_string());
            let stored = stored.contains(&heartwood_models::manifest::name_from(&e.id));
            let label = format!(
                "{}{} · {} · {} to download, {} to run{}",
                e.id,
                if e.summary.is_empty() {
                    String::new()
                } else {
                    format!(": {}", e.summary)
                },
                e.license,
                human_bytes(download_bytes),
                human_bytes(e.memory_bytes),
                if stored {
                    " · stored"
                } else if does_not_fit.is_some() {
                    " · does not fit this machine"
                } else {
                    ""
                }
            );
            CatalogLine {
                id: e.id.clone(),
                summary: e.summary.clone(),
                license: e.license.clone(),
                source: format!("{} at {}", e.repository, e.revision),
                download_bytes,
                memory_bytes: e.memory_bytes,
                does_not_fit,
                stored,
                label,
            }
        })
        .collect();
    let note = entries.is_empty().then(|| {
        "no trusted model catalog is installed: your deployment names one with \
         HEARTWOOD_MODEL_CATALOG (or /etc/heartwood/models.toml); `heartwood model download \
         OWNER/NAME` fetches any repository, unvalidated"
            .to_owned()
    });
    Ok(CatalogView {
        source: catalog.source.map(|p| p.display().to_string()),
        entries,
        note,
    })
}

/// Starts downloading catalog entry `id` once `accepted` is the SHA-256 of the manifest its
/// review shows; refuses (starting nothing) otherwise. Returns as soon as the transfer is
/// recorded; the bytes move on their own thread and the transfer ends done or failed.
pub fn start_download(
    project: &ProjectContext,
    id: &str,
    accepted: &str,
) -> Result<StartedDownload, ProjectError> {
    let source = DownloadSource::Catalog {
        catalog: id.to_owned(),
    };
    start_download_of(project, &source, accepted)
}

/// Starts downloading what `source` names once `accepted` is the SHA-256 of the manifest its
/// review shows now (a repository's revision is resolved again: a branch that moved since the
/// review refuses, since its manifest differs); refuses, starting nothing, otherwise.
pub fn start_download_of(
    project: &ProjectContext,
    source: &DownloadSource,
    accepted: &str,
) -> Result<StartedDownload, ProjectError> {
    let desk = ModelDesk::new(project);
    let review: Review = source.review(&desk)?;
    review.decided(Some(accepted))?;
    let transfer = desk
        .transfers()
        .begin(TransferKind::Download, &review.manifest.name);
    let started = StartedDownload {
        name: review.manifest.name.clone(),
        transfer: transfer.view().id,
        transfer_handle: transfer.view().handle,
        manifest_sha256: review.manifest_sha256.clone(),
        handle: transfer.clone(),
    };
    let moving = transfer.clone();
    std::thread::Builder::new()
        .name("model-download".into())
        .spawn(move || {
            // Its outcome is the transfer's end state, which every interface reads.
            let _ = desk.download_as(&review, &moving);
        })
        .map_err(|e| {
            let failed: Result<(), _> = Err(heartwood_models::ModelError::Invalid(format!(
                "could not start the download: {e}"
            )));
            transfer.finish(&failed, |()| String::new());
            ProjectError::Io {
                doing: "could not start the download".into(),
                source: e,
            }
        })?;
    Ok(started)
}
