//! `cargo xtask bench export`: a 10,000-event workflow session (stage turns with actions,
//! decisions, usage and evaluations over the sleep-study project) exported as a Provenance Run
//! RO-Crate, then verified by `heartwood crate verify`'s code and by the crate's own Python
//! verifier: the time of each and the crate's size.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use heartwood_audit::SessionStore;
use heartwood_events::workflow::{
    AssessmentView, BindingRole, CheckStatus, CheckView, InspectedFile, StageSpec, WorkflowBinding,
    WorkflowStart,
};
use heartwood_events::{
    ActionProposal, ActionSetId, ActionState, Decision, Event, ExportFormat, ExportRequest,
    RiskLevel, SessionId, UsageFigures,
};
use heartwood_gateway::{ProjectContext, SessionAdmin};
use sha2::Digest as _;

const EVENTS: usize = 10_000;

/// Runs the benchmark.
pub fn run() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, dir.path());
    let id = SessionId::parse("bench-export")?;
    record(dir.path(), &id)?;
    let project = ProjectContext::at(dir.path()).context("a UTF-8 project path")?;
    let admin = SessionAdmin::new(&project);
    let out = dir.path().join("crate");
    let request = ExportRequest {
        format: ExportFormat::RoCrate,
        destination: Some(out.display().to_string()),
        ..ExportRequest::default()
    };
    let start = Instant::now();
    admin.export_as(id.as_str(), &request)?;
    let export = start.elapsed();
    let (files, bytes) = size_of(&out)?;
    let start = Instant::now();
    let verdict = heartwood_gateway::verify_crate(&out)?;
    let verify = start.elapsed();
    anyhow::ensure!(verdict.problems.is_empty(), "{:?}", verdict.problems);
    let start = Instant::now();
    let python = std::process::Command::new("python3")
        .arg(out.join("verify_crate.py"))
        .arg(&out)
        .output()
        .context("python3")?;
    let py = start.elapsed();
    anyhow::ensure!(
        python.status.success(),
        "{}",
        String::from_utf8_lossy(&python.stdout)
    );
    println!(
        "export {EVENTS} events as an RO-Crate      {:>8.1} ms   ({files} files, {:.2} MiB; journal records {})",
        export.as_secs_f64() * 1e3,
        bytes as f64 / (1024.0 * 1024.0),
        verdict.records
    );
    println!(
        "verify it (heartwood crate verify)        {:>8.1} ms",
        verify.as_secs_f64() * 1e3
    );
    println!(
        "verify it (python3 verify_crate.py)       {:>8.1} ms",
        py.as_secs_f64() * 1e3
    );
    Ok(())
}

fn size_of(dir: &Path) -> Result<(usize, u64)> {
    let (mut files, mut bytes) = (0, 0);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            let (f, b) = size_of(&entry.path())?;
            files += f;
            bytes += b;
        } else {
            files += 1;
            bytes += entry.metadata()?.len();
        }
    }
    Ok((files, bytes))
}

fn sha256(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Writes the session: a started run, then stage turns until the journal holds `EVENTS`.
fn record(project: &Path, id: &SessionId) -> Result<()> {
    let definition = heartwood_workflow::catalog::definition("tabular-ols")?.context("catalog")?;
    let mut bindings = Vec::new();
    for (bid, path, role) in definition
        .inputs
        .iter()
        .map(|i| (&i.id, &i.path, BindingRole::Input))
        .chain(
            definition
                .artifacts
                .iter()
                .map(|a| (&a.id, &a.path, BindingRole::Artifact)),
        )
    {
        let sha = sha256(&project.join(path)).ok();
        bindings.push(WorkflowBinding {
            id: bid.clone(),
            path: path.clone(),
            role,
            sha256: sha,
        });
    }
    let start = WorkflowStart {
        run_id: "w-bench".into(),
        definition: definition.id.clone(),
        version: definition.version.clone(),
        title: definition.title.clone(),
        question: "Does sleep predict the test score?".into(),
        question_sha256: String::new(),
        source: None,
        definition_sha256: None,
        bindings: bindings.clone(),
        stages: definition
            .stages
            .iter()
            .map(|s| StageSpec {
                id: s.id.clone(),
                title: s.title.clone(),
                researcher_gate: s.researcher_gate,
                budget: None,
            })
            .collect(),
    };
    let store = SessionStore::new(project);
    let (mut writer, _) = store.create_or_open_writer(id, "native")?;
    writer.append(None, vec![Event::WorkflowStarted(Box::new(start))])?;
    let inspected: Vec<InspectedFile> = bindings
        .iter()
        .map(|b| InspectedFile {
            path: b.path.clone(),
            sha256: b.sha256.clone(),
        })
        .collect();
    let mut action = 0u64;
    let mut written = 2usize;
    while written < EVENTS {
        let stage = &definition.stages[action as usize % definition.stages.len()];
        let mut batch = vec![Event::WorkflowStageStarted {
            run_id: "w-bench".into(),
            stage: stage.id.clone(),
        }];
        for _ in 0..5 {
            action += 1;
            batch.push(Event::ActionProposed {
                action: ActionProposal {
                    action_id: action,
                    response_id: format!("r{action}"),
                    tool: "terminal".into(),
                    arguments: format!(
                        "{{\"command\":\"python analysis/fit.py --step {action}\"}}"
                    ),
                    risk: RiskLevel::Low,
                    thought: None,
                    sandbox: Some(heartwood_events::SandboxLevel::ProjectWrite),
                },
            });
            batch.push(Event::DecisionRecorded {
                set_id: ActionSetId::parse(&format!("set-{action}"))?,
                revision: action,
                decision: Decision::AllowOnce,
                reason: None,
            });
            batch.push(Event::ActionUpdated {
                action_id: action,
                version: 2,
                state: ActionState::Completed,
                detail: None,
                exit_code: Some(0),
                changed_path: None,
            });
            batch.push(Event::UsageRecorded {
                purpose: "agent".into(),
                usage: UsageFigures {
                    prompt_tokens: 900,
                    completion_tokens: 60,
                    calls: 1,
                    ..UsageFigures::default()
                },
            });
        }
        batch.push(Event::WorkflowStageEvaluated {
            run_id: "w-bench".into(),
            assessment: Box::new(AssessmentView {
                stage: stage.id.clone(),
                fingerprint: format!("{action:064x}"),
                eligible: false,
                problems: vec!["not accepted in the benchmark".into()],
                checks: vec![CheckView {
                    check: "python_syntax".into(),
                    version: None,
                    status: CheckStatus::Failed,
                    reasons: vec!["bench".into()],
                    inspected: inspected.clone(),
                    claims: Vec::new(),
                }],
            }),
        });
        written += batch.len();
        writer.append(None, batch)?;
    }
    Ok(())
}
