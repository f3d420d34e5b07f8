//! The built-in parallel-review preparer: when a review's batch is shown, the offer (a
//! preview bound to the route's qualification, the review's captured files and the work
//! left); when the allowed batch is dispatched, the admission, which finds every part of the
//! consented preview still true or refuses with what changed.
//!
//! File and evidence reads happen here, off the session's lock; the parts that read the
//! projection are given a copy taken under it and are checked again under it by the caller.

use heartwood_events::review_execution::{ParallelPreview, ReviewChild, ReviewOffer};
use heartwood_events::workflow::WorkflowView;
use heartwood_events::{Event, RecordedEvent, SessionProjection};

use super::evidence::{self, RouteIdentity};
use crate::ProjectContext;

/// Why a review batch's reviewers run one at a time instead of at once (journaled as its
/// text: the offer's `why`, or the refusal's `reason`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum InOrder {
    /// The route's qualification cannot be read, or does not hold.
    #[error(transparent)]
    Qualification(#[from] evidence::EvidenceError),
    /// The agent engine has no batches.
    #[error("this agent engine runs reviewers one at a time")]
    EngineRunsOne,
    /// No review waits.
    #[error("no review is in progress")]
    NoReview,
    /// The route is qualified for fewer than two at once.
    #[error("the route is qualified for {0} at once")]
    QualifiedFor(u32),
    /// The stage cannot pay for one call per reviewer.
    #[error("the stage has {left} model calls left, fewer than the {needed} reviewers need")]
    TooFewCalls {
        /// Model calls left.
        left: u64,
        /// Reviewers, one call each at least.
        needed: u64,
    },
    /// The route was qualified again since the preview.
    #[error("the route was qualified again since the preview")]
    Requalified,
    /// The review's files could not be captured again.
    #[error(transparent)]
    Capture(Box<crate::GatewayError>),
    /// Files the preview named changed since.
    #[error("{}", .0.iter().map(|p| format!("{p} (changed since the preview)")).collect::<Vec<_>>().join(", "))]
    Changed(Vec<String>),
    /// A pause came after consent.
    #[error("the session was paused after consent")]
    Paused,
    /// A stop came after consent.
    #[error("the session was interrupted after consent")]
    Interrupted,
    /// The session runs no workflow.
    #[error("the session has no workflow run")]
    NoRun,
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// Another review is in progress now.
    #[error("the review previewed is no longer the one in progress")]
    OtherReview,
    /// The stage's budget is used up.
    #[error("the stage's budget is used up ({label} {text})")]
    BudgetUsed {
        /// The budget line's label.
        label: String,
        /// What it says.
        text: String,
    },
    /// The recheck off the lock did not finish.
    #[error("the recheck did not finish: {0}")]
    Unfinished(#[source] tokio::task::JoinError),
}

/// The review batch waiting in `p`: its set and reviewers, when the set is made of specialist
/// tasks proposed after an unassessed review started.
pub(crate) fn batch_in_review(p: &SessionProjection) -> Option<(String, u64, Vec<ReviewChild>)> {
    let w = p.workflow.as_ref()?;
    let review = w.reviews.last().filter(|r| r.assessed.is_none())?;
    let set = p.pending.as_ref()?;
    let reviewers = set
        .members
        .iter()
        .map(|m| {
            let role = p
                .specialists
                .iter()
                .find(|t| t.action_id == m.action_id)
                .map(|t| t.role.clone())?;
            let after = p.actions.iter().any(|a| {
                a.proposal.action_id == m.action_id && a.proposed_seq > review.started_seq
            });
            after.then_some(ReviewChild {
                action_id: m.action_id,
                role,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    (reviewers.len() >= 2).then(|| (set.set_id.to_string(), set.revision, reviewers))
}

/// The offer for the batch waiting in `p` (a copy), on `route`: parallel with its preview,
/// or sequential with why. `None` when no review batch waits.
pub(crate) fn offer(
    project: &ProjectContext,
    route: &RouteIdentity,
    backend_runs_batches: bool,
    p: &SessionProjection,
) -> Option<Event> {
    let (set_id, set_revision, reviewers) = batch_in_review(p)?;
    let w = p.workflow.as_ref()?;
    let offer = match preview(
        project,
        route,
        backend_runs_batches,
        w,
        (&set_id, set_revision, &reviewers),
    ) {
        Ok(preview) => ReviewOffer::Parallel {
            preview: Box::new(preview),
        },
        Err(why) => ReviewOffer::Sequential {
            why: why.to_string(),
        },
    };
    Some(Event::ReviewExecutionPrepared {
        set_id,
        reviewers,
        offer,
    })
}

fn preview(
    project: &ProjectContext,
    route: &RouteIdentity,
    backend_runs_batches: bool,
    w: &WorkflowView,
    (set_id, set_revision, reviewers): (&str, u64, &[ReviewChild]),
) -> Result<ParallelPreview, InOrder> {
    let (qualification, file) = evidence::current(route, project.root().as_std_path())?;
    if !backend_runs_batches {
        return Err(InOrder::EngineRunsOne);
    }
    let review = w.reviews.last().ok_or(InOrder::NoReview)?;
    let parallelism = qualification
        .max_parallelism
        .min(u32::try_from(reviewers.len()).unwrap_or(u32::MAX));
    if parallelism < 2 {
        return Err(InOrder::QualifiedFor(qualification.max_parallelism));
    }
    let model_calls_left = model_calls_left(w);
    enough_work_left(model_calls_left, reviewers.len())?;
    let mut preview = ParallelPreview {
        review_id: review.started.review_id.clone(),
        set_id: set_id.to_owned(),
        set_revision,
        reviewers: reviewers.to_vec(),
        evidence: review.started.evidence.clone(),
        parallelism,
        qualification,
        qualification_file: file.display().to_string(),
        model_calls_left,
        digest: String::new(),
    };
    preview.digest = digest(&preview);
    Ok(preview)
}

/// The digest consent names: of the preview's canonical form, its digest field empty.
pub(crate) fn digest(preview: &ParallelPreview) -> String {
    let mut bare = preview.clone();
    bare.digest = String::new();
    heartwood_events::to_canonical_bytes(&bare)
        .map(|bytes| heartwood_audit::Digest::of(&bytes).to_hex())
        .unwrap_or_default()
}

/// Each reviewer makes at least one model call: a batch the stage cannot pay for is not run
/// at once (one after another, the budget stops it where it runs out).
fn enough_work_left(left: Option<u64>, reviewers: usize) -> Result<(), InOrder> {
    let needed = u64::try_from(reviewers).unwrap_or(u64::MAX);
    match left {
        Some(left) if left < needed => Err(InOrder::TooFewCalls { left, needed }),
        _ => Ok(()),
    }
}

/// Model calls the current stage may still make.
fn model_calls_left(w: &WorkflowView) -> Option<u64> {
    let line = w
        .current_stage()?
        .budget
        .iter()
        .find(|l| l.label == "model calls")?;
    Some(line.limit.saturating_sub(line.used.unwrap_or(0)))
}

/// The consented preview of the set just allowed in `p`, with the seq of its consent.
pub(crate) fn consented(
    p: &SessionProjection,
    events: &[std::sync::Arc<RecordedEvent>],
) -> Option<(ParallelPreview, u64)> {
    let r = p.workflow.as_ref()?.review_execution.as_ref()?;
    let preview = r
        .preview
        .as_ref()
        .filter(|_| r.consented && r.admitted.is_none())?;
    let decided = p.last_decision.as_ref()?;
    if decided.set_id.as_str() != preview.set_id {
        return None;
    }
    let seq = events.iter().rev().find_map(|e| match &e.event {
        Event::ReviewParallelConsented { preview: d } if *d == preview.digest => Some(e.seq.get()),
        _ => None,
    })?;
    Some((preview.clone(), seq))
}

/// Off the lock: the qualification still holds for this route, and the review's files are
/// the bytes previewed.
pub(crate) fn recheck_files(
    project: &ProjectContext,
    route: &RouteIdentity,
    w: &WorkflowView,
    preview: &ParallelPreview,
) -> Result<(), InOrder> {
    let (now, _) = evidence::current(route, project.root().as_std_path())?;
    if now.record_sha256 != preview.qualification.record_sha256 {
        return Err(InOrder::Requalified);
    }
    let files =
        crate::review_evidence::capture(project, w).map_err(|e| InOrder::Capture(Box::new(e)))?;
    let changed: Vec<String> = preview
        .evidence
        .iter()
        .filter(|f| {
            !files
                .iter()
                .any(|g| g.path == f.path && g.sha256 == f.sha256)
        })
        .map(|f| f.path.clone())
        .collect();
    if changed.is_empty() {
        Ok(())
    } else {
        Err(InOrder::Changed(changed))
    }
}

/// Under the lock: nothing paused, interrupted or cancelled the run since consent, the review
/// is the one previewed and the stage has the work left the batch needs.
pub(crate) fn recheck_state(
    p: &SessionProjection,
    events: &[std::sync::Arc<RecordedEvent>],
    preview: &ParallelPreview,
    consent_seq: u64,
) -> Result<u32, InOrder> {
    let stopped = events
        .iter()
        .filter(|e| e.seq.get() > consent_seq)
        .find_map(|e| match e.event {
            Event::PauseRequested {} => Some(InOrder::Paused),
            Event::InterruptRequested {} => Some(InOrder::Interrupted),
            _ => None,
        });
    if let Some(why) = stopped {
        return Err(why);
    }
    let w = p.workflow.as_ref().ok_or(InOrder::NoRun)?;
    if w.cancelled {
        return Err(InOrder::Cancelled);
    }
    let review = w.reviews.last().filter(|r| r.assessed.is_none());
    if review.is_none_or(|r| r.started.review_id != preview.review_id) {
        return Err(InOrder::OtherReview);
    }
    enough_work_left(model_calls_left(w), preview.reviewers.len())?;
    if let Some(line) = w
        .current_stage()
        .and_then(|s| s.budget.iter().find(|l| l.exhausted))
    {
        return Err(InOrder::BudgetUsed {
            label: line.label.clone(),
            text: line.text.clone(),
        });
    }
    Ok(preview.parallelism)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use heartwood_events::review_execution::Qualification;
    use heartwood_events::{Seq, SessionId};

    use super::*;

    fn preview() -> ParallelPreview {
        ParallelPreview {
            review_id: "c-1".into(),
            set_id: "set-1".into(),
            set_revision: 7,
            reviewers: Vec::new(),
            evidence: Vec::new(),
            parallelism: 3,
            qualification: Qualification {
                route: "r".into(),
                route_label: "a route".into(),
                max_parallelism: 3,
                qualified_at: "2026-12-01T00:00:00Z".into(),
                expires_at: "2027-01-01T00:00:00Z".into(),
                record_sha256: "0".repeat(64),
            },
            qualification_file: "/etc/q.json".into(),
            model_calls_left: None,
            digest: "d".into(),
        }
    }

    fn at(seq: u64, event: Event) -> Arc<RecordedEvent> {
        Arc::new(RecordedEvent::new(Seq::new(seq).expect("seq"), None, event))
    }

    #[test]
    fn a_pause_or_interrupt_after_consent_refuses_the_admission_and_one_before_does_not_count() {
        let p = SessionProjection::empty(SessionId::parse("s1").expect("id"));
        let consent = 5;
        for (stop, said) in [
            (Event::PauseRequested {}, "paused after consent"),
            (Event::InterruptRequested {}, "interrupted after consent"),
        ] {
            let events = vec![
                at(4, Event::PauseRequested {}),
                at(
                    consent,
                    Event::ReviewParallelConsented {
                        preview: "d".into(),
                    },
                ),
                at(6, stop),
            ];
            let refused = recheck_state(&p, &events, &preview(), consent)
                .expect_err("refused")
                .to_string();
            assert!(refused.contains(said), "{refused}");
        }
        // Only the stop before consent: what is refused next is that there is no run.
        let events = vec![
            at(4, Event::PauseRequested {}),
            at(
                consent,
                Event::ReviewParallelConsented {
                    preview: "d".into(),
                },
            ),
        ];
        let refused = recheck_state(&p, &events, &preview(), consent)
            .expect_err("no run")
            .to_string();
        assert!(refused.contains("no workflow run"), "{refused}");
    }

    #[test]
    fn a_preview_digest_covers_every_part_of_it() {
        let base = preview();
        let d = digest(&base);
        assert_eq!(
            d,
            digest(&ParallelPreview {
                digest: "other".into(),
                ..base.clone()
            })
        );
        for changed in [
            ParallelPreview {
                parallelism: 2,
                ..base.clone()
            },
            ParallelPreview {
                set_revision: 8,
                ..base.clone()
            },
            ParallelPreview {
                model_calls_left: Some(9),
                ..base.clone()
            },
        ] {
            assert_ne!(d, digest(&changed));
        }
    }
}
