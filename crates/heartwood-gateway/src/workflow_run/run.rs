//! The run's dealings with the project: starting it (binding inputs by digest), the stage's
//! prompt, the evidence it relies on and whether it drifted, and the stage's checks.

use super::*;

/// Why a workflow run cannot start; the refusal carries its text, which says what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unstartable {
    /// No research question.
    #[error("the research question is empty; say what the run should answer")]
    EmptyQuestion,
    /// The definition, the skills or the project could not be read.
    #[error(transparent)]
    Project(Box<GatewayError>),
    /// A stage names a skill no source offers.
    #[error(
        "{definition} is not supported here: its stage {stage:?} names the skill {skill:?}, which no skill source offers (`heartwood skills ls` lists them)"
    )]
    UnknownSkill {
        /// The definition.
        definition: String,
        /// The stage.
        stage: String,
        /// The skill.
        skill: String,
    },
    /// A stage names a skill that is not active.
    #[error(
        "{definition}'s stage {stage:?} uses the skill {skill:?}, which is not active: review it with `heartwood skills show {skill}`, approve it and activate it first"
    )]
    InactiveSkill {
        /// The definition.
        definition: String,
        /// The stage.
        stage: String,
        /// The skill.
        skill: String,
    },
    /// An input the definition does not declare.
    #[error("{definition} has no input {id:?}; its inputs are {}", inputs.join(", "))]
    NoInput {
        /// The definition.
        definition: String,
        /// The input asked for.
        id: String,
        /// The inputs it declares.
        inputs: Vec<String>,
    },
    /// An input's path is not a project path.
    #[error("the inputs cannot be bound: {0}")]
    BadInput(#[source] heartwood_workspace::PathError),
    /// An input cannot be read.
    #[error("the inputs cannot be bound: {0}")]
    Unreadable(#[source] heartwood_workspace::AccessError),
}

impl<E: Into<GatewayError>> From<E> for Unstartable {
    fn from(e: E) -> Self {
        Unstartable::Project(Box::new(e.into()))
    }
}

/// The JSON Schema of the `outcome` a stage turn's `finish` must carry.
pub(crate) fn outcome_schema() -> serde_json::Value {
    heartwood_events::schema::inline::<StageOutcome>()
}

/// Every skill the definition's stages name must be offered by the catalog (a definition
/// naming an unknown skill is not supported here) and active, so its stages' agents get it.
pub(super) fn skills_usable(
    project: &ProjectContext,
    definition: &heartwood_workflow::Definition,
) -> Result<(), Unstartable> {
    let named: Vec<(&str, &str)> = definition
        .stages
        .iter()
        .flat_map(|s| s.skills.iter().map(move |k| (s.id.as_str(), k.as_str())))
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    let service = crate::skills::SkillsService::open(project);
    let catalog = service.catalog()?;
    let active = service.for_agent()?;
    for (stage, skill) in named {
        let (definition, stage, skill) = (definition.id.clone(), stage.to_owned(), skill);
        if !catalog.skills.iter().any(|s| s.name == skill) {
            let skill = skill.to_owned();
            return Err(Unstartable::UnknownSkill {
                definition,
                stage,
                skill,
            });
        }
        if !active.contains(skill) {
            let skill = skill.to_owned();
            return Err(Unstartable::InactiveSkill {
                definition,
                stage,
                skill,
            });
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
) -> Result<Event, Unstartable> {
    if question.trim().is_empty() {
        return Err(Unstartable::EmptyQuestion);
    }
    let (found, entry) = resolve(project, definition)?;
    skills_usable(project, &found)?;
    for id in chosen.keys() {
        if !found.inputs.iter().any(|i| &i.id == id) {
            return Err(Unstartable::NoInput {
                definition: definition.to_owned(),
                id: id.clone(),
                inputs: found.inputs.iter().map(|i| i.id.clone()).collect(),
            });
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
    let workspace = open_workspace(project)?;
    let paths = inputs
        .iter()
        .map(|(_, p)| heartwood_workspace::ProjectPath::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Unstartable::BadInput)?;
    let snapshot = workspace
        .snapshot(&paths, Some(question))
        .map_err(Unstartable::Unreadable)?;
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
            source: Some(entry.source),
            definition_sha256: Some(entry.sha256.clone()),
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
pub(super) fn drifted(
    project: &ProjectContext,
    relied: &[(String, Option<String>)],
) -> Vec<String> {
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
pub(crate) fn stage_prompt(
    definition: &heartwood_workflow::Definition,
    w: &WorkflowView,
) -> Result<String, GatewayError> {
    let stage = w
        .current_stage()
        .ok_or(WorkflowUnavailable::NoCurrentStage)?;
    let spec = definition
        .stages
        .iter()
        .find(|s| s.id == stage.spec.id)
        .ok_or_else(|| WorkflowUnavailable::no_stage(definition, &stage.spec.id))?;
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
    // A report's figures are judged through its claims file: say how to write one.
    let claims = spec
        .checks
        .iter()
        .find(|c| c.check == "report_claims")
        .and_then(|c| c.reads.get(1))
        .map_or_else(String::new, |id| {
            format!(
                "\n\n{}",
                heartwood_workflow::checks::claims::format::prompt(&path_of(id))
            )
        });
    Ok(format!(
        "Workflow “{}”, stage “{}”.\n\nResearch question: {}\n\n{skills}Read:\n{}\n\nWrite:\n{}\n\n\
         Independent checks will judge the files you write, on their exact bytes:\n{}{claims}\n\n\
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
    project: &ProjectContext,
    w: &WorkflowView,
) -> Result<heartwood_workflow::Definition, GatewayError> {
    let mut definition = crate::workflow_definitions::bound(project, w)?;
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
pub(super) fn turn_problems(w: &WorkflowView) -> Vec<String> {
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
        .ok_or(WorkflowUnavailable::NoCurrentStage)?
        .spec
        .id
        .clone();
    let workspace = open_workspace(project)?;
    let (results, assessment) =
        check_and_assess(&workspace, &bound_definition(project, w)?, &stage, |r| {
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
                version: r.version.clone(),
                status: r.status,
                reasons: r.reasons.clone(),
                inspected: r
                    .inspected
                    .iter()
                    .map(|f| InspectedFile {
                        path: f.path.clone(),
                        sha256: Some(f.sha256.clone()),
                    })
                    .collect(),
                claims: r.claims.clone(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod skill_reference_tests {
    use super::*;

    fn definition_naming(skill: &str) -> heartwood_workflow::Definition {
        let mut definition = maintained("tabular-ols").expect("maintained");
        definition.stages[0].skills = vec![skill.to_owned()];
        definition
    }

    #[test]
    fn a_definition_naming_an_unknown_or_inactive_skill_is_refused_at_start() {
        let project = tempfile::tempdir().expect("project");
        std::fs::create_dir(project.path().join(".heartwood")).expect("state");
        let context = ProjectContext::at(project.path()).expect("project");
        let unknown = skills_usable(&context, &definition_naming("no-such-skill"))
            .expect_err("an unknown skill")
            .to_string();
        assert!(unknown.contains("not supported"), "{unknown}");
        let inactive = skills_usable(&context, &definition_naming("group-disjoint-splits"))
            .expect_err("a known skill that is not active")
            .to_string();
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
