//! A research workflow run inside a session: its rules and its projection.
//!
//! A run starts in an unused session, binding the researcher's question and every input (by
//! content digest, through the confined workspace reader) and every artifact location; that
//! binding map is the one source of paths for stage prompts and checks. A stage is an ordinary
//! agent turn under ordinary review; it advances only on the stage's independent checks, run
//! by the gateway on the exact bytes in the project, and (where the definition asks) on the
//! researcher's acceptance, bound to the run revision and the assessment fingerprint shown.
//! Every transition is a durable event; the projection's `workflow` is derived from them here
//! and nowhere else, with the controls that make sense now.

use heartwood_events::catalog::Budget;
use heartwood_events::workflow::{
    AssessedProposal, AssessmentView, BindingRole, BudgetLine, BudgetUse, CheckView, InspectedFile,
    OutcomeStatus, ReproductionView, ReviewAssessed, ReviewSaid, ReviewView, StageOutcome,
    StageSpec, StageStatus, StageTurn, StageView, Verdict, WorkflowBinding, WorkflowControl,
    WorkflowView,
};
use heartwood_events::{
    ActionState, CommandKind, CommandName, Event, Lifecycle, RecordedEvent, SessionProjection,
};

use crate::workspace::WorkspaceService;
use crate::{GatewayError, ProjectContext};

/// Applies an event to the run (the reducer's share for workflow runs): the run's own
/// transitions, and what the current stage's turn does (its actions, model usage, time and the
/// outcome its `finish` reports).
pub(crate) fn apply(p: &mut SessionProjection, recorded: &RecordedEvent) {
    let seq = recorded.seq.get();
    if let Event::WorkflowStarted(start) = &recorded.event {
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
        settle_turn(p);
        return;
    }
    let Some(w) = &mut p.workflow else {
        return;
    };
    match &recorded.event {
        Event::WorkflowStageStarted { stage, .. } => {
            w.revision = seq;
            w.assessment = None;
            let base_seconds = w
                .stages
                .iter()
                .find(|s| &s.spec.id == stage)
                .map_or(0, |s| s.used.seconds);
            w.turn = Some(StageTurn {
                stage: stage.clone(),
                started_at: recorded.time.clone(),
                base_seconds,
                open: true,
                exhausted: false,
                outcome: None,
                problem: None,
            });
            set_status(w, stage, StageStatus::Running);
        }
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
            let mut evidence: Vec<InspectedFile> = w
                .assessment
                .take()
                .filter(|a| &a.stage == stage)
                .map(|a| a.checks.into_iter().flat_map(|c| c.inspected).collect())
                .unwrap_or_default();
            evidence.sort_by(|a, b| a.path.cmp(&b.path));
            evidence.dedup_by(|a, b| a.path == b.path);
            if let Some(s) = w.stages.iter_mut().find(|s| &s.spec.id == stage) {
                s.accepted_evidence = evidence;
            }
            w.turn = None;
            set_status(w, stage, StageStatus::Accepted);
            let next = w
                .stages
                .iter()
                .position(|s| &s.spec.id == stage)
                .and_then(|i| w.stages.get(i + 1))
                .map(|s| s.spec.id.clone());
            w.current = next;
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
                return;
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
                && let Some(finish) = p
                    .actions
                    .iter()
                    .find(|a| a.proposal.action_id == *action_id)
                    .filter(|a| a.proposal.tool == "finish")
            {
                let reported = outcome_of(&finish.proposal.arguments, w, &stage);
                if let Some(turn) = &mut w.turn {
                    (turn.problem, turn.outcome) = match reported {
                        Ok(outcome) => (blocked(&outcome), Some(outcome)),
                        Err(problem) => (Some(problem), None),
                    };
                }
            }
            // Time runs from the dispatch to the latest event of the turn, review included.
            use_budget(w, &stage, |u| u.seconds = seconds);
        }
    }
    // Settled at the event that ends the turn, live and in a replay alike (a replay derives
    // only once, at its end): a later turn's events must find this one closed.
    settle_turn(p);
}

/// A review in the words every interface shows: verified findings apart from the proposals
/// Heartwood's checks did not verify.
fn review_said(stage: &str, assessed: Option<&ReviewAssessed>) -> ReviewSaid {
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
fn blocked(outcome: &StageOutcome) -> Option<String> {
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

/// The JSON Schema of the `outcome` a stage turn's `finish` must carry.
pub(crate) fn outcome_schema() -> serde_json::Value {
    heartwood_events::schema::inline::<StageOutcome>()
}

/// The outcome a `finish` call reports, validated: a JSON object that fits [`StageOutcome`],
/// naming only files the run binds as artifacts.
fn outcome_of(arguments: &str, w: &WorkflowView, stage: &str) -> Result<StageOutcome, String> {
    let mut fields: serde_json::Map<String, serde_json::Value> = serde_json::from_str(arguments)
        .map_err(|e| format!("the stage turn's `finish` arguments are not a JSON object: {e}"))?;
    let Some(outcome) = fields.remove("outcome") else {
        return Err(format!(
            "the turn of stage {stage:?} finished without its structured outcome (`outcome`: \
             status, artifacts, notes), so it reports nothing the run can use; run the stage again"
        ));
    };
    let outcome: StageOutcome = serde_json::from_value(outcome)
        .map_err(|e| format!("the turn's `outcome` does not fit its schema: {e}"))?;
    for path in &outcome.artifacts {
        let bound = w
            .bindings
            .iter()
            .any(|b| b.role == BindingRole::Artifact && &b.path == path);
        if !bound {
            return Err(format!(
                "the turn's `outcome` names {path:?}, which is not a file this run produces"
            ));
        }
    }
    Ok(outcome)
}

/// Counts an action proposed or a model call made against `stage`'s budget.
fn count_work(w: &mut WorkflowView, stage: &str, event: &Event) {
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
fn is_bookkeeping(tool: &str) -> bool {
    matches!(tool, "think" | "finish")
}

fn use_budget(w: &mut WorkflowView, stage: &str, change: impl Fn(&mut BudgetUse)) {
    if let Some(s) = w.stages.iter_mut().find(|s| s.spec.id == stage) {
        change(&mut s.used);
    }
}

fn set_status(w: &mut WorkflowView, stage: &str, status: StageStatus) {
    if let Some(s) = w.stages.iter_mut().find(|s| s.spec.id == stage) {
        s.status = status;
    }
}

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

/// Whether the session's work has ended: settled, or paused because the current stage's
/// budget is used up (nothing may continue such a turn).
fn work_ended(p: &SessionProjection) -> bool {
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

/// Refreshes each stage's budget lines and, once the session's work has ended (or stopped at
/// a used-up budget), closes the open stage turn: a running stage awaits evaluation, and a
/// turn that reported no outcome says why.
fn settle_turn(p: &mut SessionProjection) {
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

/// A stage's budget, limit by limit, against what its turns used.
fn budget_lines(budget: &Budget, used: &BudgetUse) -> Vec<BudgetLine> {
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

fn controls(session: &str, w: &WorkflowView) -> Vec<WorkflowControl> {
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
pub(crate) fn admissible(p: &SessionProjection, kind: &CommandKind) -> Result<(), String> {
    let (name, revision, fingerprint) = match kind {
        CommandKind::WorkflowStart { .. } => {
            return if p.workflow.is_some() {
                Err("this session already runs a workflow; start another in a new session".into())
            } else if !p.conversation.is_empty() {
                Err("a workflow starts only in an unused session; start it in a new one".into())
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
                return Err("this session runs no workflow".into());
            };
            if w.cancelled || w.current.is_none() || !p.is_settled() || p.pending.is_some() {
                return Err(
                    "a correction is bound only while the run rests at a stage (no work \
                     active, no set waiting)"
                        .into(),
                );
            }
            if w.revision != *revision {
                return Err(format!(
                    "revision {revision} of the run is stale; it is at revision {}",
                    w.revision
                ));
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    let Some(w) = &p.workflow else {
        return Err("this session runs no workflow".into());
    };
    let Some(control) = w.control(name) else {
        let stage = w
            .current_stage()
            .map(|s| {
                let used_up = s
                    .exhausted()
                    .map(|l| format!(" and its budget is used up ({l})"))
                    .unwrap_or_default();
                format!("stage “{}” is {}{used_up}", s.spec.title, s.status.as_str())
            })
            .unwrap_or_else(|| "the run has ended".into());
        return Err(format!(
            "{} is not possible now: {stage}{}",
            name.as_str().replace('_', " "),
            if p.is_settled() && p.pending.is_none() {
                ""
            } else {
                ", and work is active or a set waits for a decision"
            }
        ));
    };
    if control.revision != revision {
        return Err(format!(
            "revision {revision} of the run is stale; it is at revision {}: look again and \
             decide again",
            control.revision
        ));
    }
    if let (Some(given), Some(current)) = (fingerprint, &control.fingerprint)
        && given != current
    {
        return Err(format!(
            "the assessment you accepted ({given}) is not the one shown now ({current}): look \
             at it again"
        ));
    }
    Ok(())
}

/// Every skill the definition's stages name must be offered by the catalog (a definition
/// naming an unknown skill is not supported here) and active, so its stages' agents get it.
fn skills_usable(
    project: &ProjectContext,
    definition: &heartwood_workflow::Definition,
) -> Result<(), String> {
    let named: Vec<(&str, &str)> = definition
        .stages
        .iter()
        .flat_map(|s| s.skills.iter().map(move |k| (s.id.as_str(), k.as_str())))
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    let service = crate::skills::SkillsService::open(project);
    let catalog = service.catalog().map_err(|e| e.to_string())?;
    let active = service.for_agent()?;
    for (stage, skill) in named {
        if !catalog.skills.iter().any(|s| s.name == skill) {
            return Err(format!(
                "{} is not supported here: its stage {stage:?} names the skill {skill:?}, which                  no skill source offers (`heartwood skills ls` lists them)",
                definition.id
            ));
        }
        if !active.contains(skill) {
            return Err(format!(
                "{}'s stage {stage:?} uses the skill {skill:?}, which is not active: review it                  with `heartwood skills show {skill}`, approve it and activate it first",
                definition.id
            ));
        }
    }
    Ok(())
}

/// The events that start a run of `definition` in a new session: the definition's stages, and
/// the bindings with every input's digest now (an input that cannot be read is refused).
pub(crate) fn start(
    project: &ProjectContext,
    run_id: String,
    definition: &str,
    question: &str,
    chosen: &std::collections::BTreeMap<String, String>,
) -> Result<Event, String> {
    if question.trim().is_empty() {
        return Err("the research question is empty; say what the run should answer".into());
    }
    let found = crate::workspace::maintained(definition).map_err(|e| e.to_string())?;
    skills_usable(project, &found)?;
    for id in chosen.keys() {
        if !found.inputs.iter().any(|i| &i.id == id) {
            let ids: Vec<&str> = found.inputs.iter().map(|i| i.id.as_str()).collect();
            return Err(format!(
                "{definition} has no input {id:?}; its inputs are {}",
                ids.join(", ")
            ));
        }
    }
    let inputs: Vec<(String, String)> = found
        .inputs
        .iter()
        .map(|i| {
            let path = chosen.get(&i.id).cloned().unwrap_or_else(|| i.path.clone());
            (i.id.clone(), path)
        })
        .collect();
    let service = WorkspaceService::open(project).map_err(|e| e.to_string())?;
    let paths: Vec<String> = inputs.iter().map(|(_, p)| p.clone()).collect();
    let snapshot = service
        .snapshot(&paths, Some(question))
        .map_err(|e| format!("the inputs cannot be bound: {e}"))?;
    let mut bindings: Vec<WorkflowBinding> = inputs
        .iter()
        .zip(&snapshot.files)
        .map(|((id, path), digest)| WorkflowBinding {
            id: id.clone(),
            path: path.clone(),
            role: BindingRole::Input,
            sha256: Some(digest.sha256.clone()),
        })
        .collect();
    bindings.extend(found.artifacts.iter().map(|a| WorkflowBinding {
        id: a.id.clone(),
        path: a.path.clone(),
        role: BindingRole::Artifact,
        sha256: None,
    }));
    Ok(Event::WorkflowStarted(Box::new(
        heartwood_events::workflow::WorkflowStart {
            run_id,
            definition: found.id.clone(),
            version: found.version.clone(),
            title: found.title.clone(),
            question: question.to_owned(),
            question_sha256: snapshot.text.map(|t| t.sha256).unwrap_or_default(),
            bindings,
            stages: found
                .stages
                .iter()
                .map(|s| StageSpec {
                    id: s.id.clone(),
                    title: s.title.clone(),
                    researcher_gate: s.researcher_gate,
                    budget: Some(s.budget),
                })
                .collect(),
        },
    )))
}

/// What the run relies on, by path and digest: every input as bound when the run started,
/// and every file an accepted stage's assessment read.
pub(crate) fn relied_on(w: &WorkflowView) -> Vec<(String, Option<String>)> {
    let mut relied: Vec<(String, Option<String>)> = w
        .bindings
        .iter()
        .filter(|b| b.role == BindingRole::Input)
        .map(|b| (b.path.clone(), b.sha256.clone()))
        .chain(
            w.stages
                .iter()
                .flat_map(|s| &s.accepted_evidence)
                .map(|f| (f.path.clone(), f.sha256.clone())),
        )
        .collect();
    relied.sort();
    relied.dedup();
    relied
}

/// The files whose bytes differ from what the run relies on: every input as bound when the
/// run started, and every file an accepted stage's assessment read, each said with what
/// happened to it. A changed original input or accepted result invalidates the evidence built
/// on it, so no later stage runs on it.
pub(crate) fn changed_evidence(project: &ProjectContext, w: &WorkflowView) -> Vec<String> {
    drifted(project, &relied_on(w))
}

/// What accepting the current stage relies on: everything the run relies on, and every file
/// the stage's latest assessment read, with the digest its checks judged. Acceptance is bound
/// to those bytes, so each is read again at the moment of acceptance.
pub(crate) fn acceptance_drift(project: &ProjectContext, w: &WorkflowView) -> Vec<String> {
    let mut relied = relied_on(w);
    if let Some(assessment) = &w.assessment {
        relied.extend(
            assessment
                .checks
                .iter()
                .flat_map(|c| &c.inspected)
                .map(|f| (f.path.clone(), f.sha256.clone())),
        );
    }
    relied.sort();
    relied.dedup();
    drifted(project, &relied)
}

/// Each file of `relied` (path, SHA-256) whose bytes are not those now, said as a researcher
/// needs it: `reports/readiness.json (edited)`, `outputs/split.csv (missing)`.
fn drifted(project: &ProjectContext, relied: &[(String, Option<String>)]) -> Vec<String> {
    let workspace = match heartwood_workspace::Workspace::open(project.root()) {
        Ok(workspace) => workspace,
        Err(e) => return vec![format!("the project cannot be read ({e})")],
    };
    let mut drifted: Vec<String> = relied
        .iter()
        .filter_map(|(path, then)| {
            let now = heartwood_workspace::ProjectPath::parse(path)
                .map_err(|e| e.to_string())
                .and_then(|p| match workspace.digest(&p) {
                    Ok(d) => Ok(Some(d.sha256)),
                    Err(heartwood_workspace::AccessError::Missing(_)) => Ok(None),
                    Err(e) => Err(e.to_string()),
                });
            match now {
                Ok(Some(now)) if then.as_deref() == Some(now.as_str()) => None,
                Ok(Some(_)) => Some(format!("{path} (edited)")),
                Ok(None) => Some(format!("{path} (missing)")),
                Err(e) => Some(format!("{path} (cannot be read: {e})")),
            }
        })
        .collect();
    drifted.dedup();
    drifted
}

/// The agent's task for the current stage: its goal, the question, where to read and write
/// (from the binding map), and the checks that will judge it.
pub(crate) fn stage_prompt(w: &WorkflowView) -> Result<String, GatewayError> {
    let stage = w
        .current_stage()
        .ok_or_else(|| GatewayError::Config("the run has no current stage".into()))?;
    let definition = crate::workspace::maintained(&w.definition)?;
    let spec = definition
        .stages
        .iter()
        .find(|s| s.id == stage.spec.id)
        .ok_or_else(|| GatewayError::Config(format!("no stage {:?}", stage.spec.id)))?;
    let path_of = |id: &str| {
        w.bindings
            .iter()
            .find(|b| b.id == id)
            .map_or_else(|| id.to_owned(), |b| b.path.clone())
    };
    let describe = |id: &str| {
        definition
            .inputs
            .iter()
            .map(|i| (&i.id, &i.description))
            .chain(definition.artifacts.iter().map(|a| (&a.id, &a.description)))
            .find(|(i, _)| i.as_str() == id)
            .map_or_else(String::new, |(_, d)| format!(" ({d})"))
    };
    let list = |ids: &[String]| {
        ids.iter()
            .map(|id| format!("- `{}`{}", path_of(id), describe(id)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let checks = spec
        .checks
        .iter()
        .map(|c| {
            format!(
                "- {} (reads {})",
                c.check,
                c.reads
                    .iter()
                    .map(|r| path_of(r))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let skills = if spec.skills.is_empty() {
        String::new()
    } else {
        format!(
            "Skills for this stage (listed in your instructions; read each SKILL.md first): \
             {}.\n\n",
            spec.skills.join(", ")
        )
    };
    Ok(format!(
        "Workflow “{}”, stage “{}”.\n\nResearch question: {}\n\n{skills}Read:\n{}\n\nWrite:\n{}\n\n\
         Independent checks will judge the files you write, on their exact bytes:\n{}\n\n\
         Write only the files listed under Write. Then call `finish` with a short summary as \
         `message` and the structured `outcome`: `status` (`completed`, or `blocked` if the \
         files could not be written), `artifacts` (the paths you wrote) and `notes`.",
        w.title,
        spec.title,
        w.question,
        list(&spec.consumes),
        list(&spec.produces),
        checks
    ))
}

/// The run's definition with every location taken from its binding map, so checks read the
/// inputs the researcher chose, not the definition's defaults.
pub(crate) fn bound_definition(
    w: &WorkflowView,
) -> Result<heartwood_workflow::Definition, GatewayError> {
    let mut definition = crate::workspace::maintained(&w.definition)?;
    for binding in &w.bindings {
        let path = match binding.role {
            BindingRole::Input => definition
                .inputs
                .iter_mut()
                .find(|i| i.id == binding.id)
                .map(|i| &mut i.path),
            BindingRole::Artifact => definition
                .artifacts
                .iter_mut()
                .find(|a| a.id == binding.id)
                .map(|a| &mut a.path),
        };
        if let Some(path) = path {
            path.clone_from(&binding.path);
        }
    }
    Ok(definition)
}

/// Why the current stage's latest turn cannot carry it forward, whatever its files say: no
/// structured outcome, a claim that the work is blocked, or a budget overrun.
fn turn_problems(w: &WorkflowView) -> Vec<String> {
    let mut problems = Vec::new();
    match &w.turn {
        None => problems.push("the stage has no agent turn to judge; run it first".to_owned()),
        Some(turn) => problems.extend(turn.problem.clone()),
    }
    if let Some(stage) = w.current_stage() {
        problems.extend(
            stage
                .overruns()
                .into_iter()
                .map(|o| format!("the stage's budget was overrun: {o}")),
        );
    }
    problems
}

/// Runs the current stage's checks on the files now in the project and assesses them.
pub(crate) fn evaluate(
    project: &ProjectContext,
    w: &WorkflowView,
) -> Result<AssessmentView, GatewayError> {
    let stage = w
        .current_stage()
        .ok_or_else(|| GatewayError::Config("the run has no current stage".into()))?
        .spec
        .id
        .clone();
    let service = WorkspaceService::open(project)?;
    let (results, assessment) = service.check_and_assess(&bound_definition(w)?, &stage, |r| {
        crate::reproduction::judge(project, w, r);
    })?;
    let mut problems = assessment.problems;
    let mut refused = Vec::new();
    let changed = changed_evidence(project, w);
    if !changed.is_empty() {
        refused.push(format!(
            "changed since the run bound or accepted it: {}",
            changed.join(", ")
        ));
    }
    refused.extend(turn_problems(w));
    let eligible = assessment.eligible && refused.is_empty();
    problems.extend(refused);
    Ok(AssessmentView {
        stage,
        fingerprint: assessment.fingerprint,
        eligible,
        problems,
        checks: results
            .iter()
            .map(|r| CheckView {
                check: r.check.clone(),
                status: serde_json::to_value(r.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                reasons: r.reasons.clone(),
                inspected: r
                    .inspected
                    .iter()
                    .map(|f| InspectedFile {
                        path: f.path.clone(),
                        sha256: Some(f.sha256.clone()),
                    })
                    .collect(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod skill_reference_tests {
    use super::*;

    fn definition_naming(skill: &str) -> heartwood_workflow::Definition {
        let mut definition = crate::workspace::maintained("tabular-ols").expect("maintained");
        definition.stages[0].skills = vec![skill.to_owned()];
        definition
    }

    #[test]
    fn a_definition_naming_an_unknown_or_inactive_skill_is_refused_at_start() {
        let project = tempfile::tempdir().expect("project");
        std::fs::create_dir(project.path().join(".heartwood")).expect("state");
        let context = ProjectContext::at(project.path()).expect("project");
        let unknown = skills_usable(&context, &definition_naming("no-such-skill"))
            .expect_err("an unknown skill");
        assert!(unknown.contains("not supported"), "{unknown}");
        let inactive = skills_usable(&context, &definition_naming("group-disjoint-splits"))
            .expect_err("a known skill that is not active");
        assert!(inactive.contains("not active"), "{inactive}");

        let skills = crate::skills::SkillsService::open(&context);
        let digest = skills
            .show("group-disjoint-splits", None)
            .expect("show")
            .view
            .digest
            .expect("digest");
        skills
            .approve("group-disjoint-splits", None, &digest)
            .expect("approve");
        skills
            .activate("group-disjoint-splits", None)
            .expect("activate");
        skills_usable(&context, &definition_naming("group-disjoint-splits"))
            .expect("an active skill is usable");
        let given = skills.for_agent().expect("for agent");
        assert!(
            given
                .injected(&["group-disjoint-splits".to_owned()])
                .expect("injected")
                .contains("Split by group"),
            "a specialist naming it gets its whole instructions"
        );
        assert!(given.injected(&["no-such-skill".to_owned()]).is_err());
    }
}
