//! A research workflow run inside a session, end to end: the real binary, the scripted model
//! server, the example project. A stage runs as an ordinary agent turn under review; its
//! checks, run by the gateway on the exact bytes, decide whether it can be accepted; the
//! acceptance binds to the revision and fingerprint shown; an input edited afterwards stops
//! the next stage.

#[path = "../support/mod.rs"]
mod support;

use std::path::Path;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::{code, connect_scripted, finish, heartwood, heartwood_async, text};

mod acceptance;
mod lab;
mod review;
mod ro_crate;

/// A stage turn's `finish` with its structured outcome.
fn finish_stage(message: &str) -> Turn {
    Turn::calls(&[(
        "finish",
        json!({"message": message, "outcome": {
            "status": "completed",
            "artifacts": ["reports/readiness.json"],
            "notes": "counts computed from the table"
        }}),
    )])
    .with_usage(100, 20)
}

fn status(project: &Path) -> Value {
    let out = heartwood(project, &["workflow", "status", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn stage_status(w: &Value, stage: &str) -> String {
    w["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["id"] == stage)
        .and_then(|s| s["status"].as_str())
        .expect("stage")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stage_advances_only_on_its_checks_and_the_researchers_acceptance() {
    let project = tempfile::tempdir().expect("project");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, project.path());
    let good = std::fs::read(project.path().join("reports/readiness.json")).expect("report");
    std::fs::remove_file(project.path().join("reports/readiness.json")).expect("rm");
    let keep = project.path().join("good-readiness.json");
    std::fs::write(&keep, &good).expect("keep");

    let write = |content: &str| {
        Turn::calls(&[(
            "terminal",
            json!({"command": format!("mkdir -p reports && {content} > reports/readiness.json")}),
        )])
        .with_usage(100, 20)
    };
    let server = ScriptedModelServer::start(Script::of(vec![
        // First run: a report that claims the wrong number of rows, reported as completed.
        write("echo '{\"rows\": 99}'"),
        finish_stage("Wrote the readiness report."),
        // Second run: the right report, but the turn ends with prose and no outcome.
        write(&format!("cat {}", keep.display())),
        finish("All done, the report is perfect.").with_usage(100, 20),
        // Third run: the right report and its structured outcome.
        write(&format!("cat {}", keep.display())),
        finish_stage("Rewrote the readiness report."),
    ]))
    .await
    .expect("server");
    connect_scripted(project.path(), &server.base_url());

    let started = heartwood(
        project.path(),
        &[
            "workflow",
            "start",
            "tabular-ols",
            "Does sleep predict the test score?",
        ],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    assert!(
        text(&started.stdout).contains("> readiness"),
        "{}",
        text(&started.stdout)
    );
    let w = status(project.path());
    assert_eq!(stage_status(&w, "readiness"), "pending");
    let table = w["bindings"]
        .as_array()
        .expect("bindings")
        .iter()
        .find(|b| b["id"] == "table")
        .expect("the table is bound");
    assert_eq!(table["path"], "data/cohort.csv");
    assert_eq!(table["sha256"].as_str().map(str::len), Some(64));

    // The stage is an ordinary turn: its actions wait for the decision like any other.
    let run = heartwood_async(project.path(), &["workflow", "run"]).await;
    assert_eq!(code(&run), 3, "{}{}", text(&run.stdout), text(&run.stderr));
    let prompt = server.requests()[0].to_string();
    assert!(
        prompt.contains("reports/readiness.json") && prompt.contains("readiness_report"),
        "the stage prompt names where to write and what will judge it: {prompt}"
    );
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    assert_eq!(
        stage_status(&status(project.path()), "readiness"),
        "awaiting_evaluation"
    );

    // The model said it wrote the report; the checks say the report is wrong.
    // A stage that is not eligible is a failed step for scripts: exit 7 (the documented code
    // of a not-eligible refusal), saying why and what continues the run.
    let evaluated = heartwood(project.path(), &["workflow", "evaluate"]);
    assert_eq!(code(&evaluated), 7, "{}", text(&evaluated.stderr));
    assert!(
        text(&evaluated.stderr).contains("stage readiness is not eligible")
            && text(&evaluated.stderr).contains("heartwood workflow run"),
        "{}",
        text(&evaluated.stderr)
    );
    assert!(
        text(&evaluated.stdout).contains("not eligible"),
        "{}",
        text(&evaluated.stdout)
    );
    let w = status(project.path());
    assert_eq!(w["assessment"]["eligible"], false);
    assert!(
        !w["controls"]
            .as_array()
            .expect("controls")
            .iter()
            .any(|c| c["command"] == "workflow_accept"),
        "an ineligible stage offers no acceptance"
    );
    let forced = heartwood(
        project.path(),
        &[
            "workflow",
            "accept",
            "last",
            "--revision",
            &w["revision"].to_string(),
            "--fingerprint",
            w["assessment"]["fingerprint"]
                .as_str()
                .expect("fingerprint"),
        ],
    );
    // Refused by kind: not eligible, with the checks' finding, and its exit code.
    assert_eq!(
        code(&forced),
        7,
        "an ineligible stage was accepted: {}",
        text(&forced.stderr)
    );
    assert!(
        text(&forced.stderr).contains("refused: stage readiness is not eligible"),
        "{}",
        text(&forced.stderr)
    );

    // The right file, but a turn with no structured outcome is a failed turn whatever its
    // prose says.
    let run = heartwood_async(project.path(), &["workflow", "run"]).await;
    assert_eq!(code(&run), 3, "{}{}", text(&run.stdout), text(&run.stderr));
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    let w = status(project.path());
    assert!(
        w["turn"]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("structured outcome")),
        "{w:#}"
    );
    let evaluated = heartwood(project.path(), &["workflow", "evaluate"]);
    assert_eq!(code(&evaluated), 7, "{}", text(&evaluated.stderr));
    let w = status(project.path());
    assert_eq!(w["assessment"]["eligible"], false, "{w:#}");
    assert!(
        w["assessment"]["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .all(|c| c["status"] == "passed"),
        "the files themselves pass: {w:#}"
    );

    // Run it again; this time the checks pass, and acceptance binds to what was shown.
    let run = heartwood_async(project.path(), &["workflow", "run"]).await;
    assert_eq!(code(&run), 3, "{}{}", text(&run.stdout), text(&run.stderr));
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    let evaluated = heartwood(project.path(), &["workflow", "evaluate"]);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
    let said = text(&evaluated.stdout);
    let accept_line = said
        .lines()
        .find(|l| l.contains("heartwood workflow accept"))
        .unwrap_or_else(|| panic!("no acceptance offered:\n{said}"));
    let words: Vec<&str> = accept_line[accept_line.find("heartwood").expect("cmd")..]
        .split_whitespace()
        .skip(1)
        .collect();
    let mut stale = words.clone();
    let last = stale.len() - 1;
    stale[last] = "0000000000000000";
    assert!(
        !heartwood(project.path(), &stale).status.success(),
        "a fingerprint not shown was accepted"
    );
    let accepted = heartwood(project.path(), &words);
    assert!(accepted.status.success(), "{}", text(&accepted.stderr));
    let w = status(project.path());
    assert_eq!(stage_status(&w, "readiness"), "accepted");
    assert_eq!(w["current"], "plan");
    let readiness = &w["stages"][0];
    assert_eq!(readiness["used"]["model_calls"], 6, "{readiness:#}");
    assert_eq!(
        readiness["used"]["actions"], 3,
        "finish is not counted: {readiness:#}"
    );
    assert_eq!(readiness["used"]["tokens"], 6 * 120, "{readiness:#}");

    // An accepted result edited afterwards: the next stage does not run on it.
    let report = project.path().join("reports/readiness.json");
    let accepted = std::fs::read(&report).expect("report");
    std::fs::write(&report, [accepted.as_slice(), b" "].concat()).expect("edit");
    let refused = heartwood_async(project.path(), &["workflow", "run"]).await;
    assert_eq!(code(&refused), 5, "evidence changed: a stale view");
    assert!(
        text(&refused.stderr)
            .contains("changed since the run bound or accepted it: reports/readiness.json"),
        "{}",
        text(&refused.stderr)
    );
    std::fs::write(&report, &accepted).expect("put it back");

    // An input edited after acceptance: the evidence built on it no longer holds.
    let cohort = project.path().join("data/cohort.csv");
    let edited = std::fs::read_to_string(&cohort).expect("table").replacen(
        "p01,north,34",
        "p01,north,35",
        1,
    );
    std::fs::write(&cohort, edited).expect("edit");
    let refused = heartwood_async(project.path(), &["workflow", "run"]).await;
    assert_eq!(code(&refused), 5, "evidence changed: a stale view");
    assert!(
        text(&refused.stderr)
            .contains("changed since the run bound or accepted it: data/cohort.csv"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(
        server.remaining_turns(),
        0,
        "no model call for the refused stage"
    );

    // The whole run is in the verified record.
    let verified = heartwood(project.path(), &["sessions", "verify", "last"]);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
}

#[test]
fn a_run_that_cannot_bind_its_inputs_creates_no_session() {
    let project = tempfile::tempdir().expect("project");
    // A model route is connected but the project holds none of the definition's inputs.
    support::connect_anyway(project.path(), "http://127.0.0.1:9/v1");
    let out = heartwood(
        project.path(),
        &["workflow", "start", "tabular-ols", "a question"],
    );
    assert!(!out.status.success());
    assert!(
        !project.path().join(".heartwood/sessions").exists()
            || std::fs::read_dir(project.path().join(".heartwood/sessions"))
                .expect("dir")
                .next()
                .is_none()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stage_that_uses_up_its_budget_gets_no_further_model_continuation() {
    let project = tempfile::tempdir().expect("project");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, project.path());
    // The readiness stage allows 30 actions: one reply proposes exactly 30. The provider
    // reports no token usage, so tokens stay unknown rather than 0.
    let thirty: Vec<(&str, Value)> = (0..30)
        .map(|_| ("terminal", json!({"command": "true"})))
        .collect();
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&thirty),
        finish_stage("never asked for"),
    ]))
    .await
    .expect("server");
    connect_scripted(project.path(), &server.base_url());
    let started = heartwood(
        project.path(),
        &["workflow", "start", "tabular-ols", "Does sleep predict it?"],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));

    let run = heartwood_async(project.path(), &["workflow", "run"]).await;
    assert_eq!(code(&run), 3, "{}{}", text(&run.stdout), text(&run.stderr));
    let w = status(project.path());
    let actions = w["stages"][0]["budget_lines"]
        .as_array()
        .expect("budget lines")
        .iter()
        .find(|l| l["label"] == "actions")
        .expect("actions line")
        .clone();
    assert_eq!(actions["text"], "30 of 30", "{actions:#}");
    assert_eq!(actions["exhausted"], true);
    assert_eq!(actions["overrun"], false);
    assert!(w["stages"][0]["used"]["tokens"].is_null(), "{w:#}");

    // The set counted at exactly the limit can still be decided; after it the agent pauses.
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(
        code(&decided),
        4,
        "{}{}",
        text(&decided.stdout),
        text(&decided.stderr)
    );
    let ran = text(&decided.stdout)
        .lines()
        .filter(|l| l.contains("completed"))
        .count();
    assert_eq!(
        ran,
        30,
        "the allowed set ran whole: {}",
        text(&decided.stdout)
    );
    let w = status(project.path());
    assert_eq!(stage_status(&w, "readiness"), "awaiting_evaluation");
    let offered: Vec<&str> = w["controls"]
        .as_array()
        .expect("controls")
        .iter()
        .filter_map(|c| c["command"].as_str())
        .collect();
    assert_eq!(offered, ["workflow_evaluate", "workflow_cancel"], "{w:#}");

    // Neither running the stage again nor resuming continues it.
    let again = heartwood_async(project.path(), &["workflow", "run"]).await;
    // Refused: not possible now (exit 6).
    assert_eq!(code(&again), 6);
    assert!(
        text(&again.stderr).contains("budget is used up"),
        "{}",
        text(&again.stderr)
    );
    let resumed = heartwood_async(
        project.path(),
        &["exec", "--last", "carry on with the report"],
    )
    .await;
    // Refused: the stage's budget is used up (exit 6).
    assert_eq!(code(&resumed), 6, "{}", text(&resumed.stdout));
    assert!(
        text(&resumed.stderr).contains("budget is used up"),
        "{}",
        text(&resumed.stderr)
    );
    assert_eq!(server.remaining_turns(), 1, "no model call after the limit");

    // Cancelling needs settled work and no pending set: both hold now.
    let cancelled = heartwood(project.path(), &["workflow", "cancel"]);
    assert!(cancelled.status.success(), "{}", text(&cancelled.stderr));
    assert_eq!(status(project.path())["cancelled"], true);
}

/// One stage's scripted turn: a terminal command that writes its files, then `finish` with
/// the structured outcome naming them.
fn stage_turns(command: &str, artifacts: &[&str]) -> [Turn; 2] {
    [
        Turn::calls(&[("terminal", json!({"command": command}))]),
        Turn::calls(&[(
            "finish",
            json!({"message": "done", "outcome": {
                "status": "completed", "artifacts": artifacts, "notes": ""
            }}),
        )]),
    ]
}

/// Runs the current stage as an agent turn and allows its one set.
async fn run_and_allow(project: &Path) {
    let run = heartwood_async(project, &["workflow", "run"]).await;
    assert_eq!(code(&run), 3, "{}{}", text(&run.stdout), text(&run.stderr));
    let decided = heartwood_async(project, &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    // The stage's turn is over, the run is not: the last word is what waits and the command
    // that continues it, never "Finished.".
    let said = text(&decided.stdout);
    let last: Vec<&str> = said.lines().rev().take(3).collect();
    assert!(
        !said.contains("\nFinished.")
            && last
                .iter()
                .any(|l| l.starts_with("next: heartwood workflow evaluate")),
        "{said}"
    );
}

/// Evaluates the current stage and accepts it with the command the gateway printed.
fn evaluate_and_accept(project: &Path) {
    evaluate_edit_and_accept(project, &[]);
}

/// As [`evaluate_and_accept`], but first each of `edited` is changed after the checks ran:
/// the acceptance is refused naming it, and goes through once the bytes are back.
fn evaluate_edit_and_accept(project: &Path, edited: &[&str]) {
    let evaluated = heartwood(project, &["workflow", "evaluate"]);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
    let said = text(&evaluated.stdout);
    let line = said
        .lines()
        .find(|l| l.contains("heartwood workflow accept"))
        .unwrap_or_else(|| panic!("no acceptance offered:\n{said}"));
    // The session's status says the run waits for the researcher, with what continues it,
    // never "Finished." (the agent's turn is over; the run is not).
    let shown = heartwood(project, &["sessions", "show", "last", "--json"]);
    let view: Value = serde_json::from_slice(&shown.stdout).expect("json");
    let status_line = view["projection"]["status_line"]
        .as_str()
        .unwrap_or_default();
    assert!(
        status_line.starts_with("Workflow waiting for you") && status_line.contains("Accept"),
        "{status_line}"
    );
    // Every list says so too, with the command: `sessions ls` and `status`.
    let listed = text(&heartwood(project, &["sessions", "ls"]).stdout);
    assert!(
        listed.contains("waiting for acceptance")
            && listed.contains("next: heartwood workflow accept")
            && !listed.contains("finished"),
        "{listed}"
    );
    let status = text(&heartwood(project, &["status"]).stdout);
    assert!(
        status.contains("waiting for acceptance")
            && status.contains("Workflow waiting for you")
            && status.contains("heartwood workflow accept"),
        "{status}"
    );
    let words: Vec<&str> = line[line.find("heartwood").expect("cmd")..]
        .split_whitespace()
        .skip(1)
        .collect();
    for path in edited {
        let file = project.join(path);
        let judged = std::fs::read(&file).expect("a judged file");
        std::fs::write(&file, [judged.as_slice(), b" "].concat()).expect("edit");
        let refused = heartwood(project, &words);
        assert!(
            !refused.status.success(),
            "accepted after {path} was edited"
        );
        let why = text(&refused.stderr);
        assert!(
            why.contains(&format!("{path} (edited)")) && why.contains("workflow evaluate"),
            "{why}"
        );
        std::fs::write(&file, &judged).expect("restore");
    }
    let accepted = heartwood(project, &words);
    assert!(accepted.status.success(), "{}", text(&accepted.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stage_turn_that_reports_nothing_or_blocked_fails_the_run_command() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, root);
    let blocked = Turn::calls(&[(
        "finish",
        json!({"message": "cannot", "outcome": {
            "status": "blocked", "artifacts": [], "notes": "the table is locked"
        }}),
    )]);
    let server = ScriptedModelServer::start(Script::of(vec![
        finish("All done, the report is perfect."),
        blocked,
    ]))
    .await
    .expect("server");
    connect_scripted(root, &server.base_url());
    let started = heartwood(root, &["workflow", "start", "tabular-ols", "Does sleep?"]);
    assert!(started.status.success(), "{}", text(&started.stderr));

    let run = heartwood_async(root, &["workflow", "run"]).await;
    assert_eq!(code(&run), 1, "{}{}", text(&run.stdout), text(&run.stderr));
    let why = text(&run.stderr);
    assert!(
        why.contains("stage “Data readiness” failed") && why.contains("structured outcome"),
        "{why}"
    );
    let run = heartwood_async(root, &["workflow", "run"]).await;
    assert_eq!(code(&run), 1, "{}{}", text(&run.stdout), text(&run.stderr));
    assert!(
        text(&run.stderr).contains("blocked: the table is locked"),
        "{}",
        text(&run.stderr)
    );
    assert_eq!(
        stage_status(&status(root), "readiness"),
        "awaiting_evaluation"
    );
}
