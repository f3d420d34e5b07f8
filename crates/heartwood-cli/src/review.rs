//! `heartwood review qualify`: an operator qualifies the project's model route for parallel
//! review with a live synthetic run, and the evidence entry is written outside the project.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Subcommand;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::{
    QUALIFICATIONS_VAR, QualifyOptions, qualification_evidence, qualify_route,
};

/// Parallel review, qualified by an operator.
#[derive(Subcommand)]
pub enum ReviewCommand {
    /// Qualify this project's model route for parallel review: a synthetic review batch is
    /// sent at increasing parallelism, every structured result must parse and match the
    /// one-at-a-time run, and the evidence entry (with the run's record) is written to the
    /// operator's evidence file outside every project. Asks the model for real.
    Qualify {
        /// The evidence file (default: $HEARTWOOD_REVIEW_QUALIFICATIONS).
        #[arg(long)]
        evidence: Option<PathBuf>,
        /// The most reviewers to try at once.
        #[arg(long, default_value_t = 3)]
        max: u32,
        /// Days the evidence counts.
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
}

/// Runs a review command.
pub fn run(project: &ProjectContext, command: ReviewCommand) -> Result<ExitCode> {
    let ReviewCommand::Qualify {
        evidence: file,
        max,
        days,
    } = command;
    let file = match file {
        Some(file) => file,
        None => qualification_evidence().with_context(|| {
            format!(
                "say where the evidence goes: --evidence FILE or {} (outside every project)",
                QUALIFICATIONS_VAR
            )
        })?,
    };
    let options = QualifyOptions {
        evidence: file,
        max_parallelism: max,
        valid_for: Duration::from_secs(u64::from(days) * 86_400),
    };
    let mut progress = |line: &str| eprintln!("{line}");
    let report = heartwood_cli::runtime::block_on(
        heartwood_cli::runtime::Workers::Two,
        qualify_route(project, &options, &mut progress),
    )??;
    say!(
        "qualified {} for {} reviewers at once until {}",
        report.entry.route_label,
        report.entry.max_parallelism,
        report.entry.expires_at
    );
    for round in &report.record.rounds {
        say!(
            "  {} at once: {} ms{}",
            round.parallelism,
            round.wall_ms,
            if round.problems.is_empty() {
                String::new()
            } else {
                format!(" ({})", round.problems.join("; "))
            }
        );
    }
    say!(
        "evidence written to {} (record {})",
        options.evidence.display(),
        report.record_path.display()
    );
    Ok(ExitCode::SUCCESS)
}
