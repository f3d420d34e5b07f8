//! `cargo xtask bench workflow`: every maintained check at the limits (10,000 rows, 128 columns,
//! 128 training groups), the full stage set timed together; and the gateway's cost of one stage
//! transition (journal + projection).

use std::time::Instant;

use anyhow::{Result, bail};
use heartwood_workflow::Status;
use heartwood_workflow::catalog;
use heartwood_workflow::check::{MAX_COLUMNS, MAX_GROUPS, MAX_ROWS};
use heartwood_workflow::checks::fit;
use heartwood_workflow::evaluate::check_stage;
use heartwood_workspace::Workspace;

const REPEATS: usize = 5;

pub fn run() -> Result<()> {
    let dir = crate::workspace_root().join("target/bench-workflow");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    generate(&dir)?;
    let definition =
        catalog::definition("tabular-ols")?.ok_or_else(|| anyhow::anyhow!("no definition"))?;
    let workspace = Workspace::open(&dir)?;
    let stages: Vec<String> = definition.stages.iter().map(|s| s.id.clone()).collect();
    let (best, per_stage) = time_stages(&workspace, &definition)?;
    let python = {
        let mut fastest = f64::INFINITY;
        for _ in 0..REPEATS {
            let t = Instant::now();
            std::process::Command::new("python3")
                .args(["-I", "-c", "import ast"])
                .status()?;
            fastest = fastest.min(t.elapsed().as_secs_f64());
        }
        fastest
    };
    let ms = best * 1e3;
    println!(
        "{:<52} {ms:>8.1} ms   target < 100 ms  {}",
        format!(
            "all {} stages, {MAX_ROWS} rows x {MAX_COLUMNS} columns, {MAX_GROUPS} groups",
            stages.len()
        ),
        if ms < 100.0 { "ok" } else { "MISSED" }
    );
    let stages_text: Vec<String> = stages
        .iter()
        .zip(&per_stage)
        .map(|(s, t)| format!("{s} {:.1}", t * 1e3))
        .collect();
    println!("{:<52} {} ms", "  per stage", stages_text.join(", "));
    println!(
        "{:<52} {:>8.1} ms   (the python_syntax check waits for it; it overlaps the model check)",
        "  python3 interpreter start-up alone",
        python * 1e3
    );
    super::workflow_models::run()?;
    let transition = stage_transition()?;
    println!(
        "{:<52} {:>8.2} ms   target < 5 ms  {}",
        "stage transition (journal with fsync + projection)",
        transition * 1e3,
        if transition * 1e3 < 5.0 {
            "ok"
        } else {
            "MISSED"
        }
    );
    Ok(())
}

/// Every stage of `definition` run `REPEATS` times on `workspace`: the best time for all stages
/// together and for each stage, in seconds. Every check must pass, except the reproduction's
/// byte comparison, which never passes on bytes alone.
pub(super) fn time_stages(
    workspace: &Workspace,
    definition: &heartwood_workflow::Definition,
) -> Result<(f64, Vec<f64>)> {
    let mut best = f64::INFINITY;
    let mut per_stage = vec![f64::INFINITY; definition.stages.len()];
    for _ in 0..REPEATS {
        // Each repeat is one cold evaluation: nothing remembered from the previous one (later
        // stages still reuse what earlier stages of the same pass parsed and fitted).
        heartwood_workflow::evaluate::forget();
        let started = Instant::now();
        for (i, stage) in definition.stages.iter().enumerate() {
            let t = Instant::now();
            let results = check_stage(workspace, definition, &stage.id).unwrap_or_default();
            per_stage[i] = per_stage[i].min(t.elapsed().as_secs_f64());
            let expected = |check: &str| {
                if check == "byte_comparison" {
                    Status::Unverified
                } else {
                    Status::Passed
                }
            };
            if let Some(bad) = results.iter().find(|r| r.status != expected(&r.check)) {
                bail!(
                    "{}: {} is {:?}: {:?}",
                    stage.id,
                    bad.check,
                    bad.status,
                    bad.reasons
                );
            }
        }
        best = best.min(started.elapsed().as_secs_f64());
    }
    Ok((best, per_stage))
}

/// The gateway's cost of one workflow transition: an evaluation with its checks' results
/// appended durably to the session's journal, applied to the projection and published, as
/// `workflow_evaluate` records it (the checks themselves are timed above). The median of
/// `TRANSITIONS`.
fn stage_transition() -> Result<f64> {
    use heartwood_events::Event;
    use heartwood_events::workflow::{
        AssessmentView, BindingRole, CheckView, InspectedFile, StageSpec, WorkflowBinding,
        WorkflowStart,
    };
    const TRANSITIONS: usize = 200;
    let dir = crate::workspace_root().join("target/bench-workflow-session");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let project = heartwood_gateway::ProjectContext::at(&dir)?;
    let gateway = heartwood_gateway::SessionGateway::new(project);
    let id = heartwood_events::SessionId::parse("bench-workflow")?;
    let digest = "a".repeat(64);
    gateway.bench_record(
        &id,
        vec![Event::WorkflowStarted(Box::new(WorkflowStart {
            run_id: "w-bench".into(),
            definition: "tabular-ols".into(),
            version: "1.1.0".into(),
            title: "bench".into(),
            source: None,
            definition_sha256: None,
            question: "q".into(),
            question_sha256: digest.clone(),
            bindings: vec![WorkflowBinding {
                id: "table".into(),
                path: "data/cohort.csv".into(),
                role: BindingRole::Input,
                sha256: Some(digest.clone()),
            }],
            stages: vec![StageSpec {
                id: "model".into(),
                title: "Model".into(),
                researcher_gate: true,
                budget: None,
            }],
        }))],
    )?;
    let assessment = AssessmentView {
        stage: "model".into(),
        fingerprint: digest.clone(),
        eligible: true,
        problems: Vec::new(),
        checks: ["python_syntax", "univariate_ols"]
            .iter()
            .map(|check| CheckView {
                check: (*check).into(),
                version: Some("1".into()),
                status: heartwood_events::workflow::CheckStatus::Passed,
                reasons: Vec::new(),
                inspected: (0..5)
                    .map(|i| InspectedFile {
                        path: format!("file{i}"),
                        sha256: Some(digest.clone()),
                    })
                    .collect(),
                claims: Vec::new(),
            })
            .collect(),
    };
    let mut times = Vec::with_capacity(TRANSITIONS);
    for _ in 0..TRANSITIONS {
        let event = Event::WorkflowStageEvaluated {
            run_id: "w-bench".into(),
            assessment: Box::new(assessment.clone()),
        };
        let started = Instant::now();
        gateway.bench_record(&id, vec![event])?;
        times.push(started.elapsed().as_secs_f64());
    }
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(gateway.close());
    times.sort_by(f64::total_cmp);
    Ok(times[TRANSITIONS / 2])
}

/// A project at the limits, with every artifact correct (computed here with the same formulas
/// the compliance suite checks against Python).
fn generate(dir: &std::path::Path) -> Result<()> {
    for sub in ["data", "outputs", "analysis", "reports"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let groups = MAX_GROUPS + 1; // the last one is held out
    let extra = MAX_COLUMNS - 5;
    let mut header = vec![
        "id".to_owned(),
        "site".into(),
        "x".into(),
        "y".into(),
        "z".into(),
    ];
    header.extend((0..extra).map(|c| format!("c{c}")));
    let mut table = header.join(",") + "\n";
    let mut split = String::from("key,partition\n");
    let mut rows = Vec::new();
    let mut state = 7u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..MAX_ROWS {
        let g = i % groups;
        let x = next() * 10.0;
        let y = 2.0 + 0.5 * x + next();
        let mut fields = vec![
            format!("u{i}"),
            format!("g{g}"),
            format!("{x}"),
            format!("{y}"),
            format!("{}", next()),
        ];
        fields.extend((0..extra).map(|c| format!("{}", (i + c) % 97)));
        table.push_str(&(fields.join(",") + "\n"));
        let held = g == groups - 1;
        split.push_str(&format!(
            "u{i},{}\n",
            if held { "held_out" } else { "train" }
        ));
        rows.push((format!("u{i}"), g, x, y, held));
    }
    std::fs::write(dir.join("data/cohort.csv"), table)?;
    std::fs::write(dir.join("outputs/split.csv"), split)?;
    let held_group = format!("g{}", groups - 1);
    std::fs::write(
        dir.join("data/dictionary.json"),
        serde_json::json!({
            "primary_key": "id", "group": "site", "outcome": "y", "predictors": ["x", "z"],
            "held_out_groups": [held_group],
            "columns": {"id": {"type": "text", "required": true},
                        "x": {"type": "number", "required": true, "min": 0, "max": 10},
                        "y": {"type": "number", "required": true}}
        })
        .to_string(),
    )?;
    let mut sizes = std::collections::BTreeMap::new();
    for r in &rows {
        *sizes.entry(format!("g{}", r.1)).or_insert(0usize) += 1;
    }
    std::fs::write(
        dir.join("reports/readiness.json"),
        serde_json::json!({"rows": MAX_ROWS, "columns": MAX_COLUMNS, "group_sizes": sizes})
            .to_string(),
    )?;
    std::fs::write(
        dir.join("analysis/plan.json"),
        serde_json::json!({"outcome": "y", "predictor": "x", "group": "site",
            "split": "group_disjoint", "held_out_groups": [held_group]})
        .to_string(),
    )?;
    let train: Vec<_> = rows.iter().filter(|r| !r.4).collect();
    let points: Vec<(f64, f64)> = train.iter().map(|r| (r.2, r.3)).collect();
    let line = fit(&points).ok_or_else(|| anyhow::anyhow!("degenerate data"))?;
    let (slope, intercept) = (line.slope, line.intercept);
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let held: Vec<_> = rows.iter().filter(|r| r.4).collect();
    let predictions: Vec<_> = held
        .iter()
        .map(|r| serde_json::json!({"key": r.0, "predicted": line.predict(r.2)}))
        .collect();
    let rmse = |f: &dyn Fn(f64) -> f64| {
        (held.iter().map(|r| (r.3 - f(r.2)).powi(2)).sum::<f64>() / held.len() as f64).sqrt()
    };
    let logo: Vec<_> = (0..groups - 1)
        .map(|g| {
            let rest: Vec<(f64, f64)> = train.iter().filter(|r| r.1 != g).map(|r| (r.2, r.3)).collect();
            serde_json::json!({"group": format!("g{g}"), "slope": fit(&rest).map(|f| f.slope).unwrap_or(0.0)})
        })
        .collect();
    std::fs::write(
        dir.join("outputs/model.json"),
        serde_json::json!({
            "outcome": "y", "predictor": "x", "slope": slope, "intercept": intercept,
            "held_out_predictions": predictions,
            "held_out_rmse": rmse(&|x| line.predict(x)),
            "mean_comparator_rmse": rmse(&|_| mean_y),
            "leave_one_group_out": logo,
        })
        .to_string(),
    )?;
    std::fs::write(
        dir.join("analysis/fit.py"),
        "import statistics\nprint(statistics.fmean([1, 2]))\n",
    )?;
    // A report whose figures are bound by a claims file, as the report stage asks.
    let held_out_rmse = rmse(&|x| line.predict(x));
    std::fs::write(
        dir.join("reports/final.md"),
        format!(
            "# Result\n\n{}\n\nThe held-out RMSE is {held_out_rmse:.4} (n = {}). The slope \
             on x is {slope:.4}.\n",
            "word ".repeat(50),
            held.len()
        ),
    )?;
    std::fs::write(
        dir.join("reports/claims.json"),
        serde_json::json!({"claims": [
            {"line": 5, "value": format!("{held_out_rmse:.4}"), "quantity": "rmse", "sample": "held_out"},
            {"line": 5, "value": held.len().to_string(), "quantity": "n", "sample": "held_out"},
            {"line": 5, "value": format!("{slope:.4}"), "quantity": "estimate", "coefficient": "x"},
        ]})
        .to_string(),
    )?;
    std::fs::copy(
        dir.join("outputs/model.json"),
        dir.join("outputs/model.reproduced.json"),
    )?;
    Ok(())
}
