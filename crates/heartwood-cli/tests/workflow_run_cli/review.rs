//! A reviewer's proposal becomes a finding only when one of Heartwood's checks observes it.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_review_proposal_becomes_a_finding_only_when_a_check_observes_it() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, root);
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
