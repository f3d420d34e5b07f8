//! `heartwood crate verify DIR|ZIP`: checks an exported RO-Crate without its session, as the
//! crate's own `verify_crate.py` does, naming every change.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

/// `heartwood crate …`.
#[derive(Subcommand)]
pub enum CrateCommand {
    /// Verify a crate: its journal's chain and checkpoint, every file's digest, and each
    /// acceptance against passed checks over those exact digests. Exit 1 names each failure.
    Verify {
        /// The crate's directory or ZIP file.
        path: PathBuf,
    },
}

/// Runs one `crate` subcommand (needs no project).
pub fn run(cmd: CrateCommand) -> Result<ExitCode> {
    match cmd {
        CrateCommand::Verify { path } => {
            let verdict = heartwood_gateway::verify_crate(&path)?;
            for problem in &verdict.problems {
                say!("FAIL {problem}");
            }
            if !verdict.problems.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
            say!(
                "ok: {} journal records chained and checkpointed, every file's digest holds, {} \
                 acceptances rest on passed checks over these exact digests",
                verdict.records,
                verdict.acceptances
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
