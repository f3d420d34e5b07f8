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
    support::copy_dir(&fixture, root);
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
