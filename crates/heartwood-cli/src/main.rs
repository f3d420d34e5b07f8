//! `heartwood`: the command-line entry point.
//!
//! Today it inspects and maintains the sessions of the project in the current directory. It
//! never takes another project's path: every command acts on the current directory's
//! `.heartwood/`, and read-only commands never create it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod sessions;

/// Heartwood: a research workbench around an AI coding agent.
#[derive(Parser)]
#[command(name = "heartwood", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect, verify, export and remove this project's sessions.
    #[command(subcommand)]
    Sessions(sessions::SessionsCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sessions(cmd) => heartwood_gateway::ProjectContext::current()
            .map_err(anyhow::Error::from)
            .and_then(|project| sessions::run(&project, cmd)),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("heartwood: {err:#}");
            ExitCode::FAILURE
        }
    }
}
