//! The rules every command is held to under the lock, the same for every interface: a blank
//! text is refused, typed text is held to the rules of what it means now, a decision names the set and revision waiting, a workflow command follows
//! the run's rules, a used-up stage budget gets no further continuation, and otherwise the
//! projection's `available_commands` decide; a refusal says why and what to do.

use heartwood_events::{CommandKind, CommandName, Refusal, SessionProjection};

/// Why a task or guidance cannot be given as typed: it says nothing.
pub(super) fn blank_text(kind: &CommandKind) -> Option<Refusal> {
    match kind {
        CommandKind::SubmitTask { text, .. }
        | CommandKind::SendGuidance { text }
        | CommandKind::Say { text, .. }
            if text.trim().is_empty() =>
        {
            Some(Refusal::EmptyText)
        }
        CommandKind::Rename { title } if title.trim().is_empty() => Some(Refusal::EmptyTitle),
        _ => None,
    }
}

/// Whether the projection admits the command now; `Err` says why not.
pub(super) fn admissible(p: &SessionProjection, kind: &CommandKind) -> Result<(), Refusal> {
    if let Some(refusal) = blank_text(kind) {
        return Err(refusal);
    }
    // Typed text is held to the rules of what it means now.
    if let CommandKind::Say { text, policy } = kind {
        for meant in p.text_commands(text, *policy) {
            admissible(p, &meant)?;
        }
        return Ok(());
    }
    if let CommandKind::Decide {
        set_id, revision, ..
    } = kind
    {
        let Some(pending) = &p.pending else {
            return Err(Refusal::NothingPending {
                lifecycle: p.lifecycle,
            });
        };
        if &pending.set_id != set_id || pending.revision != *revision {
            return Err(Refusal::StaleDecision {
                set_id: set_id.clone(),
                revision: *revision,
                pending_set_id: pending.set_id.clone(),
                pending_revision: pending.revision,
                changed: Vec::new(),
            });
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
            Err(Refusal::BudgetUsedUp { limit })
        }
        _ if p.allows(kind.command_name()) => Ok(()),
        _ => Err(busy(p, kind.command_name())),
    }
}

/// The refusal of `command`, which the session does not take as it stands.
pub(super) fn busy(p: &SessionProjection, command: CommandName) -> Refusal {
    let available = p.available_commands.clone();
    if p.closed {
        Refusal::Closed { command, available }
    } else {
        Refusal::Busy {
            command,
            lifecycle: p.lifecycle,
            available,
        }
    }
}
