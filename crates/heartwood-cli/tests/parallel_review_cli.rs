//! Parallel review through the CLI, against the scripted model server: an operator qualifies
//! the route (`heartwood review qualify`, evidence outside the project), a review's batch of
//! three reviewers is previewed, consented to and admitted, and runs at once; without evidence
//! it runs one after another; a captured file changed after consent refuses the admission.
//! Concurrency is read from the journal's order (every child running before any completes),
//! never from a clock.

mod support;

use std::path::Path;
use std::process::Output;

use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::{code, connect_scripted, text};

/// Runs the built binary in `project`, with the operator's evidence file when given.
async fn hw(project: &Path, evidence: Option<&Path>, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"));
    command.args(args).current_dir(project);
    match evidence {
        Some(file) => command.env("HEARTWOOD_REVIEW_QUALIFICATIONS", file),
        None => command.env_remove("HEARTWOOD_REVIEW_QUALIFICATIONS"),
    };
    command.output().await.expect("run heartwood")
}

/// A reviewer's structured answer, as slow as `delay_ms` per streamed chunk.
fn reviewer_answer(delay_ms: u64) -> Turn {
    let turn = Turn::calls(&[(
        "finish",
        json!({"result": {"proposals": [
            {"condition": "other", "path": "reports/readiness.json", "claim": "reads well"}
        ]}}),
    )])
    .with_usage(50, 10);
    if delay_ms == 0 {
        turn
    } else {
        turn.with_fault(Fault::ChunkDelayMs(delay_ms))
    }
}

fn stage_reported(artifacts: &[&str]) -> Turn {
    Turn::calls(&[(
        "finish",
        json!({"message": "done", "outcome": {
            "status": "completed", "artifacts": artifacts, "notes": ""
        }}),
    )])
}

/// The review turn: the agent asks three reviewers at once, each about one file.
fn three_reviewers() -> Turn {
    let ask = |file: &str| {
        (
            "task",
            json!({"subagent_type": "reviewer", "description": format!("review {file}"),
                   "prompt": format!("{file}: please review")}),
        )
    };
    Turn::calls(&[
        ask("reports/readiness.json"),
        ask("data/cohort.csv"),
        ask("analysis/plan.json"),
    ])
}

/// A project from the sleep-study fixture, its run started and its first stage's turn done,
/// connected to a server following `turns` after `before` (qualification replies).
async fn project_at_first_stage(
    before: Vec<Turn>,
    after: Vec<Turn>,
    evidence: Option<&Path>,
) -> (tempfile::TempDir, ScriptedModelServer) {
    project_after_thinking(before, 0, after, evidence).await
}

/// As [`project_at_first_stage`], the stage's turn thinking `thoughts` times before it
/// reports (each thought is one model call of the stage's budget).
async fn project_after_thinking(
    before: Vec<Turn>,
    thoughts: usize,
    after: Vec<Turn>,
    evidence: Option<&Path>,
) -> (tempfile::TempDir, ScriptedModelServer) {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, root);
    let mut turns = before;
    turns.extend((0..thoughts).map(|n| {
        Turn::calls(&[(
            "think",
            json!({"thought": format!("step {n} of the readiness check")}),
        )])
    }));
    turns.push(stage_reported(&["reports/readiness.json"]));
    turns.extend(after);
    let server = ScriptedModelServer::start(Script::of(turns))
        .await
        .expect("server");
    connect_scripted(root, &server.base_url());
    if let Some(file) = evidence {
        let qualified = hw(root, Some(file), &["review", "qualify", "--max", "3"]).await;
        assert!(
            qualified.status.success(),
            "{}{}",
            text(&qualified.stdout),
            text(&qualified.stderr)
        );
    }
    let started = hw(
        root,
        evidence,
        &["workflow", "start", "tabular-ols", "Does sleep predict it?"],
    )
    .await;
    assert!(started.status.success(), "{}", text(&started.stderr));
    let run = hw(root, evidence, &["workflow", "run"]).await;
    assert_eq!(code(&run), 0, "{}{}", text(&run.stdout), text(&run.stderr));
    (project, server)
}

async fn status(root: &Path, evidence: Option<&Path>) -> Value {
    let out = hw(root, evidence, &["workflow", "status", "--json"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The session's journal, event by event.
fn journal(root: &Path) -> Vec<Value> {
    let sessions = root.join(".heartwood/sessions");
    let session = std::fs::read_dir(&sessions)
        .expect("sessions")
        .next()
        .expect("one session")
        .expect("entry")
        .path();
    std::fs::read_to_string(session.join("events.jsonl"))
        .expect("events")
        .lines()
        .map(|l| serde_json::from_str(l).expect("event"))
        .collect()
}

/// Whether every one of `ids` was running before any of them completed.
fn ran_at_once(events: &[Value], ids: &[u64]) -> bool {
    let position = |id: u64, state: &str| {
        events.iter().position(|e| {
            e["type"] == "action_updated" && e["action_id"] == id && e["state"] == state
        })
    };
    let last_start = ids.iter().filter_map(|id| position(*id, "running")).max();
    let first_end = ids.iter().filter_map(|id| position(*id, "completed")).min();
    matches!((last_start, first_end), (Some(s), Some(e)) if s < e)
}

fn reviewer_ids(w: &Value) -> Vec<u64> {
    w["review_execution"]["reviewers"]
        .as_array()
        .expect("reviewers")
        .iter()
        .filter_map(|r| r["action_id"].as_u64())
        .collect()
}

fn verified(root: &Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["sessions", "verify", "last"])
        .current_dir(root)
        .output()
        .expect("verify");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_qualified_route_runs_three_reviewers_at_once_after_consent() {
    let operator = tempfile::tempdir().expect("operator's folder");
    let evidence = operator.path().join("qualifications.json");
    // One at a time (3), then two at once (3), then three at once (3).
    let qualification: Vec<Turn> = (0..9).map(|_| reviewer_answer(0)).collect();
    let after = vec![
        three_reviewers(),
        reviewer_answer(30),
        reviewer_answer(30),
        reviewer_answer(30),
        stage_reported(&[]),
    ];
    let (project, server) = project_at_first_stage(qualification, after, Some(&evidence)).await;
    let root = project.path();
    let kept: Value =
        serde_json::from_slice(&std::fs::read(&evidence).expect("evidence")).expect("json");
    assert_eq!(kept["entries"][0]["max_parallelism"], 3, "{kept:#}");

    let asked = hw(root, Some(&evidence), &["workflow", "review"]).await;
    assert_eq!(
        code(&asked),
        3,
        "{}{}",
        text(&asked.stdout),
        text(&asked.stderr)
    );
    let w = status(root, Some(&evidence)).await;
    let preview = &w["review_execution"]["preview"];
    assert_eq!(preview["parallelism"], 3, "{w:#}");
    assert_eq!(preview["reviewers"].as_array().map(Vec::len), Some(3));
    assert!(
        w["controls"]
            .as_array()
            .expect("controls")
            .iter()
            .any(|c| c["command"] == "workflow_review_parallel"),
        "{w:#}"
    );

    let consented = hw(root, Some(&evidence), &["workflow", "parallel"]).await;
    assert!(consented.status.success(), "{}", text(&consented.stderr));
    let decided = hw(root, Some(&evidence), &["decide", "--last", "allow"]).await;
    assert_eq!(
        code(&decided),
        0,
        "{}{}",
        text(&decided.stdout),
        text(&decided.stderr)
    );
    assert_eq!(server.remaining_turns(), 0);

    let w = status(root, Some(&evidence)).await;
    let execution = &w["review_execution"];
    assert_eq!(execution["mode"], "parallel", "{execution:#}");
    assert_eq!(execution["admitted"], 3);
    let ids = reviewer_ids(&w);
    let events = journal(root);
    assert!(ran_at_once(&events, &ids), "the three reviewers overlapped");
    // One snapshot of usage: the total is the rows' sum.
    let rows: u64 = execution["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter_map(|c| c["tokens"].as_u64())
        .sum();
    assert_eq!(execution["tokens"].as_u64(), Some(rows));
    assert_eq!(rows, 180);
    let order: Vec<&str> = events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|t| t.starts_with("review_"))
        .collect();
    assert_eq!(
        order,
        [
            "review_execution_prepared",
            "review_parallel_consented",
            "review_parallel_admitted"
        ]
    );
    verified(root);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_evidence_the_reviewers_run_one_after_another_and_nothing_offers_more() {
    let after = vec![
        three_reviewers(),
        reviewer_answer(0),
        reviewer_answer(0),
        reviewer_answer(0),
        stage_reported(&[]),
    ];
    let (project, server) = project_at_first_stage(Vec::new(), after, None).await;
    let root = project.path();
    // Evidence is never written into a project, and nothing is asked of the model first.
    let before = server.remaining_turns();
    let inside = root.join("qualifications.json");
    let refused = hw(
        root,
        None,
        &[
            "review",
            "qualify",
            "--evidence",
            inside.to_str().expect("utf-8"),
        ],
    )
    .await;
    assert_eq!(code(&refused), 1);
    assert!(
        text(&refused.stderr).contains("inside the project"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!inside.exists());
    assert_eq!(server.remaining_turns(), before);
    let asked = hw(root, None, &["workflow", "review"]).await;
    assert_eq!(
        code(&asked),
        3,
        "{}{}",
        text(&asked.stdout),
        text(&asked.stderr)
    );
    let w = status(root, None).await;
    assert!(w["review_execution"]["preview"].is_null(), "{w:#}");
    assert!(
        w["review_execution"]["why"]
            .as_str()
            .is_some_and(|why| why.contains("HEARTWOOD_REVIEW_QUALIFICATIONS")),
        "{w:#}"
    );
    let consent = hw(root, None, &["workflow", "parallel"]).await;
    assert_eq!(code(&consent), 1, "no control, so no consent");
    let decided = hw(root, None, &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    assert_eq!(server.remaining_turns(), 0);
    let w = status(root, None).await;
    assert_eq!(w["review_execution"]["mode"], "sequential");
    assert!(!ran_at_once(&journal(root), &reviewer_ids(&w)));
    verified(root);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_changed_after_consent_refuses_the_admission_and_the_batch_runs_in_order() {
    let operator = tempfile::tempdir().expect("operator's folder");
    let evidence = operator.path().join("qualifications.json");
    let qualification: Vec<Turn> = (0..9).map(|_| reviewer_answer(0)).collect();
    let after = vec![
        three_reviewers(),
        reviewer_answer(0),
        reviewer_answer(0),
        reviewer_answer(0),
        stage_reported(&[]),
    ];
    let (project, server) = project_at_first_stage(qualification, after, Some(&evidence)).await;
    let root = project.path();
    let asked = hw(root, Some(&evidence), &["workflow", "review"]).await;
    assert_eq!(code(&asked), 3, "{}", text(&asked.stderr));
    let consented = hw(root, Some(&evidence), &["workflow", "parallel"]).await;
    assert!(consented.status.success(), "{}", text(&consented.stderr));
    // A captured file changes between consent and dispatch.
    let w = status(root, Some(&evidence)).await;
    let captured = w["review_execution"]["preview"]["evidence"][0]["path"]
        .as_str()
        .expect("a captured file")
        .to_owned();
    let path = root.join(&captured);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.extend_from_slice(b"\n");
    std::fs::write(&path, bytes).expect("edit");

    let decided = hw(root, Some(&evidence), &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    assert_eq!(server.remaining_turns(), 0);
    let w = status(root, Some(&evidence)).await;
    let execution = &w["review_execution"];
    assert_eq!(execution["mode"], "sequential", "{execution:#}");
    let why = execution["why"].as_str().unwrap_or_default();
    assert!(
        why.contains(&format!("{captured} (changed since the preview)")),
        "{why}"
    );
    assert!(!ran_at_once(&journal(root), &reviewer_ids(&w)));
    verified(root);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_the_stage_cannot_pay_for_is_not_offered_at_once() {
    let operator = tempfile::tempdir().expect("operator's folder");
    let evidence = operator.path().join("qualifications.json");
    let qualification: Vec<Turn> = (0..9).map(|_| reviewer_answer(0)).collect();
    // Readiness allows 20 model calls: 17 thoughts and the turns' other calls leave 2 (as the
    // stage's budget line counts them) for 3 reviewers.
    let (project, _server) =
        project_after_thinking(qualification, 17, vec![three_reviewers()], Some(&evidence)).await;
    let root = project.path();
    let asked = hw(root, Some(&evidence), &["workflow", "review"]).await;
    assert_eq!(
        code(&asked),
        3,
        "{}{}",
        text(&asked.stdout),
        text(&asked.stderr)
    );
    let w = status(root, Some(&evidence)).await;
    let execution = &w["review_execution"];
    assert!(execution["preview"].is_null(), "{execution:#}");
    assert!(
        execution["why"]
            .as_str()
            .is_some_and(|why| why.contains("2 model calls left, fewer than the 3 reviewers")),
        "{execution:#}"
    );
    let consent = hw(root, Some(&evidence), &["workflow", "parallel"]).await;
    assert_eq!(code(&consent), 1, "nothing to consent to");
    verified(root);
}

#[tokio::test(flavor = "multi_thread")]
async fn status_says_whether_the_operators_evidence_is_accepted_or_why_not() {
    use std::os::unix::fs::PermissionsExt;
    let operator = tempfile::tempdir().expect("operator's folder");
    let evidence = operator.path().join("qualifications.json");
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let server =
        ScriptedModelServer::start(Script::of((0..9).map(|_| reviewer_answer(0)).collect()))
            .await
            .expect("server");
    connect_scripted(root, &server.base_url());
    let review_line = |out: &Output| {
        text(&out.stdout)
            .lines()
            .find(|l| l.starts_with("review    "))
            .unwrap_or_else(|| panic!("no review line:\n{}", text(&out.stdout)))
            .to_owned()
    };
    let said = review_line(&hw(root, None, &["status"]).await);
    assert!(
        said.contains("HEARTWOOD_REVIEW_QUALIFICATIONS is not set"),
        "{said}"
    );

    let qualified = hw(root, Some(&evidence), &["review", "qualify", "--max", "3"]).await;
    assert!(qualified.status.success(), "{}", text(&qualified.stderr));
    let said = review_line(&hw(root, Some(&evidence), &["status"]).await);
    assert!(
        said.contains("accepted") && said.contains("for 3 reviewers at once until"),
        "{said}"
    );
    let kept = std::fs::read_to_string(&evidence).expect("evidence");
    let refusal = |file: &Path| {
        let file = file.to_path_buf();
        async move { review_line(&hw(root, Some(&file), &["status"]).await) }
    };
    // Inside the project.
    let inside = root.join("qualifications.json");
    std::fs::write(&inside, &kept).expect("copy");
    let said = refusal(&inside).await;
    assert!(
        said.contains("refused") && said.contains("inside the project"),
        "{said}"
    );
    // Writable by others.
    let open = operator.path().join("open.json");
    std::fs::write(&open, &kept).expect("copy");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let said = refusal(&open).await;
    assert!(
        said.contains("written by its group or by everyone"),
        "{said}"
    );
    // Another route's entry.
    let mut other: Value = serde_json::from_str(&kept).expect("json");
    other["entries"][0]["route"] = json!("0".repeat(64));
    let elsewhere = operator.path().join("other.json");
    std::fs::write(&elsewhere, other.to_string()).expect("write");
    let said = refusal(&elsewhere).await;
    assert!(
        said.contains("no qualification evidence for this route"),
        "{said}"
    );
    // Expired.
    let mut old: Value = serde_json::from_str(&kept).expect("json");
    old["entries"][0]["expires_at"] = json!("2020-01-01T00:00:00Z");
    let expired = operator.path().join("expired.json");
    std::fs::write(&expired, old.to_string()).expect("write");
    let said = refusal(&expired).await;
    assert!(said.contains("expired at 2020-01-01"), "{said}");
}
