//! `heartwood workflow catalog | check`: the maintained research workflows and their
//! independent checks, evaluated read-only on the files now in the project.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::workspace::{CheckStatus, WorkspaceService, workflow_catalog};

/// `heartwood workflow …`
#[derive(Subcommand)]
pub enum WorkflowCommand {
    /// List the workflow definitions, their stages, and whether every check is implemented.
    Catalog {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one stage's checks on the project's current files (nothing is changed).
    Check {
        /// The definition id (see `heartwood workflow catalog`).
        definition: String,
        /// The stage id.
        stage: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a workflow command.
pub fn run(project: &ProjectContext, command: WorkflowCommand) -> Result<ExitCode> {
    match command {
        WorkflowCommand::Catalog { json } => {
            let entries = workflow_catalog()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&entries)?);
                return Ok(ExitCode::SUCCESS);
            }
            for e in entries {
                let support = if e.supported {
                    "supported".to_owned()
                } else {
                    format!(
                        "not yet checkable: {} not implemented",
                        e.missing_checks.join(", ")
                    )
                };
                println!(
                    "{} {} — {}\n  {support}\n  inputs: {}",
                    e.id,
                    e.version,
                    e.title,
                    e.inputs.join(", ")
                );
                for (i, s) in e.stages.iter().enumerate() {
                    println!(
                        "  {}. {} ({}): produces {}; checks {}{}",
                        i + 1,
                        s.title,
                        s.id,
                        s.produces.join(", "),
                        s.checks.join(", "),
                        if s.researcher_gate {
                            "; researcher accepts"
                        } else {
                            ""
                        }
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        WorkflowCommand::Check {
            definition,
            stage,
            json,
        } => {
            let results = WorkspaceService::open(project)?.check_stage(&definition, &stage)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&results)?);
            } else {
                for r in &results {
                    let status = serde_json::to_value(r.status)?;
                    println!("{:<22} {}", r.check, status.as_str().unwrap_or_default());
                    for reason in &r.reasons {
                        println!("    {reason}");
                    }
                    for file in &r.inspected {
                        println!(
                            "    read {} ({} bytes, sha256 {})",
                            file.path,
                            file.bytes,
                            &file.sha256[..16]
                        );
                    }
                }
            }
            let all_passed = results.iter().all(|r| r.status == CheckStatus::Passed);
            Ok(if all_passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}
