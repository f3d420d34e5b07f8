//! `heartwood model list | download | import | export | verify | remove | use | start | stop |
//! install-runtime`: the project's local models, through the gateway's model desk. Long work
//! runs on a worker thread while this thread draws the desk's transfer progress.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::models::{
    FileImport, ModelDesk, Review, TransferLine, TransferView, human_bytes,
};

/// The local-model subcommands of `heartwood model`.
#[derive(Subcommand)]
pub enum LocalCommand {
    /// List this project's local models (validated or unvalidated, selected, running).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Download a model pinned to an exact commit: a Hugging Face repository (owner/name) or a
    /// trusted catalog entry (--catalog). Without --accept-license it shows the exact manifest
    /// and its SHA-256 and writes nothing (exit code 2).
    Download {
        /// The repository, owner/name.
        #[arg(required_unless_present = "catalog", conflicts_with = "catalog")]
        repository: Option<String>,
        /// A trusted catalog entry's id instead of a repository.
        #[arg(long)]
        catalog: Option<String>,
        /// Branch, tag or commit; resolved to its commit before anything is written.
        #[arg(long, default_value = "main")]
        revision: String,
        /// A file to fetch (repeat for several); default: the repository's one GGUF file.
        #[arg(long = "file")]
        files: Vec<String>,
        /// Store name (default: from the repository).
        #[arg(long)]
        name: Option<String>,
        /// Context window in tokens.
        #[arg(long)]
        context: Option<u32>,
        /// Accept the license of the manifest with this SHA-256 (shown by a run without it).
        #[arg(long, value_name = "SHA256")]
        accept_license: Option<String>,
        /// Print the review or the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Import local files (one a .gguf model) or a Heartwood model bundle (.zip). Without
    /// --accept-license it shows the exact manifest and its SHA-256 and writes nothing (exit 2).
    Import {
        /// The files, or one bundle.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The files' license (SPDX id or "unknown"); a bundle's manifest carries its own.
        #[arg(long)]
        license: Option<String>,
        /// Store name (default: from the GGUF file's name).
        #[arg(long)]
        name: Option<String>,
        /// Context window in tokens (default 4096).
        #[arg(long)]
        context: Option<u32>,
        /// The runtime's chat format (e.g. chatml) when the file's own template should not be
        /// used.
        #[arg(long)]
        chat_format: Option<String>,
        /// Accept the license of the manifest with this SHA-256.
        #[arg(long, value_name = "SHA256")]
        accept_license: Option<String>,
        /// Print the review or the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Verify a stored model and write it as a reproducible ZIP64 bundle (the same model
    /// always gives the same bytes).
    Export {
        /// The stored model.
        name: String,
        /// The bundle to write.
        out: PathBuf,
    },
    /// Re-read every byte of a stored model against its manifest.
    Verify {
        /// The stored model.
        name: String,
    },
    /// Delete a stored model (its runtime is stopped first).
    Remove {
        /// The stored model.
        name: String,
    },
    /// Make a stored model this project's `local` route (credential-free, on a loopback port).
    Use {
        /// The stored model.
        name: String,
        /// The runtime's port (default: a free one).
        #[arg(long)]
        port: Option<u16>,
    },
    /// Start the runtime for the project's local model and wait until it answers.
    Start,
    /// Stop the project's local model runtime.
    Stop,
    /// Install the local model runtime (llama-cpp-python, built by pip; several minutes).
    InstallRuntime {
        /// The Python to make its environment with (default python3).
        #[arg(long)]
        python: Option<PathBuf>,
    },
}

/// Runs one local-model subcommand.
pub fn run(project: &ProjectContext, cmd: LocalCommand) -> Result<ExitCode> {
    let desk = ModelDesk::new(project);
    match cmd {
        LocalCommand::List { json } => {
            let models = desk.list()?;
            if json {
                say!("{}", serde_json::to_string_pretty(&models)?);
            } else if models.is_empty() {
                say!(
                    "no local models; heartwood model download OWNER/NAME or heartwood model \
                     import FILE.gguf"
                );
            }
            if !json {
                for m in &models {
                    say!("{}", m.label);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Download {
            repository,
            catalog,
            revision,
            files,
            name,
            context,
            accept_license,
            json,
        } => {
            let review = match (&catalog, &repository) {
                (Some(id), _) => desk.review_catalog(id, name.as_deref())?,
                (None, Some(repo)) => {
                    desk.review_hub(repo, &revision, &files, name.as_deref(), context)?
                }
                (None, None) => anyhow::bail!("give a repository or --catalog ID"),
            };
            let Some(accepted) = accept_license else {
                return show_review(&review, json);
            };
            let listing = with_progress(&desk, || desk.download(&review, Some(&accepted)))?;
            print_done(&listing, json)
        }
        LocalCommand::Import {
            paths,
            license,
            name,
            context,
            chat_format,
            accept_license,
            json,
        } => {
            let bundle = paths.len() == 1 && paths[0].extension().is_some_and(|e| e == "zip");
            if bundle {
                if license.is_some() || name.is_some() || context.is_some() {
                    anyhow::bail!(
                        "a bundle's manifest fixes its name, license and settings; import it \
                         without --license, --name or --context"
                    );
                }
                let Some(accepted) = accept_license else {
                    return show_review(&desk.review_bundle(&paths[0])?, json);
                };
                let listing =
                    with_progress(&desk, || desk.import_bundle(&paths[0], Some(&accepted)))?;
                return print_done(&listing, json);
            }
            let options = FileImport {
                name,
                license: license.unwrap_or_default(),
                context_length: context,
                chat_format,
            };
            let Some(accepted) = accept_license else {
                let review = with_progress(&desk, || desk.review_files(&paths, &options))?;
                return show_review(&review, json);
            };
            let listing = with_progress(&desk, || {
                desk.import_files(&paths, &options, Some(&accepted))
            })?;
            print_done(&listing, json)
        }
        LocalCommand::Export { name, out } => {
            let exported = with_progress(&desk, || desk.export(&name, &out))?;
            say!(
                "wrote {} ({} bytes; manifest sha256 {})",
                exported.path.display(),
                exported.bytes,
                exported.manifest_sha256
            );
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Verify { name } => {
            with_progress(&desk, || desk.verify(&name))?;
            say!("{name}: every file matches its manifest");
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Remove { name } => {
            if desk.remove(&name)? {
                say!("removed {name}");
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("heartwood: no model named {name}");
                Ok(ExitCode::from(2))
            }
        }
        LocalCommand::Use { name, port } => {
            let route = desk.select(&name, port)?;
            say!(
                "the project's model route is now the local model {name} at {} \
                 (credential-free)",
                route.base_url
            );
            crate::status::print_plan(&heartwood_gateway::startup::plan(project)?);
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Start => {
            eprintln!("starting the local model runtime (loading the model)...");
            let state = desk.start()?;
            say!(
                "{} is served at {} (pid {}, log {})",
                state.model,
                state.base_url(),
                state.pid,
                state.log.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Stop => {
            if desk.stop()? {
                say!("stopped the local model runtime");
            } else {
                say!("no local model runtime was running");
            }
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::InstallRuntime { python } => {
            let venv = heartwood_gateway::models::install_runtime(python)?;
            say!("the local model runtime is installed in {}", venv.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn show_review(review: &Review, json: bool) -> Result<ExitCode> {
    if json {
        say!("{}", serde_json::to_string_pretty(review)?);
        return Ok(ExitCode::from(2));
    }
    let m = &review.manifest;
    say!("model          {} ({})", m.name, review.validation);
    say!("source         {}", m.source.describe());
    say!("license        {}", m.license);
    for f in &m.files {
        say!(
            "file           {}  {} bytes  sha256 {}",
            f.path,
            f.size,
            f.sha256
        );
    }
    say!(
        "runtime        {} · context {} tokens{}",
        m.runtime.model_file,
        m.runtime.context_length,
        m.runtime
            .chat_format
            .as_deref()
            .map(|f| format!(" · chat format {f}"))
            .unwrap_or_default()
    );
    say!("memory need    {}", human_bytes(m.resources.memory_bytes));
    say!("manifest       sha256 {}", review.manifest_sha256);
    if let Some(why) = &review.does_not_fit {
        eprintln!("heartwood: {why}");
        return Ok(ExitCode::from(2));
    }
    say!(
        "\nnothing was written. To accept the license ({}) of exactly this manifest and go on, \
         run the same command with --accept-license {}",
        m.license,
        review.manifest_sha256
    );
    Ok(ExitCode::from(2))
}

fn print_done(listing: &heartwood_gateway::models::ModelListing, json: bool) -> Result<ExitCode> {
    if json {
        say!("{}", serde_json::to_string_pretty(listing)?);
    } else {
        say!(
            "published {} ({}, {}, manifest sha256 {}); use it with heartwood model use {}",
            listing.name,
            listing.validation,
            human_bytes(listing.payload_bytes),
            listing.manifest_sha256,
            listing.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `work` on a worker thread while drawing the desk's newest transfer on standard error
/// (indicatif hides the bar when standard error is not a terminal).
fn with_progress<T: Send>(
    desk: &ModelDesk,
    work: impl FnOnce() -> Result<T, heartwood_gateway::ProjectError> + Send,
) -> Result<T> {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    let result = std::thread::scope(|scope| {
        let worker = scope.spawn(work);
        while !worker.is_finished() {
            if let Some(view) = desk.transfers().views().pop() {
                draw(&bar, view);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        worker.join().expect("the transfer thread does not panic")
    });
    bar.finish_and_clear();
    for view in desk.transfers().views() {
        for warning in &view.warnings {
            eprintln!("warning: {}: {warning}", view.label);
        }
    }
    Ok(result?)
}

fn draw(bar: &indicatif::ProgressBar, view: TransferView) {
    let line = TransferLine::of(view);
    bar.set_length(line.view.bytes_total);
    bar.set_position(line.view.bytes_done);
    // The bar draws the figures; its message is what moves.
    bar.set_message(line.subject);
}
