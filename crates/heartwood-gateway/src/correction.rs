//! Corrections of verified findings, to separate declared paths.
//!
//! The planner is read-only: it checks that the review is not stale (every file it captured
//! still has its bytes), that the finding's check can repair what it covers (for a byte
//! comparison only the reproduced copy is replaceable, never the original), and that the
//! destination is new and overlaps no reviewed or bound file. The rechecker runs the same
//! check on the new file with its unchanged dependencies: `not_observed` means only that the
//! defect was not seen in those bytes. A correction binding replaces the unaccepted stage's
//! declared output after a fresh recheck; it keeps every other binding, and the stage is
//! checked and accepted again as usual. [`step`] and [`bind`] are the flow every interface
//! follows: plan before the corrected file is written, recheck once it is, bind on request.

use heartwood_events::CommandKind;
use heartwood_events::workflow::{CapturedFile, ReviewView, WorkflowView};
use heartwood_workflow::Status;
use serde::Serialize;

use crate::error::CorrectionRefusal;
use crate::workspace::WorkspaceService;
use crate::{GatewayError, ProjectContext};

/// What a correction would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CorrectionPlan {
    /// The review whose finding it repairs.
    pub review_id: String,
    /// The finding's index in that review.
    pub finding: usize,
    /// The check that observed the defect (and will recheck the correction).
    pub check: String,
    /// The artifact replaced (its binding id).
    pub artifact: String,
    /// Its path now (kept as it is).
    pub original: String,
    /// The new file's path.
    pub destination: String,
}

/// The recheck of a correction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recheck {
    /// The plan rechecked.
    pub plan: CorrectionPlan,
    /// What the check found in the corrected files.
    pub result: RecheckResult,
    /// The check's reasons.
    pub reasons: Vec<String>,
    /// The files it read, by digest (the new file among them).
    pub inspected: Vec<CapturedFile>,
}

/// What a correction's recheck found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecheckResult {
    /// The finding's defect is not observed: the correction may be bound.
    NotObserved,
    /// The defect is still observed.
    Observed,
    /// The check could not stand on the files it read.
    Unverified,
}

impl std::fmt::Display for RecheckResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecheckResult::NotObserved => "not observed",
            RecheckResult::Observed => "observed",
            RecheckResult::Unverified => "unverified",
        })
    }
}

/// A correction's next step before it is bound: its plan while nothing is written at the
/// destination, its recheck once the corrected file is there. Serialized as the plan or the
/// recheck itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CorrectionStep {
    /// Nothing is written at the destination yet.
    Planned(CorrectionPlan),
    /// The corrected file is written and was rechecked.
    Rechecked(Recheck),
}

/// The next step of correcting finding `index` of the run's latest review to `destination`:
/// the recheck once a file is written there, the plan before.
pub fn step(
    project: &ProjectContext,
    w: &WorkflowView,
    index: usize,
    destination: &str,
) -> Result<CorrectionStep, GatewayError> {
    if project.root().join(destination).exists() {
        recheck(project, w, index, destination).map(CorrectionStep::Rechecked)
    } else {
        plan(project, w, index, destination).map(CorrectionStep::Planned)
    }
}

/// The command that binds the correction of finding `finding` of the run's latest review (the
/// gateway rechecks it afresh before binding).
pub fn bind(w: &WorkflowView, finding: u32, destination: String) -> CommandKind {
    let review_id = w
        .reviews
        .last()
        .map(|r| r.started.review_id.clone())
        .unwrap_or_default();
    CommandKind::WorkflowCorrect {
        revision: w.revision,
        review_id,
        finding,
        destination,
    }
}

/// Plans the correction of finding `index` of the run's latest review to `destination`,
/// which must not exist yet.
pub fn plan(
    project: &ProjectContext,
    w: &WorkflowView,
    index: usize,
    destination: &str,
) -> Result<CorrectionPlan, GatewayError> {
    planned(project, w, index, destination, false)
}

/// The plan's rules; `written` says whether the destination must exist already (a recheck)
/// or not yet (a plan).
fn planned(
    project: &ProjectContext,
    w: &WorkflowView,
    index: usize,
    destination: &str,
    written: bool,
) -> Result<CorrectionPlan, GatewayError> {
    let refuse = |why: CorrectionRefusal| Err(GatewayError::Correction(why));
    let Some(review) = w.reviews.last() else {
        return refuse(CorrectionRefusal::NoReview);
    };
    let Some(assessed) = &review.assessed else {
        return refuse(CorrectionRefusal::NotAssessed);
    };
    let Some(finding) = assessed.findings.get(index) else {
        return refuse(CorrectionRefusal::NoFinding {
            index,
            count: assessed.findings.len(),
        });
    };
    let service = WorkspaceService::open(project)?;
    stale(&service, review)?;
    let definition = crate::workflow_run::bound_definition(project, w)?;
    // The repairable output: the one file the finding's check covers at the finding's path.
    let covered = definition
        .stages
        .iter()
        .flat_map(|s| &s.checks)
        .filter(|c| c.check == finding.check)
        .flat_map(|c| &c.covers)
        .find(|a| definition.path_of(a) == Some(finding.path.as_str()));
    let Some(artifact) = covered else {
        return refuse(CorrectionRefusal::CoversNothing {
            check: finding.check.clone(),
            path: finding.path.clone(),
        });
    };
    let path = heartwood_workspace::ProjectPath::parse(destination).map_err(|source| {
        CorrectionRefusal::BadPath {
            destination: destination.to_owned(),
            source,
        }
    })?;
    let destination = path.as_str().to_owned();
    if review
        .started
        .evidence
        .iter()
        .any(|f| f.path == destination)
        || w.bindings.iter().any(|b| b.path == destination)
    {
        return refuse(CorrectionRefusal::Reviewed(destination));
    }
    let exists = service
        .snapshot(std::slice::from_ref(&destination), None)
        .is_ok();
    if exists && !written {
        return refuse(CorrectionRefusal::Exists(destination));
    }
    if !exists && written {
        return refuse(CorrectionRefusal::NotWritten(destination));
    }
    Ok(CorrectionPlan {
        review_id: review.started.review_id.clone(),
        finding: index,
        check: finding.check.clone(),
        artifact: artifact.clone(),
        original: finding.path.clone(),
        destination,
    })
}

/// Refuses a review whose captured files changed since.
fn stale(service: &WorkspaceService, review: &ReviewView) -> Result<(), GatewayError> {
    for f in &review.started.evidence {
        let now = service
            .snapshot(std::slice::from_ref(&f.path), None)
            .ok()
            .and_then(|s| s.files.into_iter().next());
        if now.is_none_or(|d| d.sha256 != f.sha256) {
            return Err(GatewayError::Drifted {
                what: f.path.clone(),
                since: "the review captured it",
                consequence: "the review is stale; review the stage again",
            });
        }
    }
    Ok(())
}

/// Rechecks a correction written at `destination`: the finding's check on the new file, its
/// other files the ones the review captured, unchanged.
pub fn recheck(
    project: &ProjectContext,
    w: &WorkflowView,
    index: usize,
    destination: &str,
) -> Result<Recheck, GatewayError> {
    let plan = planned(project, w, index, destination, true)?;
    let review = w.reviews.last().expect("planned from a review");
    let mut definition = crate::workflow_run::bound_definition(project, w)?;
    if let Some(a) = definition
        .artifacts
        .iter_mut()
        .find(|a| a.id == plan.artifact)
    {
        a.path.clone_from(&plan.destination);
    }
    let check = definition
        .stages
        .iter()
        .flat_map(|s| &s.checks)
        .find(|c| c.check == plan.check && c.covers.contains(&plan.artifact))
        .ok_or_else(|| CorrectionRefusal::NoCheck(plan.check.clone()))?;
    let service = WorkspaceService::open(project)?;
    let (files, digests) = service.check_files(&definition, check)?;
    let inspected: Vec<CapturedFile> = digests
        .iter()
        .map(|d| CapturedFile {
            path: d.path.clone(),
            sha256: d.sha256.clone(),
            bytes: d.bytes,
        })
        .collect();
    // Every dependency is the reviewed bytes, unchanged.
    for d in inspected.iter().filter(|d| d.path != plan.destination) {
        if !review.started.evidence.contains(d) {
            return Ok(Recheck {
                plan,
                result: RecheckResult::Unverified,
                reasons: vec![format!(
                    "{} is not the file the review captured, so the recheck cannot stand on it",
                    d.path
                )],
                inspected,
            });
        }
    }
    let result = heartwood_workflow::evaluate::run_on(&plan.check, &files, digests);
    let verdict = match result.status {
        Status::Passed => RecheckResult::NotObserved,
        Status::Failed => RecheckResult::Observed,
        Status::Unverified => RecheckResult::Unverified,
    };
    Ok(Recheck {
        plan,
        result: verdict,
        reasons: result.reasons,
        inspected,
    })
}
