//! Independent review evidence: a stage's files captured before a reviewer is asked, and the
//! reviewer's proposals assessed by the gateway's own checks once the review settles.
//!
//! A proposal is the reviewer's claim; a finding is what a maintained check observed on the
//! captured bytes. Exactly four conditions can be observed (a plan that does not fit, Python
//! that is empty or does not parse, model results that disagree with a recomputation, a
//! reproduced artifact whose bytes differ); every other claim stays unverified, and so does one
//! whose files are not the bytes the review captured. Severity comes from the check. The
//! assessment starts no model work, grants nothing and advances no stage.

use std::collections::BTreeMap;

use heartwood_events::workflow::{
    AssessedProposal, CapturedFile, Finding, ReviewAssessed, ReviewCondition, ReviewProposal,
    ReviewStarted, ReviewView, Verdict, WorkflowView,
};
use heartwood_events::{ActionState, SessionProjection};
use heartwood_workflow::Status;

use crate::workspace::WorkspaceService;
use crate::{GatewayError, ProjectContext};

/// The specialist role whose proposals a review collects.
const REVIEWER: &str = "reviewer";

/// The stage's declared files (what it consumes and produces), captured by digest and byte
/// count through the confined reader. Files that do not exist are not captured.
pub(crate) fn capture(
    project: &ProjectContext,
    w: &WorkflowView,
) -> Result<Vec<CapturedFile>, GatewayError> {
    let stage = w
        .current
        .as_deref()
        .ok_or(crate::error::WorkflowUnavailable::NoCurrentStage)?;
    let definition = crate::workflow_run::bound_definition(project, w)?;
    let spec = definition
        .stages
        .iter()
        .find(|s| s.id == stage)
        .ok_or_else(|| crate::error::WorkflowUnavailable::no_stage(&definition, stage))?;
    let mut paths: Vec<String> = spec
        .consumes
        .iter()
        .chain(&spec.produces)
        .filter_map(|id| definition.path_of(id).map(str::to_owned))
        .collect();
    paths.sort();
    paths.dedup();
    let service = WorkspaceService::open(project)?;
    Ok(paths
        .iter()
        .filter_map(|p| service.snapshot(std::slice::from_ref(p), None).ok())
        .filter_map(|s| s.files.into_iter().next())
        .map(|d| CapturedFile {
            path: d.path,
            sha256: d.sha256,
            bytes: d.bytes,
        })
        .collect())
}

/// The agent's task for a review: ask the reviewer about the captured files.
pub(crate) fn prompt(w: &WorkflowView, started: &ReviewStarted) -> String {
    let files: Vec<String> = started
        .evidence
        .iter()
        .map(|f| format!("- `{}` ({} bytes)", f.path, f.bytes))
        .collect();
    let stage = w
        .current_stage()
        .map_or_else(|| started.stage.clone(), |s| s.spec.title.clone());
    format!(
        "Review of the stage “{stage}” of the workflow “{}”.\n\nResearch question: {}\n\n\
         Read these files, then ask the `{REVIEWER}` specialist with the `task` tool to review \
         them: paste the content of each into the prompt (it sees nothing else), with the \
         research question.\n{}\n\nDo not change any file. When the reviewer has answered, \
         call `finish` with a short summary (its `outcome`: status `completed`, artifacts \
         empty).",
        w.title,
        w.question,
        files.join("\n")
    )
}

/// A review that has settled and is not assessed yet, with the reviewer proposals that belong
/// to it (from tasks proposed after it started, in this session).
pub(crate) fn due(p: &SessionProjection) -> Option<(ReviewView, Vec<(u64, ReviewProposal)>)> {
    let w = p.workflow.as_ref()?;
    let review = w.reviews.last().filter(|r| r.assessed.is_none())?;
    if !p.is_settled() || p.pending.is_some() {
        return None;
    }
    let proposals = p
        .specialists
        .iter()
        .filter(|t| t.role == REVIEWER && t.state == ActionState::Completed)
        .filter(|t| {
            p.actions
                .iter()
                .any(|a| a.proposal.action_id == t.action_id && a.proposed_seq > review.started_seq)
        })
        .flat_map(|t| {
            t.proposals
                .iter()
                .flatten()
                .map(move |proposal| (t.action_id, proposal.clone()))
        })
        .collect();
    Some((review.clone(), proposals))
}

/// Assesses `proposals` against the review's captured evidence, re-read now.
pub(crate) fn assess(
    project: &ProjectContext,
    w: &WorkflowView,
    review: &ReviewView,
    proposals: Vec<(u64, ReviewProposal)>,
) -> ReviewAssessed {
    let assessed: Vec<AssessedProposal> = proposals
        .into_iter()
        .map(|(task_action, proposal)| {
            let (verdict, reasons) = observe(project, w, &review.started, &proposal);
            AssessedProposal {
                task_action,
                proposal,
                verdict,
                reasons,
            }
        })
        .collect();
    // Equivalent conditions on the same evidence make one finding, keeping every claim.
    let mut grouped: BTreeMap<(String, String), Finding> = BTreeMap::new();
    for a in assessed.iter().filter(|a| a.verdict == Verdict::Verified) {
        let key = (
            format!("{:?}", a.proposal.condition),
            a.proposal.path.clone(),
        );
        grouped
            .entry(key)
            .or_insert_with(|| Finding {
                condition: a.proposal.condition,
                path: a.proposal.path.clone(),
                check: check_for(a.proposal.condition)
                    .unwrap_or_default()
                    .to_owned(),
                severity: heartwood_events::workflow::Severity::Defect,
                observed: a.reasons.clone(),
                claims: Vec::new(),
            })
            .claims
            .push((a.task_action, a.proposal.claim.clone()));
    }
    let findings: Vec<Finding> = grouped.into_values().collect();
    let record = serde_json::json!({
        "review": review.started,
        "proposals": assessed,
        "findings": findings,
    });
    ReviewAssessed {
        run_id: w.run_id.clone(),
        review_id: review.started.review_id.clone(),
        proposals: assessed,
        findings,
        record_sha256: heartwood_audit::Digest::of(record.to_string().as_bytes()).to_hex(),
    }
}

/// The maintained check that can observe `condition`.
fn check_for(condition: ReviewCondition) -> Option<&'static str> {
    match condition {
        ReviewCondition::PlanIncompatible => Some("analysis_plan"),
        ReviewCondition::PythonInvalid => Some("python_syntax"),
        ReviewCondition::ResultsInconsistent => Some("univariate_ols"),
        ReviewCondition::ArtifactMismatch => Some("byte_comparison"),
        ReviewCondition::Other => None,
    }
}

/// Runs the check for a proposal's condition on the captured bytes of the file it names.
fn observe(
    project: &ProjectContext,
    w: &WorkflowView,
    started: &ReviewStarted,
    proposal: &ReviewProposal,
) -> (Verdict, Vec<String>) {
    let unverified = |why: String| (Verdict::Unverified, vec![why]);
    let Some(check_id) = check_for(proposal.condition) else {
        return unverified("Heartwood cannot check this kind of claim".into());
    };
    let Ok(definition) = crate::workflow_run::bound_definition(project, w) else {
        return unverified("the run's definition cannot be read".into());
    };
    // The check that covers the file the proposal names.
    let check = definition.stages.iter().flat_map(|s| &s.checks).find(|c| {
        c.check == check_id
            && c.covers
                .iter()
                .any(|a| definition.path_of(a) == Some(proposal.path.as_str()))
    });
    let Some(check) = check else {
        return unverified(format!(
            "{check_id} does not cover {}, so the claim cannot be checked",
            proposal.path
        ));
    };
    let Ok(service) = WorkspaceService::open(project) else {
        return unverified("the project cannot be read".into());
    };
    let (files, digests) = match service.check_files(&definition, check) {
        Ok(read) => read,
        Err(why) => return unverified(why.to_string()),
    };
    // Only the bytes the review captured count.
    for d in &digests {
        let captured = started
            .evidence
            .iter()
            .any(|c| c.path == d.path && c.sha256 == d.sha256 && c.bytes == d.bytes);
        if !captured {
            return unverified(format!(
                "{} is not what the review captured (not among its files, or changed since)",
                d.path
            ));
        }
    }
    let result = heartwood_workflow::evaluate::run_on(check_id, &files, digests);
    match result.status {
        Status::Failed => (Verdict::Verified, result.reasons),
        Status::Passed => (
            Verdict::NotObserved,
            vec![format!(
                "{check_id} did not observe it in the captured bytes"
            )],
        ),
        Status::Unverified => (Verdict::Unverified, result.reasons),
    }
}
