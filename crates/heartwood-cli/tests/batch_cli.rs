//! `heartwood batch` on the local engine, with the real binary and the scripted model server:
//! eight items run as independent sessions, each waits for its researcher's decision, one is
//! killed mid-run and continues from its journal, nothing runs twice, and collect summarises
//! only what verifies.

mod support;

use std::time::{Duration, Instant};

use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::json;
use support::batch::{batch, event_types, item, manifest, marker, row, run_printed, status};
use support::{code, heartwood, text};

/// Asserts the process exited with `expected`, showing what it printed otherwise.
fn exits(out: &std::process::Output, expected: i32) {
    assert_eq!(
        code(out),
        expected,
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

const ITEMS: usize = 8;
const VICTIM: usize = 3;

#[tokio::test(flavor = "multi_thread")]
async fn a_local_batch_waits_for_decisions_survives_a_killed_item_and_collects_what_verifies() {
    let root = tempfile::tempdir().expect("root");
    let server = ScriptedModelServer::start(Script::of(vec![]))
        .await
        .expect("server");
    for k in 0..ITEMS {
        let mut lane = Vec::new();
        if k == VICTIM {
            // A slow first reply: the item's process is killed while it streams.
            lane.push(Turn::text(&"slowly ".repeat(600)).with_fault(Fault::ChunkDelayMs(50)));
        }
        lane.push(Turn::calls(&[(
            "terminal",
            json!({"command": format!("echo {k} >> ran.txt")}),
        )]));
        lane.push(Turn::text(&format!("item {k} is done")));
        server.push_lane(&marker(k), lane);
    }
    let manifest = manifest(
        root.path(),
        &server.base_url(),
        ITEMS,
        "always-review",
        "append your number to ran.txt",
    );
    let m = manifest.to_string_lossy().into_owned();

    let run = tokio::spawn({
        let root = root.path().to_path_buf();
        let m = m.clone();
        async move { batch(&root, &["run", &m, "--jobs", "4"]).await }
    });
    // Kill the victim's worker process (it drives its item in process) once its slow reply is
    // streaming.
    let worker = format!("worker\0{m}\0{VICTIM}\0");
    kill_when_streaming(&server, VICTIM, 2, &worker).await;
    let ran = run.await.expect("batch run");
    exits(&ran, 1);

    let shown = status(root.path(), &manifest).await;
    let victim = row(&shown, VICTIM);
    assert_eq!(victim["phase"], "interrupted", "{victim}");
    assert!(
        victim["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("signal 9"),
        "{victim}"
    );
    for k in (0..ITEMS).filter(|k| *k != VICTIM) {
        let r = row(&shown, k);
        assert_eq!(r["phase"], "waiting", "{r}");
        assert!(
            r["next"]
                .as_str()
                .unwrap_or_default()
                .contains("heartwood decide"),
            "{r}"
        );
    }
    let table = batch(root.path(), &["status", &m]).await;
    let said = text(&table.stdout);
    assert!(
        said.contains("7 waiting") && said.contains("1 interrupted"),
        "{said}"
    );

    // Resumed, the killed item continues from its journal and waits like the others.
    let resumed = batch(root.path(), &["resume", &m]).await;
    exits(&resumed, 3);
    let shown = status(root.path(), &manifest).await;
    // Every item's decision, taken with the command status printed for it.
    for k in 0..ITEMS {
        let r = row(&shown, k);
        assert_eq!(r["phase"], "waiting", "{r}");
        let decided = run_printed(r["next"].as_str().expect("next")).await;
        exits(&decided, 0);
    }
    let shown = status(root.path(), &manifest).await;
    assert!(
        row(&shown, 0)["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("batch resume"),
        "an answered item says how it goes on: {}",
        row(&shown, 0)
    );
    let finished = batch(root.path(), &["resume", &m]).await;
    exits(&finished, 0);
    let shown = status(root.path(), &manifest).await;
    for k in 0..ITEMS {
        let r = row(&shown, k);
        assert_eq!(r["phase"], "done", "{r}");
        let project = std::path::PathBuf::from(r["project"].as_str().expect("project"));
        // The item's own input was copied into its project, and its one action ran once.
        assert_eq!(
            std::fs::read_to_string(project.join("data.txt")).expect("input"),
            "a\nb\nc\n".repeat(k + 1)
        );
        assert_eq!(
            std::fs::read_to_string(project.join("ran.txt")).expect("ran"),
            format!("{k}\n"),
            "item {k}"
        );
        let session = r["session"].as_str().expect("session");
        let interruptions = event_types(&project, session)
            .iter()
            .filter(|t| *t == "run_interrupted")
            .count();
        assert_eq!(interruptions, usize::from(k == VICTIM), "item {k}");
    }
    // The run that was killed, the resume that continued it, the resume after the decision.
    assert_eq!(
        row(&shown, VICTIM)["attempts"],
        3,
        "{}",
        row(&shown, VICTIM)
    );

    // Collect: every item verifies; then one item's journal is edited and it is refused.
    let collected = batch(root.path(), &["collect", &m]).await;
    exits(&collected, 0);
    let batch_dir = root.path().join("study.batch");
    let csv = std::fs::read_to_string(batch_dir.join("results.csv")).expect("csv");
    assert_eq!(csv.lines().count(), ITEMS + 1, "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.contains(",true,")), "{csv}");
    let edited = row(&shown, 0);
    let journal = std::path::PathBuf::from(edited["project"].as_str().expect("project"))
        .join(".heartwood/sessions")
        .join(edited["session"].as_str().expect("session"))
        .join("events.jsonl");
    let original = std::fs::read_to_string(&journal).expect("journal");
    std::fs::write(&journal, original.replacen("echo 0", "echo 9", 1)).expect("edit");
    let collected = batch(root.path(), &["collect", &m]).await;
    assert_eq!(code(&collected), 1, "{}", text(&collected.stdout));
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(batch_dir.join("results.json")).expect("json"))
            .expect("results");
    let first = &results[0];
    assert_eq!(first["verified"], false, "{first}");
    assert!(
        first["refused"]
            .as_str()
            .unwrap_or_default()
            .contains("does not verify"),
        "{first}"
    );
    assert_eq!(results[1]["verified"], true);
    let report = std::fs::read_to_string(batch_dir.join("report.md")).expect("report");
    assert!(
        report.contains("7 verified and summarised, 1 not"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_with_problems_runs_nothing_and_names_every_one() {
    let root = tempfile::tempdir().expect("root");
    std::fs::create_dir(root.path().join("a")).expect("a");
    let path = root.path().join("bad.toml");
    std::fs::write(
        &path,
        "workflow = \"tabular-ols\"\npolicy = \"sometimes\"\n\
         [[items]]\nname = \"a\"\nproject = \"a\"\n\
         [[items]]\nname = \"b\"\nproject = \"nowhere\"\n\
         [[items]]\nname = \"a\"\ninputs = { \"x.csv\" = \"x.csv\" }\n",
    )
    .expect("manifest");
    let out = batch(root.path(), &["run", &path.to_string_lossy()]).await;
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let said = text(&out.stderr);
    for expected in [
        "`policy`: \"sometimes\" is not a policy",
        "item 1 (b) `project`",
        "item 2 (a) `name`: \"a\" names an earlier item too",
        "item 2 (a) `inputs`: copied into a fresh copy of the template",
        "item 2 (a) inputs.`x.csv`",
        "no research question",
    ] {
        assert!(said.contains(expected), "{expected:?} not in:\n{said}");
    }
    assert!(!root.path().join("bad.batch").exists(), "nothing ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_route_nobody_serves_fails_every_item_saying_why_and_starts_no_session() {
    let root = tempfile::tempdir().expect("root");
    // A port nothing listens on: taken and let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let manifest = manifest(
        root.path(),
        &format!("http://127.0.0.1:{port}/v1"),
        2,
        "always-review",
        "count",
    );
    let out = batch(root.path(), &["run", &manifest.to_string_lossy()]).await;
    exits(&out, 1);
    let status = status(root.path(), &manifest).await;
    for k in 0..2 {
        let row = row(&status, k);
        assert_eq!(row["phase"], "failed", "{row}");
        let detail = row["detail"].as_str().expect("detail");
        assert!(
            detail.contains("the route could not be connected") && detail.contains("127.0.0.1"),
            "{detail}"
        );
        let project = root.path().join("study.batch/projects").join(item(k));
        assert!(
            !project.join(".heartwood/sessions").exists(),
            "no session was started in {}",
            project.display()
        );
        assert!(
            !project.join(".heartwood/config.toml").exists(),
            "nothing saved"
        );
    }

    // The route fixed: a plain run says what to run instead of "nothing to run" and exit 0,
    // and the failed items run again on request, to their decisions.
    let server = ScriptedModelServer::start(Script::of(vec![]))
        .await
        .expect("server");
    for k in 0..2 {
        server.push_lane(
            &marker(k),
            vec![Turn::calls(&[(
                "terminal",
                json!({"command": "echo counted >> ran.txt"}),
            )])],
        );
    }
    let manifest =
        support::batch::manifest(root.path(), &server.base_url(), 2, "always-review", "count");
    let m = manifest.to_string_lossy().into_owned();
    let again = batch(root.path(), &["run", &m]).await;
    exits(&again, 1);
    let said = text(&again.stdout);
    assert!(
        said.contains("2 failed")
            && said.contains(&format!("heartwood batch run {m} --rerun-failed")),
        "{said}"
    );
    let rerun = batch(root.path(), &["run", &m, "--rerun-failed"]).await;
    exits(&rerun, 3);
    let shown = support::batch::status(root.path(), &manifest).await;
    for k in 0..2 {
        let r = row(&shown, k);
        assert_eq!(r["phase"], "waiting", "{r}");
    }
}

/// A workflow stage's turn: a command that writes its file, then `finish` with the outcome.
fn stage(command: &str, artifact: &str) -> [Turn; 2] {
    [
        Turn::calls(&[("terminal", json!({"command": command}))]),
        Turn::calls(&[(
            "finish",
            json!({"message": "done", "outcome": {
                "status": "completed", "artifacts": [artifact], "notes": ""
            }}),
        )]),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_batch_stops_for_each_decision_and_acceptance_and_collects_accepted_figures() {
    let root = tempfile::tempdir().expect("root");
    sleep_template(
        root.path(),
        &["reports/readiness.json", "analysis/plan.json"],
    );
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/batch/data/cohort-b.csv"),
        root.path().join("cohort-b.csv"),
    )
    .expect("cohort b");
    let server = ScriptedModelServer::start(Script::of(vec![]))
        .await
        .expect("server");
    for k in 0..2 {
        let mut lane = Vec::new();
        lane.extend(stage(
            "cp stash/readiness.json reports/",
            "reports/readiness.json",
        ));
        lane.extend(stage("cp stash/plan.json analysis/", "analysis/plan.json"));
        server.push_lane(&marker(k), lane);
    }
    let manifest = workflow_manifest(
        root.path(),
        &server.base_url(),
        &["", "inputs = { \"data/cohort.csv\" = \"cohort-b.csv\" }"],
    );
    let m = manifest.to_string_lossy().into_owned();

    // Each item's first stage proposes its command and waits for its researcher.
    let ran = batch(root.path(), &["run", &m]).await;
    assert_eq!(
        code(&ran),
        3,
        "{}{}{}",
        text(&ran.stdout),
        text(&ran.stderr),
        support::batch::logs(&root.path().join("study.batch"))
    );
    let shown = status(root.path(), &manifest).await;
    for k in 0..2 {
        let r = row(&shown, k);
        assert_eq!(
            (r["phase"].as_str(), r["stage"].as_str()),
            (Some("waiting"), Some("readiness")),
            "{r}"
        );
        let decided = run_printed(r["next"].as_str().expect("next")).await;
        assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    }
    // Resumed: the batch runs the checks. The first item's pass and wait for acceptance; the
    // second item's cohort is not the one the report describes, so its checks fail.
    let resumed = batch(root.path(), &["resume", &m]).await;
    exits(&resumed, 1);
    let shown = status(root.path(), &manifest).await;
    let first = row(&shown, 0);
    assert_eq!(first["phase"], "waiting", "{first}");
    assert_eq!(first["last_check"], "readiness: eligible", "{first}");
    let accept = first["next"].as_str().expect("next");
    assert!(
        accept.contains("heartwood workflow accept") && accept.contains("--fingerprint"),
        "{accept}"
    );
    let second = row(&shown, 1);
    assert_eq!(second["phase"], "failed", "{second}");
    assert!(
        second["detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with("stage readiness"),
        "{second}"
    );
    assert!(
        second["next"]
            .as_str()
            .unwrap_or_default()
            .contains("heartwood workflow run"),
        "running the stage again is the researcher's call: {second}"
    );
    // One review of the stage for every item: the eligible item's checks with its fingerprint,
    // the failed one named; one decision accepts what was shown, and only that.
    let reviewed = batch(root.path(), &["review", &m, "readiness"]).await;
    exits(&reviewed, 0);
    let shown_review = text(&reviewed.stdout);
    let fingerprint = accept
        .split("--fingerprint ")
        .nth(1)
        .expect("fingerprint")
        .split_whitespace()
        .next()
        .expect("fingerprint");
    assert!(
        shown_review.contains("stage readiness: 1 item waits for your acceptance")
            && shown_review.contains("readiness_report")
            && shown_review.contains(&fingerprint[..16])
            && shown_review.contains("item-01  not offered: not eligible"),
        "{shown_review}"
    );
    let digest = shown_review
        .split("--accept ")
        .nth(1)
        .expect("the decision's digest")
        .trim()
        .to_owned();
    let stale = batch(
        root.path(),
        &["review", &m, "readiness", "--accept", "0123456789abcdef"],
    )
    .await;
    exits(&stale, 1);
    assert!(
        text(&stale.stderr).contains("nothing was accepted"),
        "{}",
        text(&stale.stderr)
    );
    // The same review as JSON, for a script: the digest, each offered item with its checks and
    // fingerprint, each other item with why; the decision's outcome item by item.
    let as_json = batch(root.path(), &["review", &m, "readiness", "--json"]).await;
    exits(&as_json, 0);
    let review: serde_json::Value = serde_json::from_slice(&as_json.stdout).expect("review json");
    assert_eq!(review["digest"], digest.as_str(), "{review:#}");
    assert_eq!(review["offered"][0]["item"], "item-00", "{review:#}");
    assert_eq!(
        review["offered"][0]["fingerprint"], fingerprint,
        "{review:#}"
    );
    assert!(
        review["offered"][0]["checks"].as_array().is_some_and(|c| c
            .iter()
            .any(|c| c["check"] == "readiness_report" && c["status"] == "passed")),
        "{review:#}"
    );
    assert_eq!(review["not_offered"][0]["item"], "item-01", "{review:#}");
    let accepted = batch(
        root.path(),
        &["review", &m, "readiness", "--accept", &digest, "--json"],
    )
    .await;
    exits(&accepted, 0);
    let decided: serde_json::Value =
        serde_json::from_slice(&accepted.stdout).expect("decision json");
    assert_eq!(
        (
            &decided["decision"]["current"],
            &decided["decision"]["accepted"]
        ),
        (&serde_json::json!(true), &serde_json::json!(["item-00"])),
        "{decided:#}"
    );
    // On to the next stage, which waits for its decision in turn.
    let resumed = batch(root.path(), &["resume", &m]).await;
    assert_eq!(code(&resumed), 1, "{}", text(&resumed.stdout));
    let shown = status(root.path(), &manifest).await;
    let first = row(&shown, 0);
    assert_eq!(
        (first["phase"].as_str(), first["stage"].as_str()),
        (Some("waiting"), Some("plan")),
        "{first}"
    );

    let collected = batch(root.path(), &["collect", &m]).await;
    exits(&collected, 0);
    let results: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.path().join("study.batch/results.json")).expect("results"),
    )
    .expect("json");
    assert_eq!(
        results[0]["accepted_stages"],
        json!(["readiness"]),
        "{}",
        results[0]
    );
    assert_eq!(
        results[0]["figures"]["reports/readiness.json:rows"], 12.0,
        "{}",
        results[0]
    );
    assert_eq!(
        results[0]["evidence"]["reports/readiness.json"]
            .as_str()
            .map(str::len),
        Some(64)
    );
    assert_eq!(results[1]["accepted_stages"], json!([]), "{}", results[1]);
    // Where each item stands is the batch's word and its session's, never the agent's
    // "finished": the first waits for the plan's decision, the second failed its checks.
    assert_eq!(
        (
            results[0]["state"].as_str(),
            results[0]["waits_for"]["kind"].as_str()
        ),
        (Some("waiting"), Some("decision")),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["state"], "failed", "{}", results[1]);
    assert_eq!(
        results[1]["waits_for"]["kind"], "workflow_correction",
        "{}",
        results[1]
    );
    let report =
        std::fs::read_to_string(root.path().join("study.batch/report.md")).expect("report");
    assert!(
        !report.contains("finished") && report.contains("| failed | stage readiness"),
        "{report}"
    );
    // One column per figure, integers as integers.
    let csv = std::fs::read_to_string(root.path().join("study.batch/results.csv")).expect("csv");
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    let rows_column = header
        .iter()
        .position(|h| *h == "reports/readiness.json:rows")
        .unwrap_or_else(|| panic!("no column for the figure: {csv}"));
    let first: Vec<&str> = csv.lines().nth(1).expect("row").split(',').collect();
    assert_eq!(first[rows_column], "12", "{csv}");

    // The batch as one RO-Crate: the accepted item's own crate and the results table, which
    // `crate verify` and the bundled Python verifier check part by part.
    let crated = batch(root.path(), &["collect", &m, "--ro-crate"]).await;
    exits(&crated, 0);
    let krate = root.path().join("study.batch/ro-crate");
    let verify = |dir: &std::path::Path| {
        let ours = heartwood(
            root.path(),
            &["crate", "verify", &dir.display().to_string()],
        );
        let python = std::process::Command::new("python3")
            .arg(krate.join("verify_crate.py"))
            .arg(dir)
            .output()
            .expect("python3");
        assert_eq!(ours.status.success(), python.status.success());
        (
            ours.status.success(),
            text(&ours.stdout) + &text(&python.stdout),
        )
    };
    let (ok, said) = verify(&krate);
    assert!(ok && said.contains("1 acceptances"), "{said}");
    // The same bar as a single run's crate: roc-validator finds no REQUIRED issue for RO-Crate
    // 1.1 and each Run Crate profile, and the `rocrate` library loads it.
    support::rocrate::validate(
        &krate,
        &support::rocrate::PROFILES,
        Some("workflow/tabular-ols.json"),
    );
    // The item's run is the batch workflow's execution, over the item's own files.
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(krate.join("ro-crate-metadata.json")).expect("metadata"),
    )
    .expect("json");
    let run = meta["@graph"]
        .as_array()
        .expect("graph")
        .iter()
        .find(|e| e["@id"] == format!("#item-{}", item(0)))
        .unwrap_or_else(|| panic!("no run for the item: {meta:#}"));
    assert_eq!(
        run["instrument"],
        json!([{"@id": "workflow/tabular-ols.json"}])
    );
    assert!(
        run["object"]
            .as_array()
            .expect("object")
            .contains(&json!({"@id": format!("items/{}/data/cohort.csv", item(0))})),
        "{run:#}"
    );
    assert!(
        krate
            .join(format!("items/{}/journal/audit.jsonl", item(0)))
            .exists()
    );
    assert!(
        !krate.join(format!("items/{}", item(1))).exists(),
        "an item with nothing accepted has no crate"
    );
    let tampered = root.path().join("tampered");
    std::process::Command::new("cp")
        .arg("-r")
        .arg(&krate)
        .arg(&tampered)
        .status()
        .expect("cp");
    std::fs::write(tampered.join("results/results.csv"), "item\n").expect("edit");
    let (ok, said) = verify(&tampered);
    assert!(
        !ok && said.contains("results/results.csv: changed"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_item_killed_mid_stage_runs_the_stage_again_when_resumed() {
    let root = tempfile::tempdir().expect("root");
    sleep_template(root.path(), &[]);
    let server = ScriptedModelServer::start(Script::of(vec![]))
        .await
        .expect("server");
    let mut lane = vec![Turn::text(&"slowly ".repeat(600)).with_fault(Fault::ChunkDelayMs(50))];
    lane.extend(stage("true", "reports/readiness.json"));
    server.push_lane(&marker(0), lane);
    let manifest = workflow_manifest(root.path(), &server.base_url(), &[""]);
    let m = manifest.to_string_lossy().into_owned();
    let run = tokio::spawn({
        let root = root.path().to_path_buf();
        let m = m.clone();
        async move { batch(&root, &["run", &m]).await }
    });
    kill_when_streaming(&server, 0, 2, &format!("worker\0{m}\00\0")).await;
    let ran = run.await.expect("batch run");
    assert_eq!(code(&ran), 1, "{}", text(&ran.stderr));
    assert_eq!(
        row(&status(root.path(), &manifest).await, 0)["phase"],
        "interrupted"
    );

    // Resumed: the cut-off turn is recorded as interrupted and the stage runs again, to its
    // command's decision.
    let resumed = batch(root.path(), &["resume", &m]).await;
    assert_eq!(
        code(&resumed),
        3,
        "{}{}",
        text(&resumed.stderr),
        support::batch::logs(&root.path().join("study.batch"))
    );
    let shown = status(root.path(), &manifest).await;
    let r = row(&shown, 0);
    assert_eq!(
        (r["phase"].as_str(), r["stage"].as_str()),
        (Some("waiting"), Some("readiness")),
        "{r}"
    );
    let project = std::path::PathBuf::from(r["project"].as_str().expect("project"));
    let types = event_types(&project, r["session"].as_str().expect("session"));
    assert_eq!(
        types.iter().filter(|t| *t == "run_interrupted").count(),
        1,
        "{types:?}"
    );
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "workflow_stage_started")
            .count(),
        2,
        "{types:?}"
    );
}

/// Kills the `heartwood` process whose command line holds `pattern` once the lane of item `k`
/// has `remaining` turns left (its slow reply is streaming).
async fn kill_when_streaming(
    server: &ScriptedModelServer,
    k: usize,
    remaining: usize,
    pattern: &str,
) {
    let started = Instant::now();
    let pid = loop {
        let pids = heartwood_testkit::processes_running(pattern);
        if server.remaining_in_lane(&marker(k)) == remaining
            && let Some(pid) = pids.first()
        {
            break *pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{pattern} never got going"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
}

/// The sleep study as a template in `root/template`, with `stashed` files moved to `stash/`
/// for the scripted stage turns to put back.
fn sleep_template(root: &std::path::Path, stashed: &[&str]) {
    let template = root.join("template");
    std::fs::create_dir(&template).expect("template");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, &template);
    std::fs::create_dir(template.join("stash")).expect("stash");
    for path in stashed {
        let name = path.rsplit('/').next().expect("name");
        std::fs::rename(template.join(path), template.join("stash").join(name)).expect("stash");
    }
}

/// A tabular-ols batch over the template: item `k` asks with its marker, and its extra
/// manifest lines follow.
fn workflow_manifest(root: &std::path::Path, base_url: &str, items: &[&str]) -> std::path::PathBuf {
    let mut text = format!(
        "workflow = \"tabular-ols\"\ntemplate = \"template\"\n\
         [route]\ncategory = \"compatible\"\nbase_url = \"{base_url}\"\nmodel = \"scripted\"\n"
    );
    for (k, extra) in items.iter().enumerate() {
        text.push_str(&format!(
            "[[items]]\nname = \"{}\"\nquestion = \"{} Does sleep predict the test score?\"\n{extra}\n",
            item(k),
            marker(k)
        ));
    }
    let manifest = root.join("study.toml");
    std::fs::write(&manifest, text).expect("manifest");
    manifest
}
