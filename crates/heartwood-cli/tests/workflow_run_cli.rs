//! A research workflow run inside a session, end to end: the real binary, the scripted model
//! server, the example project. A stage runs as an ordinary agent turn under review; its
//! checks, run by the gateway on the exact bytes, decide whether it can be accepted; the
//! acceptance binds to the revision and fingerprint shown; an input edited afterwards stops
//! the next stage.

mod support;

use std::path::Path;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::{code, connect_scripted, finish, heartwood, heartwood_async, text};

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
    support::copy_dir(&fixture, project.path());
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
    let evaluated = heartwood(project.path(), &["workflow", "evaluate"]);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
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
    assert!(!forced.status.success(), "an ineligible stage was accepted");

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
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
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
    assert_eq!(code(&refused), 1);
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
    assert_eq!(code(&refused), 1);
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
    support::copy_dir(&fixture, project.path());
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
    assert_eq!(code(&again), 1);
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
    assert_eq!(code(&resumed), 1, "{}", text(&resumed.stdout));
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
async fn a_whole_run_is_accepted_through_its_reviewed_reproduction() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    support::copy_dir(&fixture, root);
    // Every artifact moves aside: each stage's scripted turn writes it back.
    let artifacts = [
        "reports/readiness.json",
        "analysis/plan.json",
        "outputs/split.csv",
        "analysis/fit.py",
        "outputs/model.json",
        "reports/final.md",
    ];
    std::fs::create_dir(root.join("stash")).expect("stash");
    for path in artifacts {
        let name = path.rsplit('/').next().expect("name");
        std::fs::rename(root.join(path), root.join("stash").join(name)).expect("stash it");
    }
    let mut turns = Vec::new();
    for (command, wrote) in [
        (
            "cp stash/readiness.json reports/",
            vec!["reports/readiness.json"],
        ),
        ("cp stash/plan.json analysis/", vec!["analysis/plan.json"]),
        ("cp stash/split.csv outputs/", vec!["outputs/split.csv"]),
        (
            "cp stash/fit.py analysis/ && cp stash/model.json outputs/",
            vec!["analysis/fit.py", "outputs/model.json"],
        ),
        ("cp stash/final.md reports/", vec!["reports/final.md"]),
    ] {
        turns.extend(stage_turns(command, &wrote));
    }
    // The reproduction: first a turn that only reports the file someone copied by hand; then
    // a rerun allowed alone, observed by the gateway. (The scripted "rerun" writes the same
    // bytes with `cp`: the contract is about what the researcher reviewed and the gateway
    // observed, not what the command is.)
    let reproduced = ["outputs/model.reproduced.json"];
    turns.push(stage_turns("true", &reproduced)[1].clone());
    turns.extend(stage_turns(
        "cp stash/model.json outputs/model.reproduced.json",
        &reproduced,
    ));
    let server = ScriptedModelServer::start(Script::of(turns))
        .await
        .expect("server");
    connect_scripted(root, &server.base_url());
    let started = heartwood(
        root,
        &[
            "workflow",
            "start",
            "tabular-ols",
            "Does sleep predict the test score?",
        ],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));

    // Accepting reads every judged file again: an edited report or input is refused.
    for (stage, edited) in [
        ("readiness", "reports/readiness.json"),
        ("plan", "data/cohort.csv"),
    ] {
        run_and_allow(root).await;
        evaluate_edit_and_accept(root, &[edited]);
        assert_eq!(stage_status(&status(root), stage), "accepted");
    }
    // The split asks no acceptance: eligible checks advance the run.
    run_and_allow(root).await;
    let evaluated = heartwood(root, &["workflow", "evaluate"]);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
    let w = status(root);
    assert_eq!(stage_status(&w, "split"), "accepted");
    assert_eq!(w["current"], "model");
    // An accepted file gone: the next stage is refused saying it is missing, and nothing else.
    let split = root.join("outputs/split.csv");
    let kept = std::fs::read(&split).expect("split");
    std::fs::remove_file(&split).expect("rm");
    let refused = heartwood_async(root, &["workflow", "run"]).await;
    assert_eq!(code(&refused), 1);
    let why = text(&refused.stderr);
    assert!(
        why.contains("accepted it: outputs/split.csv (missing);") && !why.contains("cohort"),
        "{why}"
    );
    std::fs::write(&split, kept).expect("restore");

    // The model stage: the picture is drawn from the bytes its checks read.
    run_and_allow(root).await;
    let evaluated = heartwood(root, &["workflow", "evaluate"]);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
    let figure = heartwood(root, &["workflow", "figure", "--json"]);
    assert!(figure.status.success(), "{}", text(&figure.stderr));
    let figure: Value = serde_json::from_slice(&figure.stdout).expect("figure json");
    assert_eq!(
        figure["train"].as_array().map(Vec::len),
        Some(9),
        "{figure:#}"
    );
    assert_eq!(figure["held_out"].as_array().map(Vec::len), Some(3));
    assert_eq!(figure["predictions"].as_array().map(Vec::len), Some(3));
    assert_eq!(figure["group_slopes"].as_array().map(Vec::len), Some(3));
    let svg = figure["svg"].as_str().expect("svg");
    assert!(
        svg.starts_with("<svg") && svg.contains("held-out prediction"),
        "{svg}"
    );
    assert!(svg.matches("<circle").count() >= 9 + 3 + 3, "{svg}");
    // A file edited after the checks: the picture is refused rather than drawn from bytes
    // nobody judged.
    let model = root.join("outputs/model.json");
    let bytes = std::fs::read(&model).expect("model");
    std::fs::write(&model, [bytes.as_slice(), b"\n"].concat()).expect("edit");
    let stale = heartwood(root, &["workflow", "figure"]);
    assert!(!stale.status.success());
    assert!(
        text(&stale.stderr).contains("evaluate the stage again"),
        "{}",
        text(&stale.stderr)
    );
    std::fs::write(&model, &bytes).expect("restore");
    evaluate_and_accept(root);
    // Accepted, the model is still drawn, from the bytes accepted, while the run moves on.
    let after = heartwood(root, &["workflow", "figure", "--json"]);
    assert!(after.status.success(), "{}", text(&after.stderr));
    let after: Value = serde_json::from_slice(&after.stdout).expect("figure json");
    assert_eq!(after["stage"], "model", "{after:#}");

    run_and_allow(root).await;
    evaluate_edit_and_accept(root, &["reports/final.md"]);
    assert!(
        heartwood(root, &["workflow", "figure"]).status.success(),
        "the accepted model is drawn after the next stage's checks too"
    );
    assert_eq!(stage_status(&status(root), "report"), "accepted");

    // Identical bytes copied by hand are not a reproduction, and the run says so.
    std::fs::copy(
        root.join("stash/model.json"),
        root.join("outputs/model.reproduced.json"),
    )
    .expect("copy by hand");
    let run = heartwood_async(root, &["workflow", "run"]).await;
    assert_eq!(code(&run), 0, "{}{}", text(&run.stdout), text(&run.stderr));
    let evaluated = heartwood(root, &["workflow", "evaluate"]);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
    let w = status(root);
    assert_eq!(w["current"], "reproduction");
    assert_eq!(w["assessment"]["eligible"], false);
    let reasons = w["assessment"]["checks"][0]["reasons"].to_string();
    assert!(reasons.contains("a copy would also be"), "{w:#}");
    assert!(reasons.contains("no reviewed rerun wrote it"), "{w:#}");
    assert!(
        !w["controls"]
            .as_array()
            .expect("controls")
            .iter()
            .any(|c| c["command"] == "workflow_accept")
    );

    // The rerun, allowed alone while its destination does not exist, observed completing.
    std::fs::remove_file(root.join("outputs/model.reproduced.json")).expect("rm the copy");
    run_and_allow(root).await;
    let w = status(root);
    let rerun = &w["reproduction"];
    assert_eq!(
        rerun["prepared"]["destination"], "outputs/model.reproduced.json",
        "{w:#}"
    );
    assert_eq!(rerun["completed"]["exit_code"], 0, "{w:#}");
    assert!(rerun["completed"]["output"]["sha256"].is_string(), "{w:#}");
    // The final stage is held to the same bytes.
    evaluate_edit_and_accept(root, &["outputs/model.reproduced.json"]);
    let w = status(root);
    assert_eq!(stage_status(&w, "reproduction"), "accepted");
    assert!(w["current"].is_null(), "every stage accepted: {w:#}");
    assert!(w["controls"].as_array().is_some_and(Vec::is_empty));
    assert_eq!(server.remaining_turns(), 0);
    let verified = heartwood(root, &["sessions", "verify", "last"]);
    assert!(verified.status.success(), "{}", text(&verified.stderr));

    // Receipts lost: recovery rebuilds each workflow command's from the record.
    let sessions = root.join(".heartwood/sessions");
    let session = std::fs::read_dir(&sessions)
        .expect("sessions")
        .next()
        .expect("one session")
        .expect("entry")
        .path();
    std::fs::remove_file(session.join("receipts.jsonl")).expect("lose the receipts");
    let recovered = heartwood(root, &["sessions", "recover", "last"]);
    assert!(recovered.status.success(), "{}", text(&recovered.stderr));
    let rebuilt = std::fs::read_to_string(session.join("receipts.jsonl")).expect("receipts");
    for command in [
        "workflow_start",
        "workflow_run",
        "workflow_evaluate",
        "workflow_accept",
    ] {
        assert!(
            rebuilt.contains(&format!("\"{command}\"")),
            "{command} not rebuilt:\n{rebuilt}"
        );
    }
    assert!(!rebuilt.contains("\"unknown\""), "{rebuilt}");
    let verified = heartwood(root, &["sessions", "verify", "last"]);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_proposal_becomes_a_finding_only_when_a_check_observes_it() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    support::copy_dir(&fixture, root);
    // The earlier stages' files are in place: each turn only reports them.
    let reported = |artifacts: &[&str]| stage_turns("true", artifacts)[1].clone();
    let review = Turn::calls(&[(
        "task",
        json!({"subagent_type": "reviewer", "description": "review the model stage",
               "prompt": "analysis/fit.py:\ndef broken(:\n\noutputs/model.json: {...}"}),
    )]);
    let proposals = Turn::calls(&[(
        "finish",
        json!({"result": {"proposals": [
            {"condition": "python_invalid", "path": "analysis/fit.py",
             "claim": "fit.py does not parse"},
            {"condition": "python_invalid", "path": "analysis/fit.py",
             "claim": "a syntax error on line 1"},
            {"condition": "results_inconsistent", "path": "outputs/model.json",
             "claim": "the slope is wrong"},
            {"condition": "other", "path": "reports/final.md", "claim": "the prose is vague"}
        ]}}),
    )]);
    let server = ScriptedModelServer::start(Script::of(vec![
        reported(&["reports/readiness.json"]),
        reported(&["analysis/plan.json"]),
        reported(&["outputs/split.csv"]),
        // The model stage's turn breaks the fit code.
        Turn::calls(&[(
            "terminal",
            json!({"command": "printf 'def broken(:\\n' > analysis/fit.py"}),
        )]),
        reported(&["analysis/fit.py", "outputs/model.json"]),
        // The review turn: the agent asks the reviewer, which proposes; then it finishes.
        review,
        proposals,
        reported(&[]),
    ]))
    .await
    .expect("server");
    connect_scripted(root, &server.base_url());
    let started = heartwood(
        root,
        &["workflow", "start", "tabular-ols", "Does sleep predict it?"],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    for _ in ["readiness", "plan"] {
        let run = heartwood_async(root, &["workflow", "run"]).await;
        assert_eq!(code(&run), 0, "{}{}", text(&run.stdout), text(&run.stderr));
        evaluate_and_accept(root);
    }
    let run = heartwood_async(root, &["workflow", "run"]).await;
    assert_eq!(code(&run), 0, "{}", text(&run.stdout));
    let split = heartwood(root, &["workflow", "evaluate"]);
    assert!(split.status.success(), "{}", text(&split.stderr));
    assert_eq!(status(root)["current"], "model");
    run_and_allow(root).await;

    // The review: files captured, the reviewer asked (its set allowed), then assessed by the
    // gateway when the turn settles, with no further model call.
    let asked = heartwood_async(root, &["workflow", "review"]).await;
    assert_eq!(
        code(&asked),
        3,
        "{}{}",
        text(&asked.stdout),
        text(&asked.stderr)
    );
    let decided = heartwood_async(root, &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stdout));
    assert_eq!(server.remaining_turns(), 0);
    let w = status(root);
    let review = &w["reviews"][0];
    let captured: Vec<&str> = review["started"]["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert!(captured.contains(&"analysis/fit.py") && captured.contains(&"data/cohort.csv"));
    let assessed = &review["assessed"];
    let verdicts: Vec<(&str, &str)> = assessed["proposals"]
        .as_array()
        .expect("proposals")
        .iter()
        .map(|p| {
            (
                p["proposal"]["condition"].as_str().unwrap_or_default(),
                p["verdict"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("python_invalid", "verified"),
            ("python_invalid", "verified"),
            ("results_inconsistent", "not_observed"),
            ("other", "unverified"),
        ],
        "{assessed:#}"
    );
    // Two claims of one defect make one finding that keeps both.
    let findings = assessed["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{assessed:#}");
    assert_eq!(findings[0]["check"], "python_syntax");
    assert_eq!(findings[0]["severity"], "defect");
    assert_eq!(findings[0]["claims"].as_array().map(Vec::len), Some(2));
    assert_eq!(assessed["record_sha256"].as_str().map(str::len), Some(64));
    // The review did not advance anything.
    assert_eq!(stage_status(&w, "model"), "awaiting_evaluation");
    // Read back from the record alone (a replay of the journal), the same proposals and
    // findings, with no model call.
    let shown = heartwood(root, &["sessions", "show", "last", "--json"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).expect("json");
    assert_eq!(
        shown["projection"]["workflow"]["reviews"][0]["assessed"], *assessed,
        "the record holds the assessment"
    );
    // The stage's outcome is its own turn's: the review turn's `finish` (which reported no
    // artifacts) is not written over it, live or replayed from the journal.
    for (how, workflow) in [("live", &w), ("replayed", &shown["projection"]["workflow"])] {
        assert_eq!(
            workflow["turn"]["outcome"]["artifacts"],
            json!(["analysis/fit.py", "outputs/model.json"]),
            "{how}: {:#}",
            workflow["turn"]
        );
    }
    assert_eq!(
        shown["projection"]["workflow"], w,
        "the replayed run equals the live one"
    );
    // The command line lists the findings apart from the proposals no check verified.
    let said = text(&heartwood(root, &["workflow", "status"]).stdout);
    let line = |start: &str| {
        said.lines()
            .filter(|l| l.trim_start().starts_with(start))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let findings = line("FINDING");
    assert_eq!(findings.len(), 1, "{said}");
    assert!(
        findings[0].contains("analysis/fit.py — python_syntax observed"),
        "{said}"
    );
    let proposals = line("proposal");
    assert_eq!(
        proposals.len(),
        2,
        "the two claims no check verified: {said}"
    );
    assert!(
        proposals
            .iter()
            .any(|p| p.contains("“the slope is wrong”") && p.contains("not observed"))
            && !proposals.iter().any(|p| p.contains("does not parse")),
        "{said}"
    );
    assert_eq!(
        server.requests().len(),
        8,
        "every scripted call, and none since the review"
    );

    // A correction goes to a new path: a reviewed file, or one that exists, is refused.
    for taken in ["analysis/fit.py", "analysis/plan.json"] {
        let refused = heartwood(root, &["workflow", "correct", "--to", taken]);
        assert!(
            !refused.status.success(),
            "{taken} accepted as a destination"
        );
    }
    let planned = heartwood(
        root,
        &["workflow", "correct", "--to", "analysis/fit_fixed.py"],
    );
    assert!(planned.status.success(), "{}", text(&planned.stderr));
    assert!(
        text(&planned.stdout).contains("python_syntax"),
        "{}",
        text(&planned.stdout)
    );
    // A correction that still has the defect is observed and cannot be bound.
    std::fs::write(root.join("analysis/fit_fixed.py"), "def still(:\n").expect("write");
    let recheck = heartwood(
        root,
        &[
            "workflow",
            "correct",
            "--to",
            "analysis/fit_fixed.py",
            "--json",
        ],
    );
    let recheck: Value = serde_json::from_slice(&recheck.stdout).expect("json");
    assert_eq!(recheck["result"], "observed", "{recheck:#}");
    let bound = heartwood(
        root,
        &[
            "workflow",
            "correct",
            "--to",
            "analysis/fit_fixed.py",
            "--apply",
        ],
    );
    assert!(!bound.status.success(), "an observed defect was bound");
    // The fixed file: the defect is not observed in those bytes; bound, the stage is checked
    // again on it, and the broken file is kept where it was.
    std::fs::copy(
        fixture.join("analysis/fit.py"),
        root.join("analysis/fit_fixed.py"),
    )
    .expect("fix");
    let recheck = heartwood(
        root,
        &[
            "workflow",
            "correct",
            "--to",
            "analysis/fit_fixed.py",
            "--json",
        ],
    );
    let recheck: Value = serde_json::from_slice(&recheck.stdout).expect("json");
    assert_eq!(recheck["result"], "not_observed", "{recheck:#}");
    let bound = heartwood(
        root,
        &[
            "workflow",
            "correct",
            "--to",
            "analysis/fit_fixed.py",
            "--apply",
            "--json",
        ],
    );
    assert!(bound.status.success(), "{}", text(&bound.stderr));
    let w: Value = serde_json::from_slice(&bound.stdout).expect("json");
    let fit = w["bindings"]
        .as_array()
        .expect("bindings")
        .iter()
        .find(|b| b["id"] == "fit_code")
        .expect("fit_code");
    assert_eq!(fit["path"], "analysis/fit_fixed.py");
    assert!(w["assessment"].is_null());
    assert!(
        root.join("analysis/fit.py").exists(),
        "the reviewed file is kept"
    );
    evaluate_and_accept(root);
    assert_eq!(stage_status(&status(root), "model"), "accepted");
    let verified = heartwood(root, &["sessions", "verify", "last"]);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stage_turn_that_reports_nothing_or_blocked_fails_the_run_command() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    support::copy_dir(&fixture, root);
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
