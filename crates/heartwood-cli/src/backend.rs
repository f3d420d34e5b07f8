//! `heartwood backend show | use | install`: which agent engine serves the project's new
//! sessions, and installing OpenHands' agent server for it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Subcommand, ValueEnum};
use heartwood_gateway::ProjectContext;
use heartwood_gateway::config::{BackendKind, ProjectConfig};

/// The `backend` subcommands.
#[derive(Subcommand)]
pub enum BackendCommand {
    /// Show the engine new sessions get, and whether OpenHands is installed.
    Show,
    /// Choose the engine for this project's new sessions (a session keeps the one it started
    /// with).
    Use {
        /// The engine.
        engine: Engine,
    },
    /// Install an engine's runtime for this user (OpenHands: a pinned Python environment in
    /// ~/.cache/heartwood/openhands-venv, or $HEARTWOOD_OPENHANDS_VENV).
    Install {
        /// The engine.
        engine: Engine,
        /// The Python (3.12 or newer) to build the environment with; default: the first on
        /// PATH.
        #[arg(long)]
        python: Option<PathBuf>,
    },
}

/// Engines as the command line spells them.
#[derive(Clone, Copy, ValueEnum)]
pub enum Engine {
    /// Heartwood's own engine (the default).
    Native,
    /// OpenHands' agent server.
    Openhands,
}

impl From<Engine> for BackendKind {
    fn from(engine: Engine) -> Self {
        match engine {
            Engine::Native => BackendKind::Native,
            Engine::Openhands => BackendKind::OpenHands,
        }
    }
}

/// Runs one `backend` subcommand.
pub fn run(project: &ProjectContext, cmd: BackendCommand) -> Result<ExitCode> {
    match cmd {
        BackendCommand::Show => {
            let config = ProjectConfig::load(project)?;
            say!("new sessions use  {}", config.backend.name());
            match heartwood_gateway::openhands_installation() {
                Ok(venv) => say!("OpenHands         installed in {}", venv.display()),
                Err(why) => say!("OpenHands         not installed: {why}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        BackendCommand::Use { engine } => {
            let kind = BackendKind::from(engine);
            ProjectConfig::set_backend(project, kind)?;
            say!(
                "new sessions in this project use the {} engine",
                kind.name()
            );
            if kind == BackendKind::OpenHands
                && let Err(why) = heartwood_gateway::openhands_installation()
            {
                say!("note: {why}");
            }
            Ok(ExitCode::SUCCESS)
        }
        BackendCommand::Install { engine, python } => match engine {
            Engine::Native => {
                say!("the native engine is part of Heartwood; nothing to install");
                Ok(ExitCode::SUCCESS)
            }
            Engine::Openhands => {
                say!("installing the pinned OpenHands agent server (about 700 MB) ...");
                let venv = heartwood_gateway::install_openhands(python)?;
                say!(
                    "installed in {}; choose it with `heartwood backend use openhands`",
                    venv.display()
                );
                Ok(ExitCode::SUCCESS)
            }
        },
    }
}
