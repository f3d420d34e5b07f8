//! The run's projection, folded event by event: its own transitions, the current stage's
//! turn (actions, model usage, time and the outcome its `finish` reports) and its reviews.

use super::*;

/// Applies an event to the run (the reducer's share for workflow runs): the run's own
/// transitions, and what the current stage's turn does (its actions, model usage, time and the
/// outcome its `finish` reports).
pub(crate) fn apply(p: &mut SessionProjection, recorded: &RecordedEvent) {
    let seq = recorded.seq.get();
    if let Event::WorkflowStarted(start) = &recorded.event {
        started(p, start, seq);
        settle_turn(p);
        return;
    }
    let Some(w) = &mut p.workflow else {
        return;
    };
    match &recorded.event {
        Event::WorkflowStageStarted { stage, .. } => stage_started(w, stage, recorded),
        Event::WorkflowStageEvaluated { assessment, .. } => {
            w.revision = seq;
            let status = if assessment.eligible {
                StageStatus::AwaitingResearcher
            } else {
                StageStatus::AwaitingEvaluation
            };
            set_status(w, &assessment.stage, status);
            w.assessment = Some((**assessment).clone());
        }
        Event::WorkflowStageAccepted { stage, .. } => {
            w.revision = seq;
            stage_accepted(w, stage);
        }
        Event::WorkflowCancelled { .. } => {
            w.revision = seq;
            w.cancelled = true;
            w.current = None;
        }
        Event::WorkflowReproductionPrepared(prepared) => {
            w.revision = seq;
            w.reproduction = Some(ReproductionView {
                prepared: (**prepared).clone(),
                completed: None,
            });
        }
        Event::WorkflowReproductionCompleted(completed) => {
            w.revision = seq;
            if let Some(r) = w
                .reproduction
                .as_mut()
                .filter(|r| r.prepared.action_id == completed.action_id)
            {
                r.completed = Some((**completed).clone());
            }
        }
        Event::WorkflowReviewStarted(started) => {
            w.revision = seq;
            // The stage's outcome is its own turn's alone: nothing a review turn does (its
            // `finish` included) is written over it.
            if let Some(turn) = &mut w.turn {
                turn.open = false;
            }
            w.reviews.push(ReviewView {
                said: review_said(&started.stage, None),
                started: (**started).clone(),
                started_seq: seq,
                assessed: None,
            });
        }
        Event::WorkflowReviewAssessed(assessed) => {
            w.revision = seq;
            if let Some(r) = w
                .reviews
                .iter_mut()
                .find(|r| r.started.review_id == assessed.review_id)
            {
                r.said = review_said(&r.started.stage, Some(assessed));
                r.assessed = Some((**assessed).clone());
            }
        }
        Event::WorkflowCorrectionBound { artifact, to, .. } => {
            w.revision = seq;
            if let Some(b) = w.bindings.iter_mut().find(|b| &b.id == artifact) {
                b.path.clone_from(to);
            }
            // The stage stands on new bytes: its checks and acceptance start over.
            w.assessment = None;
            if let Some(stage) = w.current.clone() {
                set_status(w, &stage, StageStatus::AwaitingEvaluation);
            }
        }
        Event::WorkflowBudgetExhausted { .. } => {
            w.revision = seq;
            if let Some(turn) = &mut w.turn {
                turn.exhausted = true;
            }
        }
        // The rest counts only while a stage's turn is on.
        event => {
            if !turn_work(w, &p.actions, recorded, event) {
                return;
            }
        }
    }
    // Settled at the event that ends the turn, live and in a replay alike (a replay derives
    // only once, at its end): a later turn's events must find this one closed.
    settle_turn(p);
}

/// The run as it starts: every stage pending, the first one current.
fn started(p: &mut SessionProjection, start: &heartwood_events::workflow::WorkflowStart, seq: u64) {
    // The run is what the session is about: the question names it in every list.
    if p.title.is_none() {
        p.title = Some(crate::reducer::title_of(&start.question));
    }
    let stages = &start.stages;
    p.workflow = Some(WorkflowView {
        run_id: start.run_id.clone(),
        definition: start.definition.clone(),
        version: start.version.clone(),
        title: start.title.clone(),
        source: start.source,
        definition_sha256: start.definition_sha256.clone(),
        question: start.question.clone(),
        revision: seq,
        bindings: start.bindings.clone(),
        stages: stages
            .iter()
            .map(|spec| StageView {
                spec: spec.clone(),
                status: StageStatus::Pending,
                used: BudgetUse::default(),
                budget: Vec::new(),
                accepted_evidence: Vec::new(),
            })
            .collect(),
        current: stages.first().map(|s| s.id.clone()),
        assessment: None,
        turn: None,
        used: BudgetUse::default(),
        reproduction: None,
        reviews: Vec::new(),
        review_execution: None,
        cancelled: false,
        controls: Vec::new(),
    });
}

/// A stage's turn begins: its clock continues from the stage's earlier turns.
fn stage_started(w: &mut WorkflowView, stage: &str, recorded: &RecordedEvent) {
    let seq = recorded.seq.get();
    w.revision = seq;
    w.assessment = None;
    let base_seconds = w
        .stages
        .iter()
        .find(|s| s.spec.id == stage)
        .map_or(0, |s| s.used.seconds);
    w.turn = Some(StageTurn {
        stage: stage.to_owned(),
        started_at: recorded.time.clone(),
        base_seconds,
        open: true,
        exhausted: false,
        outcome: None,
        problem: None,
    });
    set_status(w, stage, StageStatus::Running);
}

/// A stage is accepted on the evidence its latest checks inspected; the next one is current.
fn stage_accepted(w: &mut WorkflowView, stage: &str) {
    let mut evidence: Vec<InspectedFile> = w
        .assessment
        .take()
        .filter(|a| a.stage == stage)
        .map(|a| a.checks.into_iter().flat_map(|c| c.inspected).collect())
        .unwrap_or_default();
    evidence.sort_by(|a, b| a.path.cmp(&b.path));
    evidence.dedup_by(|a, b| a.path == b.path);
    if let Some(s) = w.stages.iter_mut().find(|s| s.spec.id == stage) {
        s.accepted_evidence = evidence;
    }
    w.turn = None;
    set_status(w, stage, StageStatus::Accepted);
    let next = w
        .stages
        .iter()
        .position(|s| s.spec.id == stage)
        .and_then(|i| w.stages.get(i + 1))
        .map(|s| s.spec.id.clone());
    w.current = next;
}

/// What an event does to the open stage turn (or the review in progress): its work counts
/// against the stage, and the turn's `finish` carries its outcome. `false` when no turn is open.
fn turn_work(
    w: &mut WorkflowView,
    actions: &[heartwood_events::ActionView],
    recorded: &RecordedEvent,
    event: &Event,
) -> bool {
    // A review's model work counts against its stage too (its time does not: the
    // stage's clock is its turns').
    let reviewing = w
        .reviews
        .last()
        .filter(|r| r.assessed.is_none())
        .map(|r| r.started.stage.clone());
    let Some(turn) = w.turn.as_ref().filter(|t| t.open) else {
        if let Some(stage) = reviewing {
            count_work(w, &stage, event);
        }
        return false;
    };
    let stage = turn.stage.clone();
    let elapsed = turn
        .started_at
        .millis_until(&recorded.time)
        .map_or(0, |ms| u64::try_from(ms / 1000).unwrap_or(0));
    let seconds = turn.base_seconds + elapsed;
    count_work(w, &stage, event);
    // The turn's `finish`, once it ran, carries its outcome.
    if let Event::ActionUpdated {
        action_id,
        state: ActionState::Completed,
        ..
    } = event
        && let Some(finish) = actions
            .iter()
            .find(|a| a.proposal.action_id == *action_id)
            .filter(|a| a.proposal.tool == "finish")
    {
        let reported = outcome_of(&finish.proposal.arguments, w, &stage);
        if let Some(turn) = &mut w.turn {
            (turn.problem, turn.outcome) = match reported {
                Ok(outcome) => (blocked(&outcome), Some(outcome)),
                Err(problem) => (Some(problem.to_string()), None),
            };
        }
    }
    // Time runs from the dispatch to the latest event of the turn, review included.
    use_budget(w, &stage, |u| u.seconds = seconds);
    true
}

/// A review in the words every interface shows: verified findings apart from the proposals
/// Heartwood's checks did not verify.
pub(super) fn review_said(stage: &str, assessed: Option<&ReviewAssessed>) -> ReviewSaid {
    let Some(assessed) = assessed else {
        return ReviewSaid {
            headline: format!("review of {stage}: the reviewer is working"),
            ..ReviewSaid::default()
        };
    };
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let unverified: Vec<&AssessedProposal> = assessed
        .proposals
        .iter()
        .filter(|p| p.verdict != Verdict::Verified)
        .collect();
    ReviewSaid {
        headline: format!(
            "review of {stage}: {} (verified by Heartwood's checks), {} (the reviewer's \
             claims, not findings)",
            plural(assessed.findings.len(), "finding", "findings"),
            plural(
                unverified.len(),
                "unverified proposal",
                "unverified proposals"
            ),
        ),
        findings: assessed
            .findings
            .iter()
            .map(|f| {
                format!(
                    "{} — {} observed: {} ({})",
                    f.path,
                    f.check,
                    f.observed.join("; "),
                    plural(f.claims.len(), "claim", "claims")
                )
            })
            .collect(),
        proposals: unverified
            .iter()
            .map(|p| {
                let verdict = match p.verdict {
                    Verdict::NotObserved => "not observed by Heartwood's checks",
                    _ => "unverified: Heartwood's checks cannot decide it",
                };
                format!("“{}” on {} — {verdict}", p.proposal.claim, p.proposal.path)
            })
            .collect(),
    }
}

/// Why a turn that reported `outcome` cannot carry its stage: the agent said it is blocked.
pub(super) fn blocked(outcome: &StageOutcome) -> Option<String> {
    (outcome.status == OutcomeStatus::Blocked).then(|| {
        format!(
            "the agent reported the stage blocked: {}",
            if outcome.notes.trim().is_empty() {
                "(no notes)"
            } else {
                outcome.notes.trim()
            }
        )
    })
}

/// Why a stage turn's `finish` reports no usable outcome (the turn's problem, as text).
#[derive(Debug, thiserror::Error)]
pub(super) enum OutcomeProblem {
    /// The arguments are not a JSON object.
    #[error("the stage turn's `finish` arguments are not a JSON object: {0}")]
    NotObject(#[source] serde_json::Error),
    /// No `outcome` beside the message.
    #[error(
        "the turn of stage {0:?} finished without its structured outcome (`outcome`: status, artifacts, notes), so it reports nothing the run can use; run the stage again"
    )]
    Missing(String),
    /// The `outcome` does not fit its schema.
    #[error("the turn's `outcome` does not fit its schema: {0}")]
    Unfit(#[source] serde_json::Error),
    /// The `outcome` names a file the run does not produce.
    #[error("the turn's `outcome` names {0:?}, which is not a file this run produces")]
    Unbound(String),
}

/// The outcome a `finish` call reports, validated: a JSON object that fits [`StageOutcome`],
/// naming only files the run binds as artifacts.
pub(super) fn outcome_of(
    arguments: &str,
    w: &WorkflowView,
    stage: &str,
) -> Result<StageOutcome, OutcomeProblem> {
    let mut fields: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(arguments).map_err(OutcomeProblem::NotObject)?;
    let Some(outcome) = fields.remove("outcome") else {
        return Err(OutcomeProblem::Missing(stage.to_owned()));
    };
    let outcome: StageOutcome = serde_json::from_value(outcome).map_err(OutcomeProblem::Unfit)?;
    for path in &outcome.artifacts {
        let bound = w
            .bindings
            .iter()
            .any(|b| b.role == BindingRole::Artifact && &b.path == path);
        if !bound {
            return Err(OutcomeProblem::Unbound(path.clone()));
        }
    }
    Ok(outcome)
}

/// Counts an action proposed or a model call made against `stage`'s budget.
pub(super) fn count_work(w: &mut WorkflowView, stage: &str, event: &Event) {
    match event {
        Event::ActionProposed { action } if !is_bookkeeping(&action.tool) => {
            use_budget(w, stage, |u| u.actions += 1);
        }
        // The agent's calls and its specialists' (a child's calls are the stage's work).
        Event::UsageRecorded { purpose, usage }
            if purpose == "agent" || purpose.starts_with("task:") =>
        {
            // A real call always has prompt tokens; none means the provider did not say, and
            // the figure becomes unknown rather than 0.
            let reported = usage.calls == 0 || usage.prompt_tokens > 0;
            let tokens = usage.prompt_tokens + usage.completion_tokens;
            use_budget(w, stage, |u| {
                u.model_calls += usage.calls;
                u.tokens = u.tokens.filter(|_| reported).map(|t| t + tokens);
            });
        }
        _ => {}
    }
}

/// Tools that do no work: they do not count against a stage's actions.
pub(super) fn is_bookkeeping(tool: &str) -> bool {
    matches!(tool, "think" | "finish")
}

pub(super) fn use_budget(w: &mut WorkflowView, stage: &str, change: impl Fn(&mut BudgetUse)) {
    if let Some(s) = w.stages.iter_mut().find(|s| s.spec.id == stage) {
        change(&mut s.used);
    }
}

pub(super) fn set_status(w: &mut WorkflowView, stage: &str, status: StageStatus) {
    if let Some(s) = w.stages.iter_mut().find(|s| s.spec.id == stage) {
        s.status = status;
    }
}

/// Refreshes each stage's budget lines and, once the session's work has ended (or stopped at
/// a used-up budget), closes the open stage turn: a running stage awaits evaluation, and a
/// turn that reported no outcome says why.
pub(super) fn settle_turn(p: &mut SessionProjection) {
    let Some(w) = &mut p.workflow else {
        return;
    };
    for stage in &mut w.stages {
        stage.budget = stage
            .spec
            .budget
            .map(|b| budget_lines(&b, &stage.used))
            .unwrap_or_default();
    }
    if !work_ended(p) {
        return;
    }
    let Some(w) = &mut p.workflow else {
        return;
    };
    for stage in &mut w.stages {
        if stage.status == StageStatus::Running {
            stage.status = StageStatus::AwaitingEvaluation;
        }
    }
    if let Some(turn) = w.turn.as_mut().filter(|t| t.open) {
        turn.open = false;
        if turn.outcome.is_none() && turn.problem.is_none() {
            turn.problem = Some(
                "the stage turn ended without calling `finish` with its structured outcome, \
                 so it reports nothing the run can use; run the stage again"
                    .into(),
            );
        }
    }
}
