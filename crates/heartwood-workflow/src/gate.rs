//! The evidence gate: whether a stage's check results are evidence that still holds.
//!
//! An assessment compares the results with the stage's required checks and re-reads the digest
//! of every file the checks inspected. Missing, failed, unverified or unknown results, evidence
//! that does not cover a file the check must read, and any file changed or gone since it was
//! checked (even if the new file is consistent with the changed data) make the stage
//! ineligible. Eligibility grants nothing: it does not advance a stage or permit a tool.

use heartwood_workspace::{AccessError, ProjectPath, Workspace};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::check::{CheckResult, Status};
use crate::definition::Definition;

/// The gate's answer for one stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    /// The definition.
    pub definition: String,
    /// Its version.
    pub version: String,
    /// The stage.
    pub stage: String,
    /// SHA-256 over the definition, stage, check statuses and every inspected digest: what a
    /// researcher's decision binds to.
    pub fingerprint: String,
    /// Whether the evidence is complete, passing and current.
    pub eligible: bool,
    /// Whether the stage also needs a researcher's acceptance.
    pub researcher_review_required: bool,
    /// Why it is not eligible.
    pub problems: Vec<String>,
}

/// Assesses `results` as evidence for `stage`, re-reading the inspected files' digests now.
pub fn assess(
    workspace: &Workspace,
    definition: &Definition,
    stage: &str,
    results: &[CheckResult],
) -> Option<Assessment> {
    let stage = definition.stages.iter().find(|s| s.id == stage)?;
    let mut problems = Vec::new();
    for (i, required) in stage.checks.iter().enumerate() {
        let Some(result) = results.get(i).filter(|r| r.check == required.check) else {
            problems.push(format!(
                "no result for the required check {}",
                required.check
            ));
            continue;
        };
        match result.status {
            Status::Passed => {}
            Status::Failed => problems.push(format!("{} failed", result.check)),
            Status::Unverified => problems.push(format!("{} is unverified", result.check)),
        }
        for id in &required.reads {
            let path = definition.path_of(id).unwrap_or_default();
            if !result.inspected.iter().any(|d| d.path == path) {
                problems.push(format!("{} did not inspect {path}", result.check));
            }
        }
    }
    for result in results.iter().skip(stage.checks.len()) {
        problems.push(format!("{} is not a check of this stage", result.check));
    }
    let mut inspected: Vec<_> = results.iter().flat_map(|r| r.inspected.iter()).collect();
    inspected.sort_by(|a, b| a.path.cmp(&b.path));
    inspected.dedup_by(|a, b| a.path == b.path && a.sha256 == b.sha256);
    for then in &inspected {
        let now = ProjectPath::parse(&then.path)
            .map_err(|e| e.to_string())
            .and_then(|p| match workspace.digest(&p) {
                Ok(d) => Ok(Some(d)),
                Err(AccessError::Missing(_)) => Ok(None),
                Err(e) => Err(e.to_string()),
            });
        match now {
            Ok(Some(now)) if now.sha256 == then.sha256 && now.bytes == then.bytes => {}
            Ok(Some(_)) => {
                problems.push(format!("stale: {} changed since it was checked", then.path))
            }
            Ok(None) => problems.push(format!("stale: {} is gone since it was checked", then.path)),
            Err(e) => problems.push(format!("stale: {} cannot be read now: {e}", then.path)),
        }
    }
    let mut hasher = Sha256::new();
    let record = serde_json::json!({
        "definition": definition.id,
        "version": definition.version,
        "stage": stage.id,
        "checks": results.iter().map(|r| (&r.check, r.status)).collect::<Vec<_>>(),
        "inspected": inspected,
    });
    hasher.update(record.to_string().as_bytes());
    let fingerprint = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(Assessment {
        definition: definition.id.clone(),
        version: definition.version.clone(),
        stage: stage.id.clone(),
        fingerprint,
        eligible: problems.is_empty(),
        researcher_review_required: stage.researcher_gate,
        problems,
    })
}
