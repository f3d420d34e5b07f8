//! A workflow batch driven in process: the item stops for its researcher (the decision on the
//! stage's command, then the stage's acceptance), is accepted through the batch's review path,
//! and collect's evidence digests are the ones the session record holds, read again through
//! the confined workspace.

mod support;

use std::time::Duration;

use heartwood_batch::Phase;
use heartwood_batch::accept::{Accepted, accept, projection_of};
use heartwood_events::workflow::StageStatus;
use heartwood_events::{Command, CommandKind, CommandName, Decision, SessionId};
use heartwood_gateway::{ProjectContext, SessionAdmin, SessionGateway};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;
use sha2::{Digest, Sha256};
use support::{drive_one, load, manifest, marker};

/// The sleep study as the template, its readiness report moved aside for the stage's command
/// to put back.
fn sleep_template(root: &std::path::Path) {
    let template = root.join("template");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/projects/sleep-study");
    std::fs::create_dir(&template).expect("template");
    heartwood_testkit::copy_dir(&fixture, &template);
    std::fs::create_dir(template.join("stash")).expect("stash");
    std::fs::rename(
        template.join("reports/readiness.json"),
        template.join("stash/readiness.json"),
    )
    .expect("stash the report");
}

/// Allows the pending set of `session` in `project` once and follows the run.
async fn allow(project: &std::path::Path, session: &str) {
    let gateway = SessionGateway::new(ProjectContext::at(project).expect("project"));
    let id = SessionId::parse(session).expect("id");
    let set = tokio::task::block_in_place(|| gateway.serve(&id))
        .ok()
        .and_then(|()| gateway.projection(&id).ok())
        .and_then(|p| p.pending)
        .expect("a pending set");
    let kind = CommandKind::Decide {
        set_id: set.set_id,
        revision: set.revision,
        decision: Decision::AllowOnce,
        reason: None,
    };
    let command = Command::new(SessionGateway::new_command_id(), id.clone(), kind);
    gateway.submit(command).await.expect("decide");
    gateway
        .settled(&id, Duration::from_secs(60))
        .await
        .expect("settled");
    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_item_waits_for_its_researcher_and_collect_binds_the_recorded_digests() {
    let root = tempfile::tempdir().expect("root");
    sleep_template(root.path());
    let server = ScriptedModelServer::start(Script::of(vec![]))
        .await
        .expect("server");
    server.push_lane(
        &marker(0),
        [
            Turn::calls(&[(
                "terminal",
                json!({"command": "cp stash/readiness.json reports/"}),
            )]),
            Turn::calls(&[(
                "finish",
                json!({"message": "done", "outcome": {
                    "status": "completed", "artifacts": ["reports/readiness.json"], "notes": ""
                }}),
            )]),
        ],
    );
    let items = vec![format!(
        "question = \"{} Does sleep predict the test score?\"",
        marker(0)
    )];
    let path = manifest(
        root.path(),
        "workflow = \"tabular-ols\"",
        &server.base_url(),
        &items,
    );
    let m = load(&path);

    // The stage's command waits for its researcher's decision.
    let first = drive_one(&m, 0).await;
    assert_eq!(
        (first.phase, first.stage.as_deref()),
        (Phase::Waiting, Some("readiness")),
        "{first:?}"
    );
    assert!(
        first
            .next
            .as_deref()
            .is_some_and(|n| n.contains("heartwood decide")),
        "{first:?}"
    );
    allow(&first.project, &first.session).await;

    // Driven again: the batch runs the stage's checks, which pass, and the stage waits for
    // its acceptance: the batch never accepts.
    let second = drive_one(&m, 0).await;
    assert_eq!(second.phase, Phase::Waiting, "{second:?}");
    assert_eq!(
        second.detail,
        "stage readiness passed its checks and waits for your acceptance"
    );
    assert_eq!(second.last_check.as_deref(), Some("readiness: eligible"));
    assert!(
        second
            .next
            .as_deref()
            .is_some_and(|n| n.contains("heartwood workflow accept") && n.contains("--fingerprint")),
        "{second:?}"
    );

    // Accepted, bound to what the projection offers.
    let p = projection_of(&second).expect("the projection");
    let control = p
        .workflow
        .as_ref()
        .and_then(|w| w.control(CommandName::WorkflowAccept))
        .expect("the acceptance")
        .clone();
    let fingerprint = control.fingerprint.expect("a fingerprint");
    let accepting = |revision: u64| {
        let (project, session) = (second.project.clone(), second.session.clone());
        let fingerprint = fingerprint.clone();
        tokio::task::spawn_blocking(move || accept(&project, &session, revision, &fingerprint))
    };
    let stale = accepting(control.revision + 1).await.expect("joined");
    assert!(
        matches!(stale, Ok(Accepted::Refused(_))),
        "a revision that was not shown is refused: {stale:?}"
    );
    let accepted = accepting(control.revision).await.expect("joined");
    assert_eq!(accepted.expect("answered"), Accepted::Yes);

    // Collect: the digest of each accepted file is the one the session record holds, and
    // the bytes on disk.
    let collected = heartwood_batch::collect::collect(&m, |_, _| {}).expect("collect");
    let row = &collected.rows[0];
    assert!(row.verified, "{row:?}");
    assert_eq!(row.accepted_stages, ["readiness"]);
    let context = ProjectContext::at(&second.project).expect("project");
    let recorded = SessionAdmin::new(&context)
        .show(&second.session)
        .expect("the record")
        .projection
        .expect("its projection");
    let stage = recorded
        .workflow
        .as_ref()
        .and_then(|w| w.stages.iter().find(|s| s.spec.id == "readiness"))
        .expect("the stage");
    assert_eq!(stage.status, StageStatus::Accepted);
    assert!(!stage.accepted_evidence.is_empty());
    for file in &stage.accepted_evidence {
        let Some(sha256) = &file.sha256 else { continue };
        assert_eq!(row.evidence.get(&file.path), Some(sha256), "{row:?}");
        let bytes = std::fs::read(second.project.join(&file.path)).expect("the file");
        assert_eq!(&format!("{:x}", Sha256::digest(&bytes)), sha256);
    }
    assert!(
        row.evidence.contains_key("reports/readiness.json"),
        "{row:?}"
    );
    let csv = std::fs::read_to_string(&collected.csv).expect("csv");
    assert!(
        csv.contains(&row.evidence["reports/readiness.json"]),
        "{csv}"
    );

    // The accepted report changed afterwards: the item is no longer summarised.
    let report = second.project.join("reports/readiness.json");
    let mut changed = std::fs::read(&report).expect("report");
    changed.extend_from_slice(b"\n");
    std::fs::write(&report, changed).expect("edit");
    let again = heartwood_batch::collect::collect(&m, |_, _| {}).expect("collect");
    let row = &again.rows[0];
    assert!(!row.verified, "{row:?}");
    assert!(
        row.refused
            .as_deref()
            .is_some_and(|r| r.contains("is not the file stage readiness accepted")),
        "{row:?}"
    );
}
