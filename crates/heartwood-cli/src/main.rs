//! `heartwood`: the command-line entry point.
//!
//! It runs the agent headless (`exec`, `decide`), inspects and maintains the sessions of the
//! project in the current directory, shows the startup plan, and connects the model route. It never takes another project's path: every command acts on the current directory's
//! `.heartwood/`, and read-only commands never create it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Prints a line to standard output; after the reader has gone, prints nothing and carries on
/// (see [`output`]). Every command prints through it, never `println!`.
macro_rules! say {
    () => {
        $crate::output::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*), true)
    };
}

/// [`say!`] without the newline (a prompt, a file's text as it is).
macro_rules! say_raw {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*), false)
    };
}

mod output;

mod backend;
mod batch;
mod demo;
mod exec;
mod json_stream;
mod local_models;
mod model;
mod notebook;
mod refused;
mod render;
mod replay;
mod review;
mod ro_crate;
mod serve;
mod sessions;
mod skills;
mod stats;
mod status;
mod workflow;
mod workspace;

use heartwood_cli::tui;

/// Heartwood: a research workbench around an AI coding agent.
#[derive(Parser)]
#[command(
    name = "heartwood",
    version,
    about = "Heartwood: a research workbench around an AI coding agent"
)]
struct Cli {
    /// Without a command, `heartwood` opens the terminal interface.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect, verify, export and remove this project's sessions.
    Sessions(sessions::SessionsArgs),
    /// Exported RO-Crates: verify one without its session (needs no project).
    #[command(subcommand)]
    Crate(ro_crate::CrateCommand),
    /// Show where this project stands and what to do next (creates nothing).
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Connect or show the project's model route.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// Choose the agent engine (native or OpenHands) and install OpenHands.
    #[command(subcommand)]
    Backend(backend::BackendCommand),
    /// Give the agent a task and follow it until it finishes or waits for your decision.
    ///
    /// Exit codes: 0 finished, 1 failed or refused, 3 waiting for a decision, 4 paused.
    Exec(exec::ExecArgs),
    /// Answer a pending action set (from any terminal, any time later), then follow the run.
    Decide(exec::DecideArgs),
    /// Run a recorded session's task again with the recorded model replies, and compare.
    Replay(replay::ReplayArgs),
    /// Agent Skills: review, approve, activate; local directories and signed sources.
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Research workflows: the catalog, and a stage's independent checks on the current files.
    #[command(subcommand)]
    Workflow(workflow::WorkflowCommand),
    /// The notebook module: build it from this checkout into a Python environment.
    #[command(subcommand)]
    Notebook(notebook::NotebookCommand),
    /// Parallel review: qualify this project's model route (an operator's step).
    #[command(subcommand)]
    Review(review::ReviewCommand),
    /// Serve the browser interface and the gateway's API over HTTP (loopback unless a proxy is declared).
    Serve(serve::ServeArgs),
    /// Try Heartwood without a model: an example study and a recorded session, replayed.
    Demo(demo::DemoArgs),
    /// Look at the project's files: tree, text, changes, diffs (read-only).
    #[command(subcommand)]
    Workspace(workspace::WorkspaceCommand),
    /// Batches: one workflow or task over many datasets, locally or as a Slurm job array.
    #[command(subcommand)]
    Batch(batch::BatchCommand),
    /// Statistics reference: fit linear and logistic models to a CSV table (needs no project).
    #[command(subcommand)]
    Stats(stats::StatsCommand),
    /// Print a shell completion script, e.g. `heartwood completions bash > ~/.local/share/bash-completion/completions/heartwood`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let cli = Cli::parse();
    // Needs no project: a completion script is the same wherever it is printed.
    if let Some(Command::Completions { shell }) = cli.command {
        use clap::CommandFactory;
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "heartwood", &mut script);
        output::bytes(&script);
        return ExitCode::SUCCESS;
    }
    let result = match cli.command {
        // Reads the named table only: no project is looked for.
        Some(Command::Stats(cmd)) => stats::run(cmd),
        Some(Command::Crate(cmd)) => ro_crate::run(cmd),
        command => heartwood_gateway::ProjectContext::current()
            .map_err(anyhow::Error::from)
            .and_then(|project| match command {
                None => tui::run(project),
                Some(command) => run(project, command),
            }),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("heartwood: {err:#}");
            // A refusal exits with its kind's code, so scripts act on the kind.
            match err.downcast_ref::<refused::Refused>() {
                Some(refused) => ExitCode::from(refused.exit_code()),
                None => ExitCode::FAILURE,
            }
        }
    }
}

/// Output to a reader that went away (`heartwood sessions show ID | head -1`) ends the process
/// quietly, as other command-line tools do, instead of reporting a panic.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.contains("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn run(project: heartwood_gateway::ProjectContext, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Sessions(args) => sessions::run_in_store(&project, args),
        Command::Status { json } => status::run(&project, json),
        Command::Model(cmd) => model::run(&project, cmd),
        Command::Backend(cmd) => backend::run(&project, cmd),
        Command::Skills(cmd) => skills::run(&project, cmd),
        Command::Exec(args) => exec::exec(project, args),
        Command::Decide(args) => exec::decide(project, args),
        Command::Workspace(cmd) => workspace::run(&project, cmd),
        Command::Demo(args) => demo::run(args),
        Command::Serve(args) => serve::run(project, args),
        Command::Workflow(cmd) => workflow::run(&project, cmd),
        Command::Review(cmd) => review::run(&project, cmd),
        Command::Replay(args) => replay::run(&project, args),
        Command::Batch(cmd) => batch::run(cmd),
        Command::Notebook(cmd) => notebook::run(cmd),
        Command::Stats(cmd) => stats::run(cmd),
        Command::Crate(cmd) => ro_crate::run(cmd),
        Command::Completions { .. } => Ok(ExitCode::SUCCESS),
    }
}
