//! Local models through the gateway: the one door from the interfaces to `heartwood-models`.
//! Every way in (catalog, inspected hub repository, local files, bundle) first produces a
//! [`Review`]: the exact manifest, its SHA-256 and the resource planner's verdict. Nothing is
//! written until the researcher accepts that manifest's license by its SHA-256; a different
//! manifest (a moved branch, a changed file) needs a new decision.
//!
//! The `local` route names a stored model and a loopback port; the runtime launcher serves it
//! there, and the startup plan says `compute_required` until it answers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use heartwood_models::bundle;
use heartwood_models::catalog::Catalog;
use heartwood_models::digest::copy_hashing;
use heartwood_models::hub::Hub;
use heartwood_models::manifest::{Manifest, ModelSource};
use heartwood_models::planner::{Machine, check_fits};
use heartwood_models::runtime::{self, RuntimeInstall};
pub use heartwood_models::store::Validation;
use heartwood_models::store::{ModelStore, Provenance, WayIn};
use heartwood_models::{FileEntry, ModelError};
use serde::Serialize;

pub use heartwood_models::planner::human_bytes;
pub use heartwood_models::runtime::RuntimeState;
pub use heartwood_models::transfer::{
    Transfer, TransferKind, TransferState, TransferView, Transfers,
};

use crate::config::{ProjectConfig, RouteCategory, RouteConfig};
use crate::{ProjectContext, ProjectError};

/// How long a starting runtime may take to load its model and answer.
const READY_WITHIN: Duration = Duration::from_secs(180);

/// A stored model as every interface lists it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModelListing {
    /// Store name (what the `local` route names).
    pub name: String,
    /// Where it came from, in one line.
    pub source: String,
    /// How it came in (`download`, `import`, `bundle`).
    pub way_in: WayIn,
    /// Whether it is an exact entry of the trusted catalog.
    pub validation: Validation,
    /// Its license.
    pub license: String,
    /// Payload size.
    pub payload_bytes: u64,
    /// Memory it needs to run.
    pub memory_bytes: u64,
    /// Its manifest's SHA-256.
    pub manifest_sha256: String,
    /// Is it the project's `local` route?
    pub selected: bool,
    /// Is the runtime serving it?
    pub running: bool,
    /// The one line every interface shows for it.
    pub label: String,
}

/// The project's local models as every interface shows them: the models, the runtime, and
/// the transfers of every process (newest first).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LocalModelsView {
    /// Every stored model.
    pub models: Vec<ModelListing>,
    /// What the runtime serves, when it runs.
    pub runtime: Option<String>,
    /// Recent transfers.
    pub transfers: Vec<TransferLine>,
}

/// A transfer with the line and fraction every interface shows.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TransferLine {
    /// Its figures and state.
    #[serde(flatten)]
    pub view: TransferView,
    /// What moves: "download tiny".
    pub subject: String,
    /// "download tiny: 12.0 MiB of 40.0 MiB (30%), 5.1 MiB/s, 5 s left", "... done", ...
    pub label: String,
    /// Is it still moving bytes?
    pub running: bool,
    /// Share done, 0 to 1, when the total is known.
    pub fraction: Option<f64>,
}

/// How many finished transfers interfaces show.
const SHOWN_TRANSFERS: usize = 5;

impl TransferLine {
    /// The line for `view`.
    pub fn of(view: TransferView) -> TransferLine {
        let kind = match view.kind {
            TransferKind::Download => "download",
            TransferKind::Import => "import",
            TransferKind::Export => "export",
            TransferKind::Verify => "verify",
        };
        let fraction = (view.bytes_total > 0)
            .then(|| (view.bytes_done as f64 / view.bytes_total as f64).min(1.0));
        let running = view.state == TransferState::Running;
        let subject = format!("{kind} {}", view.label);
        let label = match &view.state {
            TransferState::Running => {
                let of = match fraction {
                    Some(f) => format!(
                        "{} of {} ({:.0}%)",
                        human_bytes(view.bytes_done),
                        human_bytes(view.bytes_total),
                        f * 100.0
                    ),
                    None => human_bytes(view.bytes_done),
                };
                let eta = view
                    .eta_seconds
                    .map(|s| format!(", {s} s left"))
                    .unwrap_or_default();
                let rate = human_bytes(view.bytes_per_second);
                format!("{subject}: {of}, {rate}/s{eta}")
            }
            TransferState::Done(what) => format!("{subject}: done ({what})"),
            TransferState::Failed(why) => format!("{subject}: failed: {why}"),
            TransferState::Cancelled => format!("{subject}: cancelled; nothing was published"),
        };
        TransferLine {
            view,
            subject,
            label,
            running,
            fraction,
        }
    }
}

/// What the researcher reviews before deciding: the exact manifest and whether it fits.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(rename = "ModelReview")]
pub struct Review {
    /// The manifest, exactly as it would be stored.
    pub manifest: Manifest,
    /// Its SHA-256: what `--accept-license` must repeat.
    pub manifest_sha256: String,
    /// Whether it is an exact catalog entry.
    pub validation: Validation,
    /// Why it cannot run here, when the resource planner refuses it.
    pub does_not_fit: Option<String>,
}

impl Review {
    fn of(manifest: Manifest, validated: bool) -> Review {
        let does_not_fit = check_fits(
            &manifest.name,
            manifest.resources.memory_bytes,
            Machine::read(),
        )
        .err()
        .map(|e| e.to_string());
        Review {
            manifest_sha256: manifest.digest(),
            validation: Validation::of(validated),
            manifest,
            does_not_fit,
        }
    }

    /// Refuses unless `accepted` is this manifest's SHA-256 and the model fits.
    pub(crate) fn decided(&self, accepted: Option<&str>) -> Result<(), ModelError> {
        if let Some(why) = &self.does_not_fit {
            return Err(ModelError::Invalid(why.clone()));
        }
        match accepted {
            Some(sha) if sha == self.manifest_sha256 => Ok(()),
            Some(other) => Err(ModelError::Invalid(format!(
                "the license decision was for manifest {other}, but the manifest now is {}; \
                 review it and decide again (nothing was written)",
                self.manifest_sha256
            ))),
            None => Err(ModelError::Invalid(format!(
                "accept the license ({}) of this exact manifest first: add --accept-license {}",
                self.manifest.license, self.manifest_sha256
            ))),
        }
    }
}

/// Options for a model brought in from local files.
#[derive(Debug, Clone, Default)]
pub struct FileImport {
    /// Store name (default: from the GGUF file's name).
    pub name: Option<String>,
    /// The files' license, as the researcher states it.
    pub license: String,
    /// Context window (default 4096).
    pub context_length: Option<u32>,
    /// The runtime's chat format (default: the file's own template).
    pub chat_format: Option<String>,
}

/// The project's local models and their transfers.
pub struct ModelDesk {
    store: ModelStore,
    project: ProjectContext,
    transfers: Transfers,
}

impl ModelDesk {
    /// The desk of `project`. Creates nothing.
    pub fn new(project: &ProjectContext) -> ModelDesk {
        ModelDesk {
            store: ModelStore::new(project.root().as_std_path()),
            project: project.clone(),
            transfers: Transfers::persisted(
                ModelStore::new(project.root().as_std_path())
                    .root()
                    .join("transfers"),
            ),
        }
    }

    /// The models, runtime and transfers, as every interface shows them. Reads only.
    pub fn view(&self) -> Result<LocalModelsView, ProjectError> {
        let runtime = self
            .running()
            .map(|r| format!("{} is served at {} (pid {})", r.model, r.base_url(), r.pid));
        Ok(LocalModelsView {
            models: self.list()?,
            runtime,
            transfers: heartwood_models::transfer::read_persisted(
                &self.store.root().join("transfers"),
                SHOWN_TRANSFERS,
            )
            .into_iter()
            .map(TransferLine::of)
            .collect(),
        })
    }

    /// Every transfer this desk ran or runs, for progress displays.
    pub fn transfers(&self) -> &Transfers {
        &self.transfers
    }

    /// Cancels the project's transfer `handle` (as `view` lists it), whichever interface or
    /// process runs it: nothing is published, and it ends as cancelled.
    pub fn cancel_transfer(&self, handle: &str) -> Result<(), ProjectError> {
        heartwood_models::transfer::request_cancel(&self.store.root().join("transfers"), handle)?;
        Ok(())
    }

    /// Every stored model.
    pub fn list(&self) -> Result<Vec<ModelListing>, ProjectError> {
        let route = local_route(&self.project);
        let running = runtime::status(&self.store);
        Ok(self
            .store
            .list()?
            .into_iter()
            .map(|m| {
                let selected = route.as_ref().is_some_and(|r| r.model == m.manifest.name);
                let running = running.as_ref().is_some_and(|r| r.model == m.manifest.name);
                let marks: Vec<&str> = [(selected, "selected"), (running, "running")]
                    .into_iter()
                    .filter_map(|(on, mark)| on.then_some(mark))
                    .collect();
                let label = format!(
                    "{} · {} · {} · needs {} · {} · license {}{}",
                    m.manifest.name,
                    m.validation(),
                    human_bytes(m.manifest.payload_bytes()),
                    human_bytes(m.manifest.resources.memory_bytes),
                    m.manifest.source.describe(),
                    m.manifest.license,
                    if marks.is_empty() {
                        String::new()
                    } else {
                        format!(" [{}]", marks.join(", "))
                    }
                );
                ModelListing {
                    selected,
                    running,
                    label,
                    name: m.manifest.name.clone(),
                    source: m.manifest.source.describe(),
                    way_in: m.provenance.way_in,
                    validation: m.validation(),
                    license: m.manifest.license.clone(),
                    payload_bytes: m.manifest.payload_bytes(),
                    memory_bytes: m.manifest.resources.memory_bytes,
                    manifest_sha256: m.manifest.digest(),
                }
            })
            .collect())
    }

    /// The review of trusted catalog entry `id`.
    pub fn review_catalog(&self, id: &str, name: Option<&str>) -> Result<Review, ProjectError> {
        let catalog = Catalog::load()?;
        let entry = catalog
            .entry(id)
            .ok_or_else(|| crate::Absent::CatalogEntry {
                id: id.to_owned(),
                catalog: catalog.source.clone(),
            })?;
        let name = name.map_or_else(|| heartwood_models::manifest::name_from(id), str::to_owned);
        heartwood_models::manifest::check_name(&name)?;
        Ok(Review::of(entry.manifest(&name), true))
    }

    /// The review of `files` (all of its one GGUF file when empty) of hub repository
    /// `repository` at `revision`, resolved to its commit now.
    pub fn review_hub(
        &self,
        repository: &str,
        revision: &str,
        files: &[String],
        name: Option<&str>,
        context_length: Option<u32>,
    ) -> Result<Review, ProjectError> {
        let resolved = Hub::from_env()?.resolve(repository, revision)?;
        let name = name.map_or_else(
            || heartwood_models::manifest::name_from(repository),
            str::to_owned,
        );
        heartwood_models::manifest::check_name(&name)?;
        let manifest = resolved.manifest(&name, files, context_length)?;
        let validated = Catalog::load()?.rehydrate(&manifest).is_some();
        Ok(Review::of(manifest, validated))
    }

    /// Downloads a reviewed hub or catalog manifest, once its license is accepted. Returns when
    /// it is published; [`crate::model_catalog::start_download`] returns at once instead.
    pub fn download(
        &self,
        review: &Review,
        accepted: Option<&str>,
    ) -> Result<ModelListing, ProjectError> {
        review.decided(accepted)?;
        let transfer = self
            .transfers
            .begin(TransferKind::Download, &review.manifest.name);
        self.download_as(review, &transfer)
    }

    /// Downloads a reviewed (and decided) manifest as `transfer`, which ends done or failed.
    pub(crate) fn download_as(
        &self,
        review: &Review,
        transfer: &Transfer,
    ) -> Result<ModelListing, ProjectError> {
        // Whatever fails, the transfer ends with it: a download is never left "running".
        // What is fetched, stored and recorded is the reviewed manifest itself, never a
        // catalog entry with the same files: the license decision is bound to its digest.
        let result = Hub::from_env().and_then(|hub| {
            hub.download(
                &self.store,
                &review.manifest,
                provenance(WayIn::Download, review),
                transfer,
            )
        });
        transfer.finish(&result, |m| format!("published {}", m.manifest.name));
        self.listing(&result?.manifest.name)
    }

    /// The review of local `paths`, hashed now (one must be a `.gguf` file).
    pub fn review_files(
        &self,
        paths: &[PathBuf],
        options: &FileImport,
    ) -> Result<Review, ProjectError> {
        let transfer = self
            .transfers
            .begin_unwritten(TransferKind::Verify, "local files");
        let result = files_manifest(paths, options, |path, name| {
            heartwood_models::digest::describe_file(path, name, &transfer)
        });
        transfer.finish(&result, |_| "described".to_owned());
        Ok(Review::of(result?, false))
    }

    /// Imports local `paths` once the license of their manifest is accepted. The files are
    /// hashed while they are copied, so a file changed since the review is refused.
    pub fn import_files(
        &self,
        paths: &[PathBuf],
        options: &FileImport,
        accepted: Option<&str>,
    ) -> Result<ModelListing, ProjectError> {
        if accepted.is_none() {
            let review = self.review_files(paths, options)?;
            return Err(review
                .decided(None)
                .expect_err("no decision was given")
                .into());
        }
        let name = import_name(paths, options)?;
        let transfer = self.transfers.begin(TransferKind::Import, &name);
        let staging = self.store.stage(None)?;
        let staged = staging.dir().to_path_buf();
        let result = (|| {
            let total = paths
                .iter()
                .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
                .sum();
            transfer.set_total(total);
            let manifest = files_manifest(paths, options, |path, name| {
                let target = staging.file(name)?;
                let open = |p: &Path, file: std::io::Result<std::fs::File>| {
                    file.map_err(|e| ModelError::Invalid(format!("{}: {e}", p.display())))
                };
                let mut out = open(&target, std::fs::File::create(&target))?;
                let mut input = open(path, std::fs::File::open(path))?;
                let (size, sha256, _) =
                    copy_hashing(&mut input, Some(&mut out), u64::MAX, &transfer, path)?;
                Ok(FileEntry {
                    path: name.to_owned(),
                    size,
                    sha256,
                })
            })?;
            let review = Review::of(manifest, false);
            review.decided(accepted)?;
            let provenance = provenance(WayIn::Import, &review);
            self.store
                .publish(staging, &review.manifest, provenance, &transfer)
        })();
        if result.is_err() {
            // Published models were renamed away; anything left here is this import's.
            let _ = std::fs::remove_dir_all(&staged);
        }
        transfer.finish(&result, |m| format!("published {}", m.manifest.name));
        self.listing(&result?.manifest.name)
    }

    /// The review of a bundle: its structure, names and sizes are checked; its payload is
    /// checked on import.
    pub fn review_bundle(&self, path: &Path) -> Result<Review, ProjectError> {
        let inspected = bundle::inspect(path)?;
        let validated = Catalog::load()?.rehydrate(&inspected.manifest).is_some();
        Ok(Review::of(inspected.manifest, validated))
    }

    /// Imports a bundle once its manifest's license is accepted. Catalog identities are
    /// rehydrated from the trusted catalog; any other model is `unvalidated`. Imports are
    /// never registered for download, so nothing here ever reaches the network.
    pub fn import_bundle(
        &self,
        path: &Path,
        accepted: Option<&str>,
    ) -> Result<ModelListing, ProjectError> {
        let inspected = bundle::inspect(path)?;
        let catalog = Catalog::load()?;
        let rehydrated = catalog.rehydrate(&inspected.manifest);
        let review = Review::of(inspected.manifest.clone(), rehydrated.is_some());
        review.decided(accepted)?;
        let transfer = self
            .transfers
            .begin(TransferKind::Import, &review.manifest.name);
        let result = inspected
            .unpack(&self.store, &transfer)
            .and_then(|staging| {
                let manifest = rehydrated.unwrap_or_else(|| review.manifest.clone());
                self.store.publish(
                    staging,
                    &manifest,
                    provenance(WayIn::Bundle, &review),
                    &transfer,
                )
            });
        transfer.finish(&result, |m| format!("published {}", m.manifest.name));
        self.listing(&result?.manifest.name)
    }

    /// Verifies stored model `name` and writes it as a reproducible bundle at `out`.
    pub fn export(&self, name: &str, out: &Path) -> Result<bundle::Exported, ProjectError> {
        let model = self.stored(name)?;
        let transfer = self.transfers.begin(TransferKind::Export, name);
        let result = bundle::export(&model, out, &transfer);
        transfer.finish(&result, |e| format!("wrote {}", e.path.display()));
        Ok(result?)
    }

    /// Re-reads every byte of stored model `name` against its manifest.
    pub fn verify(&self, name: &str) -> Result<(), ProjectError> {
        let model = self.stored(name)?;
        let transfer = self.transfers.begin(TransferKind::Verify, name);
        let result = self.store.verify(&model, &transfer);
        transfer.finish(&result, |()| "verified".to_owned());
        Ok(result?)
    }

    /// Deletes stored model `name` (stopping the runtime first if it serves it).
    pub fn remove(&self, name: &str) -> Result<bool, ProjectError> {
        if runtime::status(&self.store).is_some_and(|r| r.model == name) {
            runtime::stop(&self.store)?;
        }
        Ok(self.store.remove(name)?)
    }

    /// Makes stored model `name` the project's `local` route, on `port` (a free loopback port
    /// when not given). The runtime is not started.
    pub fn select(&self, name: &str, port: Option<u16>) -> Result<RouteConfig, ProjectError> {
        let model = self.stored(name)?;
        let port = match port {
            Some(port) => port,
            None => free_port()?,
        };
        // The runtime's context holds the prompt and the reply: a quarter (at most 4096
        // tokens) is kept for the reply.
        let context = u64::from(model.manifest.runtime.context_length);
        let output = (context / 4).clamp(1, 4_096);
        let route = RouteConfig {
            category: RouteCategory::Local,
            max_input_tokens: (context - output).max(crate::config::MIN_INPUT_TOKENS),
            max_output_tokens: output,
            ..RouteConfig::compatible(&format!("http://127.0.0.1:{port}/v1"), name)
        };
        ProjectConfig::set_route(&self.project, route.clone())?;
        Ok(route)
    }

    /// Starts the runtime for the project's `local` route and waits until it answers.
    pub fn start(&self) -> Result<RuntimeState, ProjectError> {
        let route = local_route(&self.project).ok_or(crate::Absent::LocalRoute)?;
        let model = self.stored(&route.model)?;
        check_fits(
            &route.model,
            model.manifest.resources.memory_bytes,
            Machine::read(),
        )?;
        let port = local_port(&route.base_url).expect("a validated local route has a port");
        let install = RuntimeInstall::find()?;
        Ok(runtime::start(
            &self.store,
            &model,
            port,
            &install,
            READY_WITHIN,
        )?)
    }

    /// Stops the project's runtime; false when none ran.
    pub fn stop(&self) -> Result<bool, ProjectError> {
        Ok(runtime::stop(&self.store)?)
    }

    /// The project's running runtime.
    pub fn running(&self) -> Option<RuntimeState> {
        runtime::status(&self.store)
    }

    fn stored(&self, name: &str) -> Result<heartwood_models::StoredModel, ProjectError> {
        Ok(self
            .store
            .get(name)?
            .ok_or_else(|| crate::Absent::Model(name.to_owned()))?)
    }

    fn listing(&self, name: &str) -> Result<ModelListing, ProjectError> {
        self.list()?
            .into_iter()
            .find(|m| m.name == name)
            .ok_or_else(|| crate::Absent::Vanished(name.to_owned()).into())
    }
}

/// Installs the local model runtime with `python` (else `python3`).
pub fn install_runtime(python: Option<PathBuf>) -> Result<PathBuf, ProjectError> {
    let python = python.unwrap_or_else(|| PathBuf::from("python3"));
    RuntimeInstall::install(&python)?;
    Ok(RuntimeInstall::default_location())
}

/// Why the project's `local` route cannot answer yet (for the startup plan), with the command
/// that fixes it; `None` when its runtime serves its model.
pub(crate) fn not_ready(
    project: &ProjectContext,
    route: &RouteConfig,
) -> Option<(bool, String, String)> {
    let store = ModelStore::new(project.root().as_std_path());
    match store.get(&route.model) {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Some((
                false,
                format!(
                    "the local model {} is not in this project's store",
                    route.model
                ),
                "heartwood model list, then heartwood model use NAME (or import or download one)"
                    .to_owned(),
            ));
        }
        Err(e) => {
            return Some((
                false,
                format!("the local model {}: {e}", route.model),
                "heartwood model list".to_owned(),
            ));
        }
    }
    let port = local_port(&route.base_url)?;
    let serving = runtime::status(&store).filter(|r| r.model == route.model && r.port == port);
    if serving.is_some() && runtime::answers(port, &route.model) {
        return None;
    }
    Some((
        true,
        format!(
            "the local model {} is selected and its runtime is not running",
            route.model
        ),
        "heartwood model start".to_owned(),
    ))
}

pub use crate::config::local_port;

fn local_route(project: &ProjectContext) -> Option<RouteConfig> {
    ProjectConfig::load(project)
        .ok()?
        .model
        .filter(|r| r.category == RouteCategory::Local)
}

fn free_port() -> Result<u16, ProjectError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| ProjectError::Io {
            doing: "no free loopback port".into(),
            source,
        })
}

fn provenance(way_in: WayIn, review: &Review) -> Provenance {
    Provenance::now(
        way_in,
        review.validation == Validation::Validated,
        &review.manifest_sha256,
    )
}

fn import_name(paths: &[PathBuf], options: &FileImport) -> Result<String, ModelError> {
    let name = match &options.name {
        Some(name) => name.clone(),
        None => {
            let gguf = paths
                .iter()
                .find(|p| p.extension().is_some_and(|e| e == "gguf"))
                .ok_or_else(|| {
                    ModelError::Invalid("one of the files must be a .gguf model".into())
                })?;
            heartwood_models::manifest::name_from(
                &gguf.file_name().unwrap_or_default().to_string_lossy(),
            )
        }
    };
    heartwood_models::manifest::check_name(&name)?;
    Ok(name)
}

/// The manifest of local `paths`, each described by `describe(path, name in the store)`.
fn files_manifest(
    paths: &[PathBuf],
    options: &FileImport,
    mut describe: impl FnMut(&Path, &str) -> Result<FileEntry, ModelError>,
) -> Result<Manifest, ModelError> {
    let name = import_name(paths, options)?;
    if options.license.trim().is_empty() {
        return Err(ModelError::Invalid(
            "say the files' license with --license (an SPDX id such as apache-2.0, or \
             \"unknown\")"
                .into(),
        ));
    }
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::symlink_metadata(path)
            .map_err(|e| ModelError::Invalid(format!("{}: {e}", path.display())))?;
        if !meta.is_file() {
            return Err(ModelError::Invalid(format!(
                "{} is not a regular file (links and folders are not imported)",
                path.display()
            )));
        }
        let file_name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        files.push(describe(path, &file_name)?);
    }
    Manifest::of_payload(
        &name,
        ModelSource::Files,
        options.license.trim(),
        files,
        options.context_length.unwrap_or(4_096),
        options.chat_format.clone(),
    )
}
