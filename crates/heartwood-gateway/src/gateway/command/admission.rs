//! The rules every command is held to under the lock, the same for every interface: a blank
//! text is refused, a decision names the set and revision waiting, a workflow command follows
//! the run's rules, a used-up stage budget gets no further continuation, and otherwise the
//! projection's `available_commands` decide; a refusal says why and what to do.

use heartwood_events::{CommandKind, CommandName, Lifecycle, SessionProjection};

/// Why a task or guidance cannot be given as typed: it says nothing.
pub(super) fn blank_text(kind: &CommandKind) -> Option<String> {
    match kind {
        CommandKind::SubmitTask { text, .. } | CommandKind::SendGuidance { text }
            if text.trim().is_empty() =>
        {
            Some("the text is empty; say what the agent should do".to_owned())
        }
        CommandKind::Rename { title } if title.trim().is_empty() => {
            Some("the title is empty; give the session a title in words".to_owned())
        }
        _ => None,
    }
}

/// Whether the projection admits the command now; `Err` says why not and what to do.
pub(super) fn admissible(p: &SessionProjection, kind: &CommandKind) -> Result<(), String> {
    if let Some(reason) = blank_text(kind) {
        return Err(reason);
    }
    if let CommandKind::Decide {
        set_id, revision, ..
    } = kind
    {
        let Some(pending) = &p.pending else {
            return Err(format!(
                "there is no action set waiting for a decision; the session is {}",
                p.lifecycle.as_str()
            ));
        };
        if &pending.set_id != set_id {
            return Err(format!(
                "set {set_id} is not the pending set; set {} (revision {}) is waiting for a decision",
                pending.set_id, pending.revision
            ));
        }
        if pending.revision != *revision {
            return Err(format!(
                "revision {revision} of set {set_id} is stale; the set is at revision {}. Review \
                 it as shown now and decide again",
                pending.revision
            ));
        }
    }
    match kind {
        CommandKind::WorkflowStart { .. }
        | CommandKind::WorkflowRun { .. }
        | CommandKind::WorkflowEvaluate { .. }
        | CommandKind::WorkflowAccept { .. }
        | CommandKind::WorkflowCancel { .. }
        | CommandKind::WorkflowReview { .. }
        | CommandKind::WorkflowCorrect { .. } => crate::workflow_run::admissible(p, kind),
        CommandKind::WorkflowReviewParallel { revision, preview } => {
            crate::parallel_review::consent_admissible(p, *revision, preview)
        }
        CommandKind::SubmitTask { .. } | CommandKind::SendGuidance { .. } | CommandKind::Resume
            if let Some(limit) = crate::workflow_run::used_up(p) =>
        {
            Err(format!(
                "the workflow stage's budget is used up ({limit}): the agent gets no further \
                 model continuation in this stage; evaluate what it wrote, or cancel the run"
            ))
        }
        _ if p.allows(kind.command_name()) => Ok(()),
        _ => Err(busy(p, kind.command_name())),
    }
}

pub(super) fn busy(p: &SessionProjection, command: CommandName) -> String {
    let hint = match (command, p.lifecycle) {
        (CommandName::SubmitTask, Lifecycle::Running | Lifecycle::Paused) => {
            "; a task is already active: send guidance, or wait for it to finish"
        }
        (CommandName::SubmitTask, Lifecycle::WaitingForDecision) => {
            "; decide the pending action set first"
        }
        _ => "",
    };
    let available: Vec<&str> = p.available_commands.iter().map(|c| c.as_str()).collect();
    format!(
        "`{command}` is not available while the session is {}{hint} (available now: {})",
        p.lifecycle.as_str(),
        available.join(", ")
    )
}
