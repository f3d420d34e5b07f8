//! A whole run, accepted stage by stage through its reviewed reproduction, and refused whenever the bytes it rests on changed.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_run_is_accepted_through_its_reviewed_reproduction() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, root);
    // Every artifact moves aside: each stage's scripted turn writes it back.
    let artifacts = [
        "reports/readiness.json",
        "analysis/plan.json",
        "outputs/split.csv",
        "analysis/fit.py",
        "outputs/model.json",
        "reports/final.md",
        "reports/claims.json",
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
        (
            "cp stash/final.md stash/claims.json reports/",
            vec!["reports/final.md", "reports/claims.json"],
        ),
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
    // Refused: evidence changed since it was accepted (exit 5, a stale view).
    assert_eq!(code(&refused), 5);
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
    // The figures written beside the picture are the check's recomputation, not the report's:
    // a least-squares fit of the training points, done here, gives the same slope and
    // held-out error to the four digits shown.
    let points = |key: &str| -> Vec<(f64, f64)> {
        figure[key]
            .as_array()
            .expect("points")
            .iter()
            .map(|p| (p[0].as_f64().expect("x"), p[1].as_f64().expect("y")))
            .collect()
    };
    let (train, held_out) = (points("train"), points("held_out"));
    let n = train.len() as f64;
    let (mx, my) = (
        train.iter().map(|p| p.0).sum::<f64>() / n,
        train.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let slope = train.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
        / train.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
    let intercept = my - slope * mx;
    let rmse = (held_out
        .iter()
        .map(|p| (p.1 - intercept - slope * p.0).powi(2))
        .sum::<f64>()
        / held_out.len() as f64)
        .sqrt();
    let shown = |label: &str| -> f64 {
        figure["values"]
            .as_array()
            .expect("values")
            .iter()
            .find(|v| v["label"] == label)
            .and_then(|v| v["value"].as_str())
            .unwrap_or_else(|| panic!("no {label:?} beside the picture: {figure:#}"))
            .parse()
            .expect("a number")
    };
    for (label, expected) in [("slope (training rows)", slope), ("held-out RMSE", rmse)] {
        let written = shown(label);
        assert!(
            (written - expected).abs() <= expected.abs() * 5e-4,
            "{label}: written {written}, least squares here {expected}"
        );
    }
    assert_eq!(shown("training rows"), 9.0);
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
    assert_eq!(
        code(&evaluated),
        7,
        "not eligible: {}",
        text(&evaluated.stderr)
    );
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
