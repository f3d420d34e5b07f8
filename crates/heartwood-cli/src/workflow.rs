//! `heartwood workflow catalog | check`: the maintained research workflows and their
//! independent checks, evaluated read-only on the files now in the project.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::workspace::{
    Assessment, CheckResult, CheckStatus, WorkspaceService, workflow_catalog,
};

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
        /// Also write the results to this file, to assess them again later.
        #[arg(long)]
        save: Option<std::path::PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Assess saved results: are they still evidence for the stage (complete, passing, and
    /// about the files as they are now)?
    Assess {
        /// The definition id.
        definition: String,
        /// The stage id.
        stage: String,
        /// Results written by `heartwood workflow check --save`.
        results: std::path::PathBuf,
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
        WorkflowCommand::Assess {
            definition,
            stage,
            results,
        } => {
            let text = std::fs::read(&results)
                .with_context(|| format!("cannot read {}", results.display()))?;
            let saved: Vec<CheckResult> = serde_json::from_slice(&text)
                .with_context(|| format!("{} does not hold check results", results.display()))?;
            let assessment =
                WorkspaceService::open(project)?.assess_stage(&definition, &stage, &saved)?;
            print_assessment(&assessment);
            Ok(if assessment.eligible {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        WorkflowCommand::Check {
            definition,
            stage,
            save,
            json,
        } => {
            let service = WorkspaceService::open(project)?;
            let results = service.check_stage(&definition, &stage)?;
            if let Some(path) = &save {
                std::fs::write(path, serde_json::to_vec_pretty(&results)?)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
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
            if !json {
                print_assessment(&service.assess_checked(&definition, &stage, &results)?);
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

fn print_assessment(a: &Assessment) {
    println!(
        "\n{} {} / {}: {} (evidence {})",
        a.definition,
        a.version,
        a.stage,
        if a.eligible {
            "the evidence holds"
        } else {
            "not eligible"
        },
        &a.fingerprint[..16]
    );
    for problem in &a.problems {
        println!("    {problem}");
    }
    if a.eligible && a.researcher_review_required {
        println!(
            "    the stage also needs your acceptance; passing checks grant nothing by themselves"
        );
    }
}
