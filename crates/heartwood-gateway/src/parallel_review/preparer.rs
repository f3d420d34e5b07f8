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
        Err(why) => ReviewOffer::Sequential { why },
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
) -> Result<ParallelPreview, String> {
    let (qualification, file) =
        evidence::current(route, project.root().as_std_path()).map_err(|e| e.to_string())?;
    if !backend_runs_batches {
        return Err("this agent engine runs reviewers one at a time".to_owned());
    }
    let review = w.reviews.last().ok_or("no review is in progress")?;
    let parallelism = qualification
        .max_parallelism
        .min(u32::try_from(reviewers.len()).unwrap_or(u32::MAX));
    if parallelism < 2 {
        return Err(format!(
            "the route is qualified for {} at once",
            qualification.max_parallelism
        ));
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
fn enough_work_left(left: Option<u64>, reviewers: usize) -> Result<(), String> {
    let needed = u64::try_from(reviewers).unwrap_or(u64::MAX);
    match left {
        Some(left) if left < needed => Err(format!(
            "the stage has {left} model calls left, fewer than the {needed} reviewers need"
        )),
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
) -> Result<(), String> {
    let (now, _) =
        evidence::current(route, project.root().as_std_path()).map_err(|e| e.to_string())?;
    if now.record_sha256 != preview.qualification.record_sha256 {
        return Err("the route was qualified again since the preview".to_owned());
    }
    let files = crate::review_evidence::capture(project, w).map_err(|e| e.to_string())?;
    let changed: Vec<String> = preview
        .evidence
        .iter()
        .filter(|f| {
            !files
                .iter()
                .any(|g| g.path == f.path && g.sha256 == f.sha256)
        })
        .map(|f| format!("{} (changed since the preview)", f.path))
        .collect();
    if changed.is_empty() {
        Ok(())
    } else {
        Err(changed.join(", "))
    }
}

/// Under the lock: nothing paused, interrupted or cancelled the run since consent, the review
/// is the one previewed and the stage has the work left the batch needs.
pub(crate) fn recheck_state(
    p: &SessionProjection,
    events: &[std::sync::Arc<RecordedEvent>],
    preview: &ParallelPreview,
    consent_seq: u64,
) -> Result<u32, String> {
    let stopped = events
        .iter()
        .filter(|e| e.seq.get() > consent_seq)
        .find_map(|e| match e.event {
            Event::PauseRequested {} => Some("the session was paused after consent"),
            Event::InterruptRequested {} => Some("the session was interrupted after consent"),
            _ => None,
        });
    if let Some(why) = stopped {
        return Err(why.to_owned());
    }
    let w = p
        .workflow
        .as_ref()
        .ok_or("the session has no workflow run")?;
    if w.cancelled {
        return Err("the run was cancelled".to_owned());
    }
    let review = w.reviews.last().filter(|r| r.assessed.is_none());
    if review.is_none_or(|r| r.started.review_id != preview.review_id) {
        return Err("the review previewed is no longer the one in progress".to_owned());
    }
    enough_work_left(model_calls_left(w), preview.reviewers.len())?;
    if let Some(line) = w
        .current_stage()
        .and_then(|s| s.budget.iter().find(|l| l.exhausted))
    {
        return Err(format!(
            "the stage's budget is used up ({} {})",
            line.label, line.text
        ));
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
            let refused = recheck_state(&p, &events, &preview(), consent).expect_err("refused");
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
        let refused = recheck_state(&p, &events, &preview(), consent).expect_err("no run");
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
