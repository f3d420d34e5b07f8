//! Short handles (issue 39): `workflow accept` with no arguments accepts the stage that awaits
//! acceptance and shows what it accepts and on which evidence; `decide allow` decides the
//! latest session's set; `workflow status` says when the stage waits for a decision and
//! prints the command that gives it; `sessions verify last` names the session it verified.

mod support;

use std::path::Path;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::{code, connect_scripted, heartwood, heartwood_async, text};

#[tokio::test(flavor = "multi_thread")]
async fn a_stage_is_decided_and_accepted_with_no_ids_typed() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, root);
    std::fs::rename(
        root.join("reports/readiness.json"),
        root.join("readiness.json"),
    )
    .expect("stash");
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": "cp readiness.json reports/readiness.json"}),
        )]),
        Turn::calls(&[(
            "finish",
            json!({"message": "wrote it", "outcome": {
                "status": "completed", "artifacts": ["reports/readiness.json"], "notes": ""
            }}),
        )]),
    ]))
    .await
    .expect("server");
    connect_scripted(root, &server.base_url());
    let started = heartwood(
        root,
        &["workflow", "start", "tabular-ols", "Does sleep matter?"],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    let run = heartwood_async(root, &["workflow", "run"]).await;
    assert_eq!(code(&run), 3, "{}", text(&run.stderr));

    let shown = heartwood(root, &["workflow", "status"]);
    let said = text(&shown.stdout);
    assert!(
        said.contains("The stage waits for your decision on 1 proposed action")
            && said.contains("heartwood decide ")
            && said.contains(" allow"),
        "{said}"
    );
    let early = heartwood(root, &["workflow", "accept"]);
    assert_eq!(code(&early), 1);
    assert!(
        text(&early.stderr).contains("does not await acceptance: it is running"),
        "{}",
        text(&early.stderr)
    );

    let decided = heartwood_async(root, &["decide", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    let evaluated = heartwood(root, &["workflow", "evaluate"]);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
    let accepted = heartwood(root, &["workflow", "accept"]);
    let said = text(&accepted.stdout);
    assert_eq!(code(&accepted), 0, "{said}{}", text(&accepted.stderr));
    assert!(
        said.contains("accepting “Data readiness” (readiness)"),
        "{said}"
    );
    assert!(
        said.contains("evidence reports/readiness.json sha256 "),
        "{said}"
    );
    assert!(said.contains("evidence data/cohort.csv sha256 "), "{said}");
    let status = heartwood(root, &["workflow", "status", "--json"]);
    let w: Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(w["stages"][0]["status"], "accepted", "{w}");

    let verified = heartwood(root, &["sessions", "verify", "last"]);
    let said = text(&verified.stdout);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
    assert!(!said.contains("session last"), "{said}");
    let listed = heartwood(root, &["sessions", "ls", "--json"]);
    let rows: Value = serde_json::from_slice(&listed.stdout).expect("json");
    let id = rows[0]["id"].as_str().expect("id");
    assert!(said.starts_with(&format!("session {id} intact")), "{said}");
}

/// Sessions are titled by their first task and can be renamed (the title is journaled, so the
/// chain still verifies and every interface shows it); the id's random tail is a handle.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_titled_by_its_task_renamed_and_named_by_the_tail_of_its_id() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let server = ScriptedModelServer::start(Script::of(vec![Turn::text("Nothing to do.")]))
        .await
        .expect("server");
    connect_scripted(root, &server.base_url());
    let run = heartwood_async(root, &["exec", "check the cohort\nfor missing values"]).await;
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));

    let listed = |root: &Path| -> Value {
        let out = heartwood(root, &["sessions", "ls", "--json"]);
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let rows = listed(root);
    let id = rows[0]["id"].as_str().expect("id").to_owned();
    assert_eq!(rows[0]["title"], "check the cohort", "{rows}");
    // One format wherever an id is minted: s, the date, the time, 32 random bits.
    let parts: Vec<&str> = id.split('-').collect();
    assert_eq!(
        parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
        [9, 6, 8],
        "{id}"
    );
    let tail = &parts[2][..4];

    let renamed = heartwood(root, &["sessions", "rename", tail, "Cohort", "B", "checks"]);
    assert!(
        renamed.status.success(),
        "{}{}",
        text(&renamed.stdout),
        text(&renamed.stderr)
    );
    assert!(
        text(&renamed.stdout).contains(&format!("session {id} is now titled \"Cohort B checks\"")),
        "{}",
        text(&renamed.stdout)
    );
    assert_eq!(listed(root)[0]["title"], "Cohort B checks");
    let table = text(&heartwood(root, &["sessions", "ls"]).stdout);
    assert!(table.contains("Cohort B checks"), "{table}");

    let blank = heartwood(root, &["sessions", "rename", "last", " "]);
    // Refused: an empty title is input that cannot be used (exit 9).
    assert_eq!(code(&blank), 9);
    assert!(
        text(&blank.stderr).contains("the title is empty"),
        "{}",
        text(&blank.stderr)
    );
    assert_eq!(listed(root)[0]["title"], "Cohort B checks");
    let verified = heartwood(root, &["sessions", "verify", tail]);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
}
