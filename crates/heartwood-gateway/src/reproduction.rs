//! A reproduction stage's rerun as evidence. Identical bytes alone prove nothing (a copy has
//! them too); what the gateway accepts is a chain it observed itself, recorded in the session:
//!
//! 1. **Preparation**: as the researcher allows a lone terminal action in a reproduction stage,
//!    the run's inputs and accepted results are as relied on and the destination is absent
//!    (read through the confined workspace reader, before the session's lock is taken).
//! 2. **Completion**: when that action's observation arrives live, the destination's and the
//!    protected files' digests are captured. A completion that was not observed live (the
//!    process stopped in between, or a replay) is never made up afterwards.
//! 3. **Assessment**: the stage's byte comparison counts as passed only when the compared file
//!    is the one the rerun wrote and the protected files are still as they were.
//!
//! This is the bounded reproduction contract, not a sandbox: the researcher reviewed the
//! command that ran.

use heartwood_events::SessionProjection;
use heartwood_events::workflow::{
    InspectedFile, ReproductionCompleted, ReproductionPrepared, WorkflowView,
};
use heartwood_workflow::{CheckResult, Status};

use crate::ProjectContext;
use crate::workspace::WorkspaceService;

/// The check whose identical bytes need a reviewed rerun.
const COMPARISON: &str = "byte_comparison";

/// The original and the destination of the current stage's byte comparison, when the current
/// stage reproduces something.
fn compared(project: &ProjectContext, w: &WorkflowView) -> Option<(String, String)> {
    let stage = w.current.as_deref()?;
    let definition = crate::workflow_run::bound_definition(project, w).ok()?;
    let check = definition
        .stages
        .iter()
        .find(|s| s.id == stage)?
        .checks
        .iter()
        .find(|c| c.check == COMPARISON)?;
    let path = |i: usize| {
        check
            .reads
            .get(i)
            .and_then(|id| definition.path_of(id))
            .map(str::to_owned)
    };
    Some((path(0)?, path(1)?))
}

/// The preparation to record with an allow decision, when it prepares a rerun: the pending
/// set is one terminal action in a reproduction stage, nothing the run relies on changed, and
/// the destination does not exist yet. `None` records nothing (the stage's comparison then
/// stays unverified, as for any copy).
pub(crate) fn prepare(
    project: &ProjectContext,
    p: &SessionProjection,
) -> Option<ReproductionPrepared> {
    let w = p.workflow.as_ref()?;
    let set = p.pending.as_ref()?;
    let [action] = set.members.as_slice() else {
        return None;
    };
    if action.tool != "terminal" {
        return None;
    }
    let (_, destination) = compared(project, w)?;
    if !crate::workflow_run::changed_evidence(project, w).is_empty() {
        return None;
    }
    let service = WorkspaceService::open(project).ok()?;
    if service
        .snapshot(std::slice::from_ref(&destination), None)
        .is_ok()
    {
        return None; // it exists already: whatever the rerun writes could not be told apart
    }
    Some(ReproductionPrepared {
        run_id: w.run_id.clone(),
        stage: w.current.clone()?,
        action_id: action.action_id,
        destination,
        protected: digests(&service, &protected_paths(w))?,
    })
}

/// The files a rerun must leave alone: everything the run relies on.
fn protected_paths(w: &WorkflowView) -> Vec<String> {
    let mut paths: Vec<String> = crate::workflow_run::relied_on(w)
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    paths.dedup();
    paths
}

fn digests(service: &WorkspaceService, paths: &[String]) -> Option<Vec<InspectedFile>> {
    let snapshot = service.snapshot(paths, None).ok()?;
    Some(
        snapshot
            .files
            .into_iter()
            .map(|d| InspectedFile {
                path: d.path,
                sha256: Some(d.sha256),
            })
            .collect(),
    )
}

/// A prepared rerun whose action has just ended and whose completion is not recorded yet.
pub(crate) fn completion_due(p: &SessionProjection) -> Option<ReproductionPrepared> {
    let r = p.workflow.as_ref()?.reproduction.as_ref()?;
    if r.completed.is_some() {
        return None;
    }
    let action = p
        .actions
        .iter()
        .find(|a| a.proposal.action_id == r.prepared.action_id)?;
    action.state.has_run().then(|| r.prepared.clone())
}

/// The completion of `prepared`, with the digests now (read outside the session's lock).
pub(crate) fn complete(
    project: &ProjectContext,
    prepared: &ReproductionPrepared,
    exit_code: Option<i64>,
) -> ReproductionCompleted {
    let service = WorkspaceService::open(project).ok();
    let one = |path: &str| {
        service
            .as_ref()
            .and_then(|s| s.snapshot(&[path.to_owned()], None).ok())
            .and_then(|s| s.files.into_iter().next())
            .map(|d| d.sha256)
    };
    ReproductionCompleted {
        run_id: prepared.run_id.clone(),
        stage: prepared.stage.clone(),
        action_id: prepared.action_id,
        exit_code,
        output: InspectedFile {
            path: prepared.destination.clone(),
            sha256: one(&prepared.destination),
        },
        protected: prepared
            .protected
            .iter()
            .map(|f| InspectedFile {
                path: f.path.clone(),
                sha256: one(&f.path),
            })
            .collect(),
    }
}

/// Judges the stage's byte comparison with the rerun's evidence: identical bytes pass only
/// when they are what the observed rerun wrote, it exited 0, and nothing it had to leave alone
/// changed (then or since). Otherwise the comparison stays unverified, saying what is missing.
pub(crate) fn judge(project: &ProjectContext, w: &WorkflowView, results: &mut [CheckResult]) {
    let Some(comparison) = results
        .iter_mut()
        .find(|r| r.check == COMPARISON && r.status == Status::Unverified)
    else {
        return;
    };
    let missing = match evidence_gap(project, w, comparison) {
        None => {
            comparison.status = Status::Passed;
            comparison.reasons.clear();
            return;
        }
        Some(gap) => gap,
    };
    comparison.reasons.push(missing);
}

/// What is missing from the rerun's evidence for the compared bytes, or `None`.
fn evidence_gap(
    project: &ProjectContext,
    w: &WorkflowView,
    comparison: &CheckResult,
) -> Option<String> {
    let Some(r) = &w.reproduction else {
        return Some(
            "no reviewed rerun wrote it: allow the rerun as a lone terminal action while the \
             destination does not exist yet"
                .into(),
        );
    };
    let Some(done) = &r.completed else {
        return Some(format!(
            "the rerun (action #{}) has no completion observed live, so what it wrote is unknown",
            r.prepared.action_id
        ));
    };
    if done.exit_code != Some(0) {
        return Some(format!(
            "the rerun (action #{}) did not exit 0",
            done.action_id
        ));
    }
    let compared_now = comparison
        .inspected
        .iter()
        .find(|d| d.path == r.prepared.destination)
        .map(|d| d.sha256.as_str());
    if compared_now.is_none() || done.output.sha256.as_deref() != compared_now {
        return Some(format!(
            "{} is not the file the rerun (action #{}) wrote",
            r.prepared.destination, done.action_id
        ));
    }
    if done.protected != r.prepared.protected {
        return Some(format!(
            "the rerun (action #{}) changed files it had to leave alone",
            done.action_id
        ));
    }
    let service = WorkspaceService::open(project).ok()?;
    let paths: Vec<String> = r
        .prepared
        .protected
        .iter()
        .map(|f| f.path.clone())
        .collect();
    if digests(&service, &paths).as_ref() != Some(&r.prepared.protected) {
        return Some("files the rerun relied on changed since it ran".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use heartwood_events::workflow::{BudgetUse, ReproductionView};
    use heartwood_workspace::FileDigest;

    use super::*;

    fn sha(bytes: &[u8]) -> String {
        heartwood_audit::Digest::of(bytes).to_hex()
    }

    fn file(path: &str, bytes: &[u8]) -> InspectedFile {
        InspectedFile {
            path: path.into(),
            sha256: Some(sha(bytes)),
        }
    }

    /// A run whose reproduction wrote `out.json` ("result") and had to leave `in.csv` ("data")
    /// alone; `completed` says whether the completion was observed.
    fn run(completed: bool) -> WorkflowView {
        let prepared = ReproductionPrepared {
            run_id: "w-1".into(),
            stage: "reproduction".into(),
            action_id: 7,
            destination: "out.json".into(),
            protected: vec![file("in.csv", b"data")],
        };
        let completed = completed.then(|| ReproductionCompleted {
            run_id: "w-1".into(),
            stage: "reproduction".into(),
            action_id: 7,
            exit_code: Some(0),
            output: file("out.json", b"result"),
            protected: prepared.protected.clone(),
        });
        WorkflowView {
            run_id: "w-1".into(),
            definition: "tabular-ols".into(),
            version: "1".into(),
            title: "t".into(),
            source: None,
            definition_sha256: None,
            question: "q".into(),
            revision: 9,
            bindings: Vec::new(),
            stages: Vec::new(),
            current: Some("reproduction".into()),
            assessment: None,
            turn: None,
            used: BudgetUse::default(),
            reproduction: Some(ReproductionView {
                prepared,
                completed,
            }),
            reviews: Vec::new(),
            review_execution: None,
            cancelled: false,
            controls: Vec::new(),
        }
    }

    /// The comparison as the check leaves identical bytes: unverified, `out.json` read as
    /// `reproduced`.
    fn identical(reproduced: &[u8]) -> CheckResult {
        let mut result = CheckResult::new(COMPARISON);
        result.mark_unverified("the bytes are identical");
        result.inspected.push(FileDigest {
            path: "out.json".into(),
            sha256: sha(reproduced),
            bytes: reproduced.len() as u64,
        });
        result
    }

    #[test]
    fn identical_bytes_pass_only_as_what_the_observed_rerun_wrote() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("in.csv"), "data").expect("input");
        let project = ProjectContext::at(dir.path()).expect("project");

        let mut results = vec![identical(b"result")];
        judge(&project, &run(true), &mut results);
        assert_eq!(
            results[0].status,
            Status::Passed,
            "{:?}",
            results[0].reasons
        );

        // No completion observed live (a restart in between): it stays unverified.
        let mut results = vec![identical(b"result")];
        judge(&project, &run(false), &mut results);
        assert_eq!(results[0].status, Status::Unverified);
        assert!(results[0].reasons[1].contains("no completion observed live"));

        // The compared file is not what the rerun wrote (replaced since).
        let mut results = vec![identical(b"other")];
        judge(&project, &run(true), &mut results);
        assert_eq!(results[0].status, Status::Unverified);
        assert!(results[0].reasons[1].contains("is not the file the rerun"));

        // A protected file changed after the rerun.
        std::fs::write(dir.path().join("in.csv"), "edited").expect("edit");
        let mut results = vec![identical(b"result")];
        judge(&project, &run(true), &mut results);
        assert_eq!(results[0].status, Status::Unverified);
        assert!(results[0].reasons[1].contains("changed since it ran"));
    }
}
