//! The evidence gate: whether a stage's check results are evidence that still holds.
//!
//! An assessment runs the stage's checks again and compares them with the saved results: a
//! saved file can be edited, so its statuses are never taken as evidence. Missing, failed,
//! unverified or unknown results, evidence that does not cover a file the check must read, any
//! file changed or gone since it was checked (even if the new file is consistent with the
//! changed data), and a saved status the checks do not give on the same bytes make the stage
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

/// Assesses `saved` results as evidence for `stage`. The saved results are not trusted: the
/// stage's checks run again now, on the files as they are, and the answer rests on what they
/// give. The saved results only say which bytes were checked; any file whose bytes differ now
/// is stale, and a saved status that differs from what the checks give on the same bytes means
/// the results were edited after they were written.
pub fn assess(
    workspace: &Workspace,
    definition: &Definition,
    stage: &str,
    saved: &[CheckResult],
) -> Option<Assessment> {
    let now = crate::evaluate::check_stage(workspace, definition, stage)?;
    assess_against(workspace, definition, stage, saved, &now)
}

/// Assesses `saved` results against `now`, the stage's checks run on the files as they are.
/// Results this process has just computed are their own `now`: nothing to run twice.
pub fn assess_against(
    workspace: &Workspace,
    definition: &Definition,
    stage: &str,
    saved: &[CheckResult],
    now: &[CheckResult],
) -> Option<Assessment> {
    let stage = definition.stages.iter().find(|s| s.id == stage)?;
    let mut problems = Vec::new();
    for ((required, recomputed), i) in stage.checks.iter().zip(now).zip(0..) {
        let Some(then) = saved.get(i).filter(|r| r.check == required.check) else {
            problems.push(format!(
                "no result for the required check {}",
                required.check
            ));
            continue;
        };
        for id in &required.reads {
            let path = definition.path_of(id).unwrap_or_default();
            if !then.inspected.iter().any(|d| d.path == path) {
                problems.push(format!("{} did not inspect {path}", then.check));
            }
        }
        let mut current = true;
        for checked in &then.inspected {
            let read_now = recomputed.inspected.iter().find(|d| d.path == checked.path);
            match read_now {
                Some(d) if d.sha256 == checked.sha256 && d.bytes == checked.bytes => {}
                Some(_) => {
                    current = false;
                    problems.push(format!(
                        "stale: {} changed since it was checked",
                        checked.path
                    ));
                }
                None => {
                    current = false;
                    problems.push(stale_unread(workspace, &checked.path));
                }
            }
        }
        match recomputed.status {
            Status::Passed => {}
            Status::Failed => problems.push(format!("{} failed", recomputed.check)),
            Status::Unverified => problems.push(format!("{} is unverified", recomputed.check)),
        }
        if current && then.status != recomputed.status {
            problems.push(format!(
                "the saved result of {} says {:?}, but the check gives {:?} on the same files: \
                 the results were changed after they were written, and are not evidence",
                then.check, then.status, recomputed.status
            ));
        }
    }
    for result in saved.iter().skip(stage.checks.len()) {
        problems.push(format!("{} is not a check of this stage", result.check));
    }
    problems.dedup();
    let mut inspected: Vec<_> = now.iter().flat_map(|r| r.inspected.iter()).collect();
    inspected.sort_by(|a, b| a.path.cmp(&b.path));
    inspected.dedup_by(|a, b| a.path == b.path && a.sha256 == b.sha256);
    let mut hasher = Sha256::new();
    let record = serde_json::json!({
        "definition": definition.id,
        "version": definition.version,
        "stage": stage.id,
        "checks": now.iter().map(|r| (&r.check, r.status)).collect::<Vec<_>>(),
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

/// Why a file a saved result read was not read again: gone, or unreadable.
fn stale_unread(workspace: &Workspace, path: &str) -> String {
    let now = ProjectPath::parse(path)
        .map_err(|e| e.to_string())
        .and_then(|p| match workspace.digest(&p) {
            Ok(_) => Ok(true),
            Err(AccessError::Missing(_)) => Ok(false),
            Err(e) => Err(e.to_string()),
        });
    match now {
        Ok(true) => format!("stale: {path} changed since it was checked"),
        Ok(false) => format!("stale: {path} is gone since it was checked"),
        Err(e) => format!("stale: {path} cannot be read now: {e}"),
    }
}
