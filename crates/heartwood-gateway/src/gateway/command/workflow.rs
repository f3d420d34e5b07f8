//! Deciding the workflow family under the lock: start, run a stage, evaluate it, accept it,
//! review it, bind a correction, cancel. What each judged (checks, drift, captured evidence,
//! a recheck) was read before the lock; here it is bound to the run as the journal has it, and
//! refused if the run moved on meanwhile.

use heartwood_events::workflow::{ReviewStarted, WorkflowView};
use heartwood_events::{ActionPolicy, Command, CommandKind, Event, MovedDuring, Receipt, Refusal};
use serde_json::Value;

use super::Deciding;
use super::prepare::{Input, RunInput};
use super::session::send;
use crate::GatewayError;
use crate::live::{CommandKey, Core};
use crate::worker_link::Work;

/// What the command needed that could not be read or used (a definition changed since the
/// run bound it, a file its checks read), as a refusal.
fn unusable(e: impl std::fmt::Display) -> Refusal {
    Refusal::WorkflowUnusable { why: e.to_string() }
}

impl Deciding<'_, '_> {
    pub(super) fn workflow(
        self,
        core: &mut Core,
        command: &Command,
    ) -> Result<Receipt, GatewayError> {
        let Deciding {
            gateway,
            live,
            key,
            mut prepared,
        } = self;
        let key = &key;
        let input = prepared.take_input();
        if let CommandKind::WorkflowStart { .. } = command.kind {
            return match input {
                Input::Start(Ok(event)) => core.complete(key, vec![event], Value::Null),
                Input::Start(Err(refusal)) => core.refuse(key, refusal),
                _ => core.refuse(
                    key,
                    Refusal::Other {
                        why: "the run could not be prepared".into(),
                    },
                ),
            };
        }
        let Some(workflow) = core.projection().workflow.clone() else {
            return core.refuse(key, Refusal::NoWorkflow);
        };
        match (&command.kind, input) {
            (CommandKind::WorkflowRun { .. }, Input::Run(input)) => {
                let worker = prepared.take_worker();
                run_stage(gateway, live, core, key, &workflow, worker, input)
            }
            (CommandKind::WorkflowEvaluate { .. }, Input::Evaluate(evaluated)) => match evaluated {
                Ok(assessment) => evaluated_stage(core, key, &workflow, assessment),
                Err(e) => core.refuse(key, unusable(e)),
            },
            (
                CommandKind::WorkflowAccept { fingerprint, .. },
                Input::Accept { changed_evidence },
            ) => {
                if !changed_evidence.is_empty() {
                    let refusal = Refusal::EvidenceChanged {
                        files: changed_evidence,
                        judged_in: Some(command.session.clone()),
                    };
                    return core.refuse(key, refusal);
                }
                let event = Event::WorkflowStageAccepted {
                    run_id: workflow.run_id.clone(),
                    stage: workflow.current.clone().unwrap_or_default(),
                    fingerprint: fingerprint.clone(),
                    by_researcher: true,
                };
                core.complete(key, vec![event], Value::Null)
            }
            (CommandKind::WorkflowReview { .. }, Input::Review(captured)) => {
                let evidence = match captured {
                    Ok(evidence) => evidence,
                    Err(e) => return core.refuse(key, unusable(e)),
                };
                if let Err(reason) = gateway.ensure_worker(live, core, prepared.take_worker()) {
                    return core.refuse(key, reason.into());
                }
                let started = ReviewStarted {
                    run_id: workflow.run_id.clone(),
                    review_id: command.command_id.to_string(),
                    stage: workflow.current.clone().unwrap_or_default(),
                    evidence,
                };
                let prompt = crate::review_evidence::prompt(&workflow, &started);
                let started = Event::WorkflowReviewStarted(Box::new(started));
                dispatch_turn(core, key, prompt, None, started)
            }
            (
                CommandKind::WorkflowCorrect {
                    review_id, finding, ..
                },
                Input::Correct {
                    definition,
                    rechecked,
                },
            ) => match rechecked {
                Ok((recheck, seen)) => bind_correction(
                    core,
                    definition.ok(),
                    key,
                    &workflow,
                    (&seen, recheck),
                    (review_id, *finding),
                ),
                Err(e @ GatewayError::Correction(_)) => {
                    core.refuse(key, Refusal::CorrectionNotBindable { why: e.to_string() })
                }
                Err(e) => core.refuse(key, unusable(e)),
            },
            // Admitted above against the control shown: consent is journaled, nothing runs yet.
            (CommandKind::WorkflowReviewParallel { preview, .. }, _) => {
                let event = Event::ReviewParallelConsented {
                    preview: preview.clone(),
                };
                core.complete(key, vec![event], Value::Null)
            }
            (CommandKind::WorkflowCancel { .. }, _) => {
                let event = Event::WorkflowCancelled {
                    run_id: workflow.run_id,
                };
                core.complete(key, vec![event], Value::Null)
            }
            // Read before the lock when the session had no run: there was nothing to judge.
            (
                CommandKind::WorkflowRun { .. }
                | CommandKind::WorkflowEvaluate { .. }
                | CommandKind::WorkflowAccept { .. }
                | CommandKind::WorkflowReview { .. }
                | CommandKind::WorkflowCorrect { .. },
                _,
            ) => core.refuse(key, Refusal::NoWorkflow),
            // Routed to their own family by `decide`; never here.
            _ => core.refuse(
                key,
                Refusal::Other {
                    why: "a session command is decided by the session family".into(),
                },
            ),
        }
    }
}

/// `workflow run`: the stage's turn is dispatched, unless a file the run relies on changed, the
/// agent cannot be had, or the bound definition cannot be used.
fn run_stage(
    gateway: &crate::gateway::SessionGateway,
    live: &std::sync::Arc<crate::live::Live>,
    core: &mut Core,
    key: &CommandKey<'_>,
    workflow: &WorkflowView,
    worker: Result<super::WorkerKit, super::WorkerRefusal>,
    input: RunInput,
) -> Result<Receipt, GatewayError> {
    let RunInput {
        starting_commit,
        changed_evidence,
        definition,
    } = input;
    if !changed_evidence.is_empty() {
        let refusal = Refusal::EvidenceChanged {
            files: changed_evidence,
            judged_in: None,
        };
        return core.refuse(key, refusal);
    }
    if let Err(reason) = gateway.ensure_worker(live, core, worker) {
        return core.refuse(key, reason.into());
    }
    let definition = match definition {
        Ok(definition) => definition,
        Err(e) => return core.refuse(key, unusable(e)),
    };
    let prompt = match crate::workflow_run::stage_prompt(&definition, workflow) {
        Ok(prompt) => prompt,
        Err(e) => return core.refuse(key, unusable(e)),
    };
    // The stage is running from the moment its turn is.
    let started = Event::WorkflowStageStarted {
        run_id: workflow.run_id.clone(),
        stage: workflow.current.clone().unwrap_or_default(),
    };
    dispatch_turn(core, key, prompt, starting_commit, started)
}

/// Records the stage's checks, judged before the lock, when the run is still at that stage;
/// where the definition asks no acceptance, eligible checks advance the run.
fn evaluated_stage(
    core: &mut Core,
    key: &CommandKey<'_>,
    workflow: &WorkflowView,
    assessment: heartwood_events::workflow::AssessmentView,
) -> Result<Receipt, GatewayError> {
    if workflow.current.as_deref() != Some(assessment.stage.as_str()) {
        let refusal = Refusal::RunMovedOn {
            during: MovedDuring::Checks,
        };
        return core.refuse(key, refusal);
    }
    let gated = workflow
        .current_stage()
        .is_none_or(|s| s.spec.researcher_gate);
    let mut events = vec![Event::WorkflowStageEvaluated {
        run_id: workflow.run_id.clone(),
        assessment: Box::new(assessment.clone()),
    }];
    if assessment.eligible && !gated {
        events.push(Event::WorkflowStageAccepted {
            run_id: workflow.run_id.clone(),
            stage: assessment.stage.clone(),
            fingerprint: assessment.fingerprint.clone(),
            by_researcher: false,
        });
    }
    let result = serde_json::to_value(&assessment).unwrap_or_default();
    core.complete(key, events, result)
}

/// Binds a correction whose recheck (made before the lock, against the run `seen`) found its
/// defect not observed, to the current stage's declared output it replaces.
fn bind_correction(
    core: &mut Core,
    definition: Option<heartwood_workflow::Definition>,
    key: &CommandKey<'_>,
    workflow: &WorkflowView,
    (seen, recheck): (&WorkflowView, crate::correction::Recheck),
    (review_id, finding): (&str, u32),
) -> Result<Receipt, GatewayError> {
    if seen.revision != workflow.revision || recheck.plan.review_id != review_id {
        let refusal = Refusal::RunMovedOn {
            during: MovedDuring::Recheck,
        };
        return core.refuse(key, refusal);
    }
    if recheck.result != crate::correction::RecheckResult::NotObserved {
        let why = format!(
            "the recheck of {} is {}: {}; only a correction whose defect is not observed can be \
             bound",
            recheck.plan.destination,
            recheck.result,
            recheck.reasons.join("; ")
        );
        return core.refuse(key, Refusal::CorrectionNotBindable { why });
    }
    // Only the current (never yet accepted) stage's declared outputs.
    let produced = definition
        .and_then(|d| {
            d.stages
                .into_iter()
                .find(|s| Some(&s.id) == workflow.current.as_ref())
        })
        .is_some_and(|s| s.produces.contains(&recheck.plan.artifact));
    if !produced {
        let why = format!(
            "{} is not an output of the current stage, so no correction can replace it (an \
             accepted stage's outputs stay as accepted)",
            recheck.plan.original
        );
        return core.refuse(key, Refusal::CorrectionNotBindable { why });
    }
    let event = Event::WorkflowCorrectionBound {
        run_id: workflow.run_id.clone(),
        review_id: review_id.to_owned(),
        finding,
        artifact: recheck.plan.artifact.clone(),
        from: recheck.plan.original.clone(),
        to: recheck.plan.destination.clone(),
    };
    let result = serde_json::to_value(&recheck).unwrap_or_default();
    core.complete(key, vec![event], result)
}

/// Records a workflow turn (its task, then `marker`, the event that says what the turn is
/// for and, being last, names the command for a rebuilt receipt) and dispatches it under
/// review.
fn dispatch_turn(
    core: &mut Core,
    key: &CommandKey<'_>,
    prompt: String,
    starting_commit: Option<String>,
    marker: Event,
) -> Result<Receipt, GatewayError> {
    if let Some(worker) = core.worker() {
        worker.withdraw_pause();
    }
    let events = vec![
        Event::TaskSubmitted {
            text: prompt.clone(),
            policy: ActionPolicy::AlwaysReview,
            starting_commit,
        },
        marker,
    ];
    let receipt = core.complete(key, events, Value::Null)?;
    send(
        core,
        Work::Task {
            text: prompt,
            policy: ActionPolicy::AlwaysReview,
        },
    );
    Ok(receipt)
}
