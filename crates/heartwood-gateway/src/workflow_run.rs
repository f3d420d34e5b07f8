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

use heartwood_events::workflow::{
    AssessmentView, BindingRole, CheckView, InspectedFile, StageSpec, StageStatus, StageView,
    WorkflowBinding, WorkflowControl, WorkflowView,
};
use heartwood_events::{CommandKind, CommandName, Event, Lifecycle, SessionProjection};

use crate::workspace::WorkspaceService;
use crate::{GatewayError, ProjectContext};

/// Applies a workflow event to the projection (the reducer's share for workflow runs).
pub(crate) fn apply(p: &mut SessionProjection, seq: u64, event: &Event) {
    match event {
        Event::WorkflowStarted(start) => {
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
                    })
                    .collect(),
                current: stages.first().map(|s| s.id.clone()),
                assessment: None,
                cancelled: false,
                controls: Vec::new(),
            });
        }
        Event::WorkflowStageStarted { stage, .. } => {
            if let Some(w) = &mut p.workflow {
                w.revision = seq;
                w.assessment = None;
                set_status(w, stage, StageStatus::Running);
            }
        }
        Event::WorkflowStageEvaluated { assessment, .. } => {
            if let Some(w) = &mut p.workflow {
                w.revision = seq;
                let status = if assessment.eligible {
                    StageStatus::AwaitingResearcher
                } else {
                    StageStatus::AwaitingEvaluation
                };
                set_status(w, &assessment.stage, status);
                w.assessment = Some((**assessment).clone());
            }
        }
        Event::WorkflowStageAccepted { stage, .. } => {
            if let Some(w) = &mut p.workflow {
                w.revision = seq;
                w.assessment = None;
                set_status(w, stage, StageStatus::Accepted);
                let next = w
                    .stages
                    .iter()
                    .position(|s| &s.spec.id == stage)
                    .and_then(|i| w.stages.get(i + 1))
                    .map(|s| s.spec.id.clone());
                w.current = next;
            }
        }
        Event::WorkflowCancelled { .. } => {
            if let Some(w) = &mut p.workflow {
                w.revision = seq;
                w.cancelled = true;
                w.current = None;
            }
        }
        _ => {}
    }
}

fn set_status(w: &mut WorkflowView, stage: &str, status: StageStatus) {
    if let Some(s) = w.stages.iter_mut().find(|s| s.spec.id == stage) {
        s.status = status;
    }
}

/// Refreshes what follows from the rest of the projection: a stage whose turn has ended
/// awaits evaluation, and the controls offered now (none while work is active or a set waits).
pub(crate) fn derive(p: &mut SessionProjection) {
    let ended = matches!(
        p.lifecycle,
        Lifecycle::Idle | Lifecycle::Finished | Lifecycle::Failed | Lifecycle::Stuck
    );
    let Some(w) = &mut p.workflow else {
        return;
    };
    if ended {
        for stage in &mut w.stages {
            if stage.status == StageStatus::Running {
                stage.status = StageStatus::AwaitingEvaluation;
            }
        }
    }
    w.controls = if ended && !w.cancelled {
        controls(p.session.as_str(), w)
    } else {
        Vec::new()
    };
}

fn controls(session: &str, w: &WorkflowView) -> Vec<WorkflowControl> {
    let Some(stage) = w.current_stage() else {
        return Vec::new();
    };
    let control = |command: CommandName, label: String| WorkflowControl {
        command,
        label,
        revision: w.revision,
        fingerprint: None,
        shell: format!(
            "heartwood workflow {} {session}",
            command.as_str().trim_start_matches("workflow_")
        ),
    };
    let title = &stage.spec.title;
    let mut out = Vec::new();
    match stage.status {
        StageStatus::Pending => {
            out.push(control(CommandName::WorkflowRun, format!("Run “{title}”")));
        }
        StageStatus::AwaitingEvaluation => {
            out.push(control(
                CommandName::WorkflowEvaluate,
                format!("Check “{title}”"),
            ));
            out.push(control(
                CommandName::WorkflowRun,
                format!("Run “{title}” again"),
            ));
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
            out.push(control(
                CommandName::WorkflowRun,
                format!("Run “{title}” again"),
            ));
        }
        StageStatus::Running | StageStatus::Accepted => {}
    }
    out.push(control(
        CommandName::WorkflowCancel,
        "Cancel the run".into(),
    ));
    out
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
        _ => return Ok(()),
    };
    let Some(w) = &p.workflow else {
        return Err("this session runs no workflow".into());
    };
    let Some(control) = w.control(name) else {
        let stage = w
            .current_stage()
            .map(|s| format!("stage “{}” is {}", s.spec.title, s.status.as_str()))
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
                })
                .collect(),
        },
    )))
}

/// The inputs whose bytes differ from the digests bound when the run started: a changed
/// original input invalidates the evidence built on it, so no stage runs on it.
pub(crate) fn changed_inputs(project: &ProjectContext, w: &WorkflowView) -> Vec<String> {
    let inputs: Vec<&WorkflowBinding> = w
        .bindings
        .iter()
        .filter(|b| b.role == BindingRole::Input)
        .collect();
    let paths: Vec<String> = inputs.iter().map(|b| b.path.clone()).collect();
    let now = WorkspaceService::open(project).and_then(|s| s.snapshot(&paths, None));
    match now {
        Ok(snapshot) => inputs
            .iter()
            .zip(&snapshot.files)
            .filter(|(b, d)| b.sha256.as_deref() != Some(d.sha256.as_str()))
            .map(|(b, _)| b.path.clone())
            .collect(),
        Err(_) => paths,
    }
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
    Ok(format!(
        "Workflow “{}”, stage “{}”.\n\nResearch question: {}\n\nRead:\n{}\n\nWrite:\n{}\n\n\
         Independent checks will judge the files you write, on their exact bytes:\n{}\n\n\
         Write only the files listed under Write, then finish with a short summary.",
        w.title,
        spec.title,
        w.question,
        list(&spec.consumes),
        list(&spec.produces),
        checks
    ))
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
    let results = service.check_stage(&w.definition, &stage)?;
    let assessment = service.assess_checked(&w.definition, &stage, &results)?;
    let mut problems = assessment.problems;
    let changed = changed_inputs(project, w);
    if !changed.is_empty() {
        problems.push(format!(
            "input changed since the run started: {}",
            changed.join(", ")
        ));
    }
    Ok(AssessmentView {
        stage,
        fingerprint: assessment.fingerprint,
        eligible: assessment.eligible && changed.is_empty(),
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
