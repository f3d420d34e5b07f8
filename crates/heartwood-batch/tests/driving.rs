//! The batch driven in process: several items at once against the scripted model server, in
//! real template projects, each through its project's gateway; what the records say is what
//! each session's projection says.

mod support;

use std::time::Duration;

use heartwood_batch::Phase;
use heartwood_events::{Command, CommandKind, Decision, SessionId};
use heartwood_gateway::{ProjectContext, SessionGateway};
use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::json;
use support::{drive_all, drive_one, event_types, load, manifest, marker};

/// A template with one data file.
fn template(root: &std::path::Path) {
    std::fs::create_dir_all(root.join("template")).expect("template");
    std::fs::write(root.join("template/data.txt"), "a\nb\n").expect("data");
}

/// Allows the pending set of `session` in `project` once, as `heartwood decide … allow` does
/// in a shell (it follows the run the decision lets go on, then lets go of the session).
async fn allow(project: &std::path::Path, session: &str) {
    let context = ProjectContext::at(project).expect("project");
    let gateway = SessionGateway::new(context);
    let id = SessionId::parse(session).expect("id");
    let set = tokio::task::block_in_place(|| gateway.serve(&id))
        .ok()
        .and_then(|()| gateway.projection(&id).ok())
        .and_then(|p| p.pending)
        .expect("a pending set");
    let command = Command::new(
        SessionGateway::new_command_id(),
        id.clone(),
        CommandKind::Decide {
            set_id: set.set_id,
            revision: set.revision,
            decision: Decision::AllowOnce,
            reason: None,
        },
    );
    let receipt = gateway.submit(command).await.expect("decide");
    assert!(
        matches!(receipt.outcome, heartwood_events::Outcome::Applied { .. }),
        "{receipt:?}"
    );
    let settled = gateway
        .settled(&id, Duration::from_secs(60))
        .await
        .expect("settled");
    assert!(settled.is_settled(), "{:?}", settled.projection.lifecycle);
    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn items_run_at_once_in_process_each_settling_as_its_session_says() {
    let root = tempfile::tempdir().expect("root");
    template(root.path());
    let server = ScriptedModelServer::start(Script::of(vec![]))
        .await
        .expect("server");
    // Two answer at once; one proposes a command and waits for its researcher; the last one's
    // model refuses the request.
    server.push_lane(&marker(0), [Turn::text("item 0 is done")]);
    server.push_lane(&marker(1), [Turn::text("item 1 is done")]);
    server.push_lane(
        &marker(2),
        [
            Turn::calls(&[("terminal", json!({"command": "echo 2 >> ran.txt"}))]),
            Turn::text("item 2 is done"),
        ],
    );
    server.push_lane(
        &marker(3),
        [Turn::fault(Fault::Status {
            status: 400,
            body: None,
            retry_after_secs: None,
        })],
    );
    let items: Vec<String> = (0..4)
        .map(|k| format!("task = \"{} count the lines of data.txt\"", marker(k)))
        .collect();
    let path = manifest(
        root.path(),
        "task = \"count the lines\"\npolicy = \"always-review\"",
        &server.base_url(),
        &items,
    );
    let m = load(&path);

    let records = drive_all(&m, 4).await;
    let phases: Vec<Phase> = records.iter().map(|r| r.phase).collect();
    assert_eq!(
        phases,
        [Phase::Done, Phase::Done, Phase::Waiting, Phase::Failed],
        "{records:#?}"
    );
    for r in &records {
        assert_eq!(r.attempts, 1, "{r:?}");
        assert!(r.route_connected, "{r:?}");
        // Each item is its own project, made from the template.
        assert_eq!(
            std::fs::read_to_string(r.project.join("data.txt")).expect("data"),
            "a\nb\n"
        );
    }
    let waiting = &records[2];
    assert_eq!(
        waiting.detail, "waiting for your decision on 1 proposed action",
        "{waiting:?}"
    );
    let next = waiting.next.as_deref().expect("what answers it");
    assert!(
        next.contains("heartwood decide batch-item-02 --set ") && next.ends_with(" allow"),
        "{next}"
    );
    assert!(
        !waiting.project.join("ran.txt").exists(),
        "nothing runs before its decision"
    );
    let failed = &records[3];
    assert!(failed.detail.starts_with("the run failed"), "{failed:?}");

    // The researcher allows the set; the item is driven again and finishes, its command run
    // once. Done items are not driven again: their sessions say so.
    allow(&waiting.project, &waiting.session).await;
    let again = drive_one(&m, 2).await;
    assert_eq!((again.phase, again.attempts), (Phase::Done, 2), "{again:?}");
    assert_eq!(
        std::fs::read_to_string(again.project.join("ran.txt")).expect("ran"),
        "2\n"
    );
    let before = event_types(&records[0].project, &records[0].session);
    let done = drive_one(&m, 0).await;
    assert_eq!(
        (done.phase, done.detail.as_str()),
        (Phase::Done, "finished")
    );
    assert_eq!(event_types(&done.project, &done.session), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_the_gateway_refuses_fails_its_item_with_the_reason_and_starts_no_session() {
    let root = tempfile::tempdir().expect("root");
    template(root.path());
    // Nothing answers at this address: the task is refused (the agent cannot be served).
    let items = vec![format!("task = \"{} go\"", marker(0))];
    let path = manifest(
        root.path(),
        "task = \"go\"\npolicy = \"always-review\"",
        "http://127.0.0.1:9/v1",
        &items,
    );
    let m = load(&path);
    let records = drive_all(&m, 1).await;
    let r = &records[0];
    assert_eq!(r.phase, Phase::Failed, "{r:?}");
    // The gateway's reason, word for word: no exit code or printed line stands between.
    assert!(
        r.detail.contains("cannot be reached") && r.detail.contains("model connect"),
        "{r:?}"
    );
    let context = ProjectContext::at(&r.project).expect("project");
    let sessions = heartwood_gateway::SessionAdmin::new(&context)
        .list(None)
        .expect("list");
    assert!(sessions.is_empty(), "{sessions:?}");
}
