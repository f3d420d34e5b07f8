//! `heartwood batch …`: one workflow (or task) over many items, each an ordinary session in its
//! own project, run by a local pool or as a Slurm job array. The batch itself is
//! heartwood-batch's (each item driven in process through its project's gateway); this module
//! parses the subcommands, calls it, and says what came of it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use heartwood_batch::{BatchDir, Manifest, Phase, slurm, status};

mod collect;
mod local;
mod review;
mod route;
mod status_table;

/// Exit code: some items wait for a person (none failed).
const EXIT_WAITING: u8 = 3;

/// The `batch` subcommands.
#[derive(Subcommand)]
pub enum BatchCommand {
    /// Run the batch: every item not yet started or cut off, locally (default) or on Slurm.
    ///
    /// Exit codes (local): 0 every item done, 3 some wait for a person, 1 some failed or were
    /// interrupted, 2 the manifest is not valid.
    Run(RunArgs),
    /// Continue every item not done: after your decisions, or after an interruption.
    Resume(RunArgs),
    /// Where every item stands (merged with Slurm's view for a Slurm batch).
    Status {
        /// The batch manifest.
        manifest: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One workflow stage's checks for every item waiting for its acceptance, side by side;
    /// with --accept DIGEST (printed with the table), the eligible ones are accepted in one
    /// decision, each bound to its own fingerprint, and refused items are named.
    Review {
        /// The batch manifest.
        manifest: PathBuf,
        /// The stage (its id, as `batch status` shows it).
        stage: String,
        /// Accept every eligible item shown under this digest.
        #[arg(long, value_name = "DIGEST")]
        accept: Option<String>,
        /// Print the review (and the decision's outcome) as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Verify every item's session and evidence, and write the results table and report.
    Collect {
        /// The batch manifest.
        manifest: PathBuf,
        /// Also write one RO-Crate (`<batch dir>/ro-crate/`): each verified item's own crate,
        /// and the results table as a dataset.
        #[arg(long)]
        ro_crate: bool,
    },
    /// Drive one item until it settles (what each engine runs per item; `INDEX` is the item's
    /// position in the manifest, from 0, as Slurm's array index).
    Worker {
        /// The batch manifest.
        manifest: PathBuf,
        /// The item's index.
        index: usize,
    },
}

/// Arguments of `batch run` and `batch resume`.
#[derive(Args)]
pub struct RunArgs {
    /// The batch manifest (TOML; see docs/batch.md).
    manifest: PathBuf,
    /// Where items run.
    #[arg(long, value_enum, default_value_t = Engine::Local)]
    engine: Engine,
    /// At most this many items at once (default: the cores, within what the route allows).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run failed items again too (after fixing what failed them: the route, an input): each
    /// continues its own session where it stopped.
    #[arg(long)]
    rerun_failed: bool,
}

/// Where a batch's items run.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Engine {
    /// On this machine, a bounded number at once.
    Local,
    /// As one Slurm job array, submitted with sbatch.
    Slurm,
}

/// Runs one `batch` subcommand.
pub fn run(command: BatchCommand) -> Result<ExitCode> {
    match command {
        BatchCommand::Run(args) => start(args, false),
        BatchCommand::Resume(args) => start(args, true),
        BatchCommand::Status { manifest, json } => match load(&manifest) {
            Ok(m) => status_table::print(&m, json),
            Err(code) => Ok(code),
        },
        BatchCommand::Review {
            manifest,
            stage,
            accept,
            json,
        } => match load(&manifest) {
            Ok(m) => review::review(&m, &manifest, &stage, accept.as_deref(), json),
            Err(code) => Ok(code),
        },
        BatchCommand::Collect { manifest, ro_crate } => match load(&manifest) {
            Ok(m) => collect::collect(&m, ro_crate),
            Err(code) => Ok(code),
        },
        BatchCommand::Worker { manifest, index } => {
            let m = match load(&manifest) {
                Ok(m) => m,
                Err(code) => return Ok(code),
            };
            let record = heartwood_batch::Driver::new(&m, &route::CliRoutes)?.drive(index)?;
            say!(
                "{}: {} ({})",
                record.item,
                record.phase.as_str(),
                record.detail
            );
            Ok(if record.phase == Phase::Failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// Nothing is left to run: what stands, and what would move it (failed items are run again
/// only on request, each costs model calls). Exits 1 while any item failed, 3 while any waits.
fn nothing_to_run(manifest: &Manifest, shown: &status::Status, path: &std::path::Path) -> ExitCode {
    let path = path.display();
    say!(
        "batch {}: nothing new to run ({})",
        manifest.name,
        status::counts_line(&shown.counts)
    );
    let count = |phase: Phase| shown.items.iter().filter(|r| r.phase == phase).count();
    let (failed, waiting) = (count(Phase::Failed), count(Phase::Waiting));
    if failed > 0 {
        say!(
            "{failed} failed: `heartwood batch status {path}` says why; once that is fixed \
             (the route, an input), `heartwood batch run {path} --rerun-failed` runs them again"
        );
        return ExitCode::FAILURE;
    }
    if waiting > 0 {
        say!(
            "{waiting} wait for you: `heartwood batch status {path}` lists each with the command \
             that answers it; then `heartwood batch resume {path}`"
        );
        return ExitCode::from(EXIT_WAITING);
    }
    say!("every item is done: `heartwood batch collect {path}` verifies and summarises them");
    ExitCode::SUCCESS
}

/// The manifest, or exit code 2 with every problem printed.
fn load(path: &std::path::Path) -> Result<Manifest, ExitCode> {
    Manifest::load(path, &route::CliRoutes).map_err(|problems| {
        eprintln!("heartwood: {problems}");
        ExitCode::from(2)
    })
}

fn start(args: RunArgs, resume: bool) -> Result<ExitCode> {
    let manifest = match load(&args.manifest) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let dir = BatchDir::of(&manifest);
    // Every item project is made before anything runs, so a template or input problem shows
    // now, for every item, and no worker on a compute node races to copy.
    let mut problems = Vec::new();
    for item in &manifest.items {
        if let Err(e) = dir.prepare(&manifest, item) {
            problems.push(format!("item {}: {e}", item.name));
        }
    }
    if !problems.is_empty() {
        eprintln!(
            "heartwood: the item projects cannot be made:\n  {}",
            problems.join("\n  ")
        );
        return Ok(ExitCode::from(2));
    }
    let shown = status::gather(&manifest)?;
    // An item a live worker drives, or one the scheduler still has queued or running, is left
    // to it: submitting it again would only queue a worker that stands back.
    let indices: Vec<usize> = shown
        .items
        .iter()
        .filter(|r| r.phase != Phase::Running)
        .filter(|r| {
            !r.scheduler
                .as_ref()
                .is_some_and(|t| slurm::is_live(&t.state))
        })
        .filter(|r| {
            if resume {
                r.phase != Phase::Done
            } else {
                r.phase.needs_work() || (args.rerun_failed && r.phase == Phase::Failed)
            }
        })
        .map(|r| r.index)
        .collect();
    if indices.is_empty() {
        return Ok(nothing_to_run(&manifest, &shown, &args.manifest));
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| manifest.default_jobs())
        .min(manifest.route_concurrency())
        .max(1);
    match args.engine {
        Engine::Slurm => {
            let program = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find the heartwood program: {e}"))?;
            let submission = slurm::submit(&manifest, &dir, (&indices, jobs), &program)?;
            say!(
                "batch {}: submitted Slurm job {} ({} item{}, at most {jobs} at once; script {})",
                manifest.name,
                submission.job_id,
                indices.len(),
                if indices.len() == 1 { "" } else { "s" },
                submission.script.display()
            );
            say!(
                "follow it with `heartwood batch status {}`",
                args.manifest.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Engine::Local => {
            let records = local::run(&manifest, &args.manifest, &indices, jobs)?;
            let after = status::gather(&manifest)?;
            say!(
                "batch {}: {}",
                manifest.name,
                status::counts_line(&after.counts)
            );
            let settled = |p: Phase| records.iter().filter(|r| r.phase == p).count();
            if settled(Phase::Failed) + settled(Phase::Interrupted) > 0 {
                say!(
                    "see why with `heartwood batch status {}`",
                    args.manifest.display()
                );
                return Ok(ExitCode::FAILURE);
            }
            if settled(Phase::Waiting) > 0 {
                say!(
                    "items wait for you: `heartwood batch status {}` lists each with the command \
                     that answers it; then `heartwood batch resume {}`",
                    args.manifest.display(),
                    args.manifest.display()
                );
                return Ok(ExitCode::from(EXIT_WAITING));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
