//! What the run offers now: budget lines, the controls that make sense at this point, and
//! whether a workflow command is admissible (the same rules for every interface).

use super::*;
use heartwood_events::{Refusal, RunPart};

/// Refreshes what follows from the rest of the projection: a stage whose turn has ended
/// awaits evaluation (and has a structured outcome or says why not), each stage's budget
/// line by line, the run's totals, and the controls offered now (none while work is active
/// or a set waits).
pub(crate) fn derive(p: &mut SessionProjection) {
    // The turn and the budget lines were settled by `apply`, at every event.
    let ended = work_ended(p);
    let Some(w) = &mut p.workflow else {
        return;
    };
    w.used = w.stages.iter().fold(BudgetUse::default(), |mut total, s| {
        total.model_calls += s.used.model_calls;
        total.tokens = total.tokens.zip(s.used.tokens).map(|(a, b)| a + b);
        total.actions += s.used.actions;
        total.seconds += s.used.seconds;
        total
    });
    w.controls = if ended && !w.cancelled {
        controls(p.session.as_str(), w)
    } else {
        Vec::new()
    };
    // Said where every interface shows it, the review included.
    if let Some(limit) = used_up(p)
        && p.pending.is_some()
    {
        p.status_line.push_str(&format!(
            " The stage's budget is used up ({limit}): this set can still be decided, and then \
             the agent pauses."
        ));
    }
}

/// What a settled session waits for from the researcher: a set's decision, or its workflow
/// run's acceptance, correction, evaluation or next stage, with the steps that continue it.
/// One rule, so every interface that lists or shows a session (the session list, `status`,
/// the page, the notebook, the terminal, a batch's results) says the run is not done instead
/// of the agent's "Finished.". `None` while work is active or nothing waits.
pub(crate) fn waits_for(p: &SessionProjection) -> Option<WaitsFor> {
    if let Some(set) = p.pending.as_ref().filter(|_| p.is_settled()) {
        let decide = |answer: &str, label: &str| NextStep {
            label: label.to_owned(),
            command: CommandName::Decide,
            shell: format!(
                "heartwood decide {} --set {} --revision {} {answer}",
                p.session, set.set_id, set.revision
            ),
        };
        return Some(WaitsFor {
            kind: WaitKind::Decision,
            stage: p.workflow.as_ref().and_then(|w| w.current.clone()),
            text: p.status_line.clone(),
            steps: vec![
                decide("allow", "Allow the set once"),
                decide("reject", "Reject the set"),
            ],
        });
    }
    let w = p.workflow.as_ref().filter(|w| !w.cancelled && !p.closed)?;
    if w.controls.is_empty() {
        return None;
    }
    let stage = w.current_stage()?;
    let (kind, why) = match stage.status {
        StageStatus::AwaitingResearcher => (
            WaitKind::WorkflowAcceptance,
            "its checks passed and it waits for your acceptance",
        ),
        StageStatus::AwaitingEvaluation => match &w.assessment {
            Some(a) if !a.eligible => (
                WaitKind::WorkflowCorrection,
                "its checks did not pass; correct it, run it again or cancel",
            ),
            _ => (
                WaitKind::WorkflowEvaluation,
                "its turn ended and it waits for evaluation",
            ),
        },
        StageStatus::Pending => (
            WaitKind::WorkflowNextStage,
            "it is next and waits to be run",
        ),
        StageStatus::Running | StageStatus::Accepted => return None,
    };
    // The controls' labels: each interface offers them as its own keys, buttons or commands.
    let labels: Vec<&str> = w.controls.iter().map(|c| c.label.as_str()).collect();
    Some(WaitsFor {
        kind,
        stage: Some(stage.spec.id.clone()),
        text: format!(
            "Workflow waiting for you at stage {} ({why}): {}.",
            stage.spec.title,
            labels.join("; ")
        ),
        steps: w
            .controls
            .iter()
            .map(|c| NextStep {
                label: c.label.clone(),
                command: c.command,
                shell: c.shell.clone(),
            })
            .collect(),
    })
}

/// Whether the session's work has ended: settled, or paused because the current stage's
/// budget is used up (nothing may continue such a turn).
pub(super) fn work_ended(p: &SessionProjection) -> bool {
    let exhausted = p
        .workflow
        .as_ref()
        .and_then(WorkflowView::current_stage)
        .and_then(StageView::exhausted)
        .is_some();
    match p.lifecycle {
        Lifecycle::Idle | Lifecycle::Finished | Lifecycle::Failed | Lifecycle::Stuck => true,
        Lifecycle::Paused => exhausted,
        _ => false,
    }
}

/// A stage's budget, limit by limit, against what its turns used.
pub(super) fn budget_lines(budget: &Budget, used: &BudgetUse) -> Vec<BudgetLine> {
    let line = |label: &str, used: Option<u64>, limit: u64| BudgetLine {
        label: label.to_owned(),
        used,
        limit,
        text: format!(
            "{} of {limit}",
            used.map_or_else(|| "unknown".to_owned(), |u| u.to_string())
        ),
        exhausted: used.is_some_and(|u| u >= limit),
        overrun: used.is_some_and(|u| u > limit),
    };
    vec![
        line(
            "model calls",
            Some(used.model_calls),
            u64::from(budget.model_calls),
        ),
        line("tokens", used.tokens, budget.tokens),
        line("actions", Some(used.actions), u64::from(budget.actions)),
        line("seconds", Some(used.seconds), budget.seconds),
    ]
}

/// The limit of the current stage used up during its open turn, unless already recorded: the
/// gateway records it and pauses the agent.
pub(crate) fn newly_exhausted(p: &SessionProjection) -> Option<Event> {
    let w = p.workflow.as_ref()?;
    let turn = w.turn.as_ref().filter(|t| t.open && !t.exhausted)?;
    let limit = w.current_stage()?.exhausted()?;
    Some(Event::WorkflowBudgetExhausted {
        run_id: w.run_id.clone(),
        stage: turn.stage.clone(),
        limit,
    })
}

pub(super) fn controls(session: &str, w: &WorkflowView) -> Vec<WorkflowControl> {
    let Some(stage) = w.current_stage() else {
        return Vec::new();
    };
    let control = |command: CommandName, label: String| {
        let revision = w.revision;
        let submit = match command {
            CommandName::WorkflowRun => CommandKind::WorkflowRun { revision },
            CommandName::WorkflowEvaluate => CommandKind::WorkflowEvaluate { revision },
            CommandName::WorkflowReview => CommandKind::WorkflowReview { revision },
            CommandName::WorkflowAccept => CommandKind::WorkflowAccept {
                revision,
                fingerprint: w
                    .assessment
                    .as_ref()
                    .map(|a| a.fingerprint.clone())
                    .unwrap_or_default(),
            },
            _ => CommandKind::WorkflowCancel { revision },
        };
        WorkflowControl {
            command,
            label,
            revision,
            fingerprint: None,
            shell: format!(
                "heartwood workflow {} {session}",
                command.as_str().trim_start_matches("workflow_")
            ),
            submit,
        }
    };
    let title = &stage.spec.title;
    let mut out = Vec::new();
    // A stage that used up its budget gets no further turn.
    let run_again = |out: &mut Vec<WorkflowControl>| {
        if stage.exhausted().is_none() {
            out.push(control(
                CommandName::WorkflowRun,
                format!("Run “{title}” again"),
            ));
        }
    };
    // A review asks a model too: not once the budget is used up.
    let review = |out: &mut Vec<WorkflowControl>| {
        if stage.exhausted().is_none() {
            out.push(control(
                CommandName::WorkflowReview,
                format!("Have “{title}” reviewed"),
            ));
        }
    };
    match stage.status {
        StageStatus::Pending => {
            out.push(control(CommandName::WorkflowRun, format!("Run “{title}”")));
        }
        StageStatus::AwaitingEvaluation => {
            out.push(control(
                CommandName::WorkflowEvaluate,
                format!("Check “{title}”"),
            ));
            run_again(&mut out);
            review(&mut out);
        }
        StageStatus::AwaitingResearcher => {
            if let Some(assessment) = &w.assessment {
                let accept = control(CommandName::WorkflowAccept, format!("Accept “{title}”"));
                out.push(WorkflowControl {
                    shell: format!(
                        "{} --revision {} --fingerprint {}",
                        accept.shell, w.revision, assessment.fingerprint
                    ),
                    fingerprint: Some(assessment.fingerprint.clone()),
                    ..accept
                });
            }
            out.push(control(
                CommandName::WorkflowEvaluate,
                format!("Check “{title}” again"),
            ));
            run_again(&mut out);
            review(&mut out);
        }
        StageStatus::Running | StageStatus::Accepted => {}
    }
    out.push(control(
        CommandName::WorkflowCancel,
        "Cancel the run".into(),
    ));
    out
}

/// The limit of the current stage's budget that is used up, if one is: no model continuation
/// of the stage is admissible.
pub(crate) fn used_up(p: &SessionProjection) -> Option<String> {
    p.workflow.as_ref()?.current_stage()?.exhausted()
}

/// Whether a workflow command is admissible now; `Err` says why not and what is current.
pub(crate) fn admissible(p: &SessionProjection, kind: &CommandKind) -> Result<(), Refusal> {
    let (name, revision, fingerprint) = match kind {
        CommandKind::WorkflowStart { .. } => {
            return if p.workflow.is_some() {
                Err(Refusal::SessionInUse {
                    runs_workflow: true,
                })
            } else if !p.conversation.is_empty() {
                Err(Refusal::SessionInUse {
                    runs_workflow: false,
                })
            } else {
                Ok(())
            };
        }
        CommandKind::WorkflowRun { revision } => (CommandName::WorkflowRun, *revision, None),
        CommandKind::WorkflowEvaluate { revision } => {
            (CommandName::WorkflowEvaluate, *revision, None)
        }
        CommandKind::WorkflowAccept {
            revision,
            fingerprint,
        } => (CommandName::WorkflowAccept, *revision, Some(fingerprint)),
        CommandKind::WorkflowCancel { revision } => (CommandName::WorkflowCancel, *revision, None),
        CommandKind::WorkflowReview { revision } => (CommandName::WorkflowReview, *revision, None),
        // Not a control (it names a file): admissible whenever the run rests on its revision.
        CommandKind::WorkflowCorrect { revision, .. } => {
            let Some(w) = &p.workflow else {
                return Err(Refusal::NoWorkflow);
            };
            if w.cancelled || w.current.is_none() || !p.is_settled() || p.pending.is_some() {
                return Err(Refusal::NotAtRest);
            }
            if w.revision != *revision {
                return Err(stale_revision(*revision, w.revision));
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    let Some(w) = &p.workflow else {
        return Err(Refusal::NoWorkflow);
    };
    let active = !(p.is_settled() && p.pending.is_none());
    let Some(control) = w.control(name) else {
        // An acceptance of checks that do not pass names what they found.
        if name == CommandName::WorkflowAccept
            && !active
            && let (Some(stage), Some(a)) = (w.current_stage(), &w.assessment)
            && a.stage == stage.spec.id
            && !a.eligible
        {
            return Err(Refusal::NotEligible {
                stage: a.stage.clone(),
                problems: a.problems.clone(),
            });
        }
        let stage = w.current_stage().map(|s| {
            let used_up = s
                .exhausted()
                .map(|l| format!(" and its budget is used up ({l})"))
                .unwrap_or_default();
            format!("stage “{}” is {}{used_up}", s.spec.title, s.status.as_str())
        });
        return Err(Refusal::NotPossibleNow {
            command: name,
            stage,
            active,
        });
    };
    if control.revision != revision {
        return Err(Refusal::StaleRun {
            part: RunPart::Revision,
            shown: revision.to_string(),
            current: control.revision.to_string(),
        });
    }
    if let (Some(given), Some(current)) = (fingerprint, &control.fingerprint)
        && given != current
    {
        return Err(Refusal::StaleRun {
            part: RunPart::Assessment,
            shown: given.clone(),
            current: current.clone(),
        });
    }
    Ok(())
}

/// A command naming run revision `shown` when the run is at `current`.
fn stale_revision(shown: u64, current: u64) -> Refusal {
    Refusal::StaleRun {
        part: RunPart::Revision,
        shown: shown.to_string(),
        current: current.to_string(),
    }
}
