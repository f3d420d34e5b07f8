//! `heartwood workflow catalog` and `heartwood workflow validate FILE`: the catalog as the
//! gateway lists it (each definition's source, digest, availability and stage budgets, from
//! the catalog's own fields) and one definition file checked against the format and registry.

use std::process::ExitCode;

use anyhow::{Context, Result};
use heartwood_gateway::ProjectContext;
use heartwood_gateway::{validate_definition, workflow_catalog};

/// Prints the workflow catalog.
pub(super) fn catalog(project: &ProjectContext, json: bool) -> Result<ExitCode> {
    let entries = workflow_catalog(project)?;
    if json {
        say!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(ExitCode::SUCCESS);
    }
    for e in entries {
        let support = if !e.problems.is_empty() {
            format!(
                "not a valid definition ({} problems; `heartwood workflow validate {}` lists them)",
                e.problems.len(),
                e.location
            )
        } else if e.supported {
            "supported".to_owned()
        } else {
            format!(
                "not supported here: this Heartwood's check registry lacks {}",
                e.missing_checks.join(", ")
            )
        };
        say!(
            "{} {} — {}\n  {}\n  {support}\n  inputs: {}",
            e.id,
            e.version,
            e.title,
            e.source_summary,
            e.inputs.join(", ")
        );
        for problem in &e.problems {
            say!("  problem: {problem}");
        }
        for (i, s) in e.stages.iter().enumerate() {
            say!(
                "  {}. {} ({}): produces {}; checks {}{}\n     budget: {}",
                i + 1,
                s.title,
                s.id,
                s.produces.join(", "),
                s.checks.join(", "),
                if s.researcher_gate {
                    "; researcher accepts"
                } else {
                    ""
                },
                s.budget_summary
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Validates one definition file, printing every problem; fails when there is any.
pub(super) fn validate(file: &std::path::Path, json: bool) -> Result<ExitCode> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let outcome = validate_definition(&bytes);
    if json {
        let value = match &outcome {
            Ok((entry, missing)) => serde_json::json!({
                "valid": true, "problems": [], "supported": missing.is_empty(),
                "missing_checks": missing, "id": entry.id, "sha256": entry.sha256,
            }),
            Err(problems) => serde_json::json!({"valid": false, "problems": problems}),
        };
        say!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        match &outcome {
            Ok((entry, missing)) => {
                say!(
                    "{}: a valid definition ({} {}, sha256 {})",
                    file.display(),
                    entry.id,
                    entry.version,
                    entry.sha256
                );
                if !missing.is_empty() {
                    say!(
                        "  not supported here: this Heartwood's check registry lacks {}",
                        missing.join(", ")
                    );
                }
            }
            Err(problems) => {
                say!("{}: {} problems", file.display(), problems.len());
                for p in problems {
                    say!("  - {p}");
                }
            }
        }
    }
    Ok(if outcome.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
