//! The review-execution summary in the projection: folded from the journal's preview,
//! consent, admission and refusal events and the reviewers' own progress, and worded once
//! here for the terminal, the page and the notebook.

use heartwood_events::review_execution::{
    ExecutionMode, ReviewChildState, ReviewExecution, ReviewOffer,
};
use heartwood_events::workflow::WorkflowControl;
use heartwood_events::{CommandKind, CommandName, Event, RecordedEvent, SessionProjection};

/// Folds one event into the summary; called for every event after the workflow's own fold.
pub(crate) fn apply(p: &mut SessionProjection, recorded: &RecordedEvent) {
    let Some(w) = p.workflow.as_mut() else {
        return;
    };
    match &recorded.event {
        Event::ReviewExecutionPrepared {
            set_id,
            reviewers,
            offer,
        } => {
            let (mode_why, preview) = match offer {
                ReviewOffer::Parallel { preview } => (
                    format!(
                        "parallel is offered: {} reviewers at once, qualified for {} until {}",
                        preview.parallelism,
                        preview.qualification.max_parallelism,
                        preview.qualification.expires_at
                    ),
                    Some((**preview).clone()),
                ),
                ReviewOffer::Sequential { why } => (why.clone(), None),
            };
            w.review_execution = Some(ReviewExecution {
                set_id: set_id.clone(),
                reviewers: reviewers.clone(),
                mode: ExecutionMode::Sequential,
                why: mode_why,
                preview,
                consented: false,
                admitted: None,
                children: Vec::new(),
                tokens: 0,
                said: Vec::new(),
            });
        }
        Event::ReviewParallelConsented { preview } => {
            if let Some(r) = w
                .review_execution
                .as_mut()
                .filter(|r| previewed(r, preview))
            {
                r.consented = true;
                r.why = "you consented to run these reviewers at once; they start when the set \
                         is allowed and the preview still holds"
                    .to_owned();
            }
        }
        Event::ReviewParallelAdmitted {
            preview,
            parallelism,
        } => {
            if let Some(r) = w
                .review_execution
                .as_mut()
                .filter(|r| previewed(r, preview))
            {
                r.mode = ExecutionMode::Parallel;
                r.admitted = Some(*parallelism);
                r.why = format!("admitted at dispatch: {parallelism} at once");
            }
        }
        Event::ReviewParallelRefused { preview, reason } => {
            if let Some(r) = w
                .review_execution
                .as_mut()
                .filter(|r| previewed(r, preview))
            {
                r.mode = ExecutionMode::Sequential;
                r.why = format!("one after another: parallel was refused at dispatch: {reason}");
            }
        }
        _ => {}
    }
}

fn previewed(r: &ReviewExecution, digest: &str) -> bool {
    r.preview.as_ref().is_some_and(|p| p.digest == digest)
}

/// Each reviewer's state and usage from the projection as it is now, and the lines.
fn refresh(p: &mut SessionProjection) {
    let Some(r) = p
        .workflow
        .as_ref()
        .and_then(|w| w.review_execution.as_ref())
    else {
        return;
    };
    let members: Vec<u64> = r.reviewers.iter().map(|c| c.action_id).collect();
    // One snapshot of the rows: the total is summed from exactly the rows shown.
    let children: Vec<ReviewChildState> = members
        .iter()
        .filter_map(|id| p.specialists.iter().find(|t| t.action_id == *id))
        .map(|t| ReviewChildState {
            action_id: t.action_id,
            role: t.role.clone(),
            state: t.state,
            tokens: (t.usage.calls > 0)
                .then_some(t.usage.prompt_tokens + t.usage.completion_tokens),
        })
        .collect();
    let tokens = children.iter().filter_map(|c| c.tokens).sum();
    let Some(r) = p
        .workflow
        .as_mut()
        .and_then(|w| w.review_execution.as_mut())
    else {
        return;
    };
    r.said = said(r, &children, tokens);
    r.children = children;
    r.tokens = tokens;
}

fn said(r: &ReviewExecution, children: &[ReviewChildState], tokens: u64) -> Vec<String> {
    let mode = match r.mode {
        ExecutionMode::Parallel => "Reviewers run at once",
        ExecutionMode::Sequential => "Reviewers run one after another",
    };
    let mut lines = vec![format!("{mode}: {}", r.why)];
    if let Some(q) = r.preview.as_ref().map(|p| &p.qualification) {
        lines.push(format!(
            "qualification: {} (record {}), qualified {}, expires {}",
            q.route_label,
            &q.record_sha256[..q.record_sha256.len().min(12)],
            q.qualified_at,
            q.expires_at
        ));
    }
    for c in children {
        lines.push(format!(
            "#{} {} · {} · {}",
            c.action_id,
            c.role,
            c.state.as_str(),
            c.tokens
                .map_or_else(|| "no usage yet".to_owned(), |t| format!("{t} tokens"))
        ));
    }
    if !children.is_empty() {
        lines.push(format!("together: {tokens} tokens"));
    }
    lines
}

/// Brings each reviewer's row up to date, and offers the consent control while the previewed set waits and no consent was given.
pub(crate) fn derive(p: &mut SessionProjection) {
    refresh(p);
    let Some(control) = consent_control(p) else {
        return;
    };
    if let Some(w) = p.workflow.as_mut() {
        w.controls.push(control);
    }
}

fn consent_control(p: &SessionProjection) -> Option<WorkflowControl> {
    let w = p.workflow.as_ref()?;
    let r = w.review_execution.as_ref().filter(|r| !r.consented)?;
    let preview = r.preview.as_ref()?;
    let pending = p.pending.as_ref()?;
    if pending.set_id.as_str() != preview.set_id || pending.revision != preview.set_revision {
        return None;
    }
    Some(WorkflowControl {
        command: CommandName::WorkflowReviewParallel,
        label: format!(
            "Run the {} reviewers {} at once (qualified until {})",
            preview.reviewers.len(),
            preview.parallelism,
            preview.qualification.expires_at
        ),
        revision: w.revision,
        fingerprint: Some(preview.digest.clone()),
        shell: format!(
            "heartwood workflow parallel {} {}",
            p.session.as_str(),
            preview.digest
        ),
        submit: CommandKind::WorkflowReviewParallel {
            revision: w.revision,
            preview: preview.digest.clone(),
        },
    })
}

/// Whether consent to `preview` at `revision` is admissible now: the control is offered and
/// names exactly this preview.
pub(crate) fn consent_admissible(
    p: &SessionProjection,
    revision: u64,
    preview: &str,
) -> Result<(), heartwood_events::Refusal> {
    use heartwood_events::{Refusal, RunPart};
    let control = consent_control(p).ok_or(Refusal::NoReviewBatch)?;
    if control.revision != revision {
        return Err(Refusal::StaleRun {
            part: RunPart::Revision,
            shown: revision.to_string(),
            current: control.revision.to_string(),
        });
    }
    if control.fingerprint.as_deref() != Some(preview) {
        return Err(Refusal::StaleRun {
            part: RunPart::Preview,
            shown: preview.to_owned(),
            current: control.fingerprint.unwrap_or_default(),
        });
    }
    Ok(())
}
