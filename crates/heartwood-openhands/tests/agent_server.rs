//! The real OpenHands agent server, owned by Heartwood, against the scripted model server: a
//! two-action set waits whole for one decision, is rejected with a reason that reaches the
//! model, the next set is allowed and runs once, and the conversation finishes. Needs the
//! pinned environment (`HEARTWOOD_OPENHANDS_VENV` or the default location); without it the test
//! says so and passes, unless `HEARTWOOD_REQUIRE_OPENHANDS` is set (as CI does).

use std::time::Duration;

use heartwood_openhands::events::Event;
use heartwood_openhands::{
    AgentServer, Client, Confinement, ConversationSpec, ExecutionStatus, Installation, Rendezvous,
};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;

fn installation() -> Option<Installation> {
    match Installation::find() {
        Ok(installation) => Some(installation),
        Err(e) if std::env::var_os("HEARTWOOD_REQUIRE_OPENHANDS").is_some() => {
            panic!("HEARTWOOD_REQUIRE_OPENHANDS is set: {e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

const SETTLE: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread")]
async fn a_set_waits_whole_a_rejection_reaches_the_model_and_an_allowed_action_runs_once() {
    let Some(installation) = installation() else {
        return;
    };
    let model = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[
            ("terminal", json!({"command": "echo one >> ran.txt"})),
            ("terminal", json!({"command": "echo two >> ran.txt"})),
        ]),
        // What the terminal tool's environment holds: the model key never, an allowlisted
        // variable yes.
        Turn::calls(&[(
            "terminal",
            json!({"command": "echo three key=${OPENAI_API_KEY:-absent} session=${SESSION_API_KEY:-absent} home=${HOME:+set} >> ran.txt"}),
        )]),
        Turn::calls(&[("finish", json!({"message": "wrote three"}))]),
    ]))
    .await
    .expect("model");
    let project = tempfile::tempdir().expect("project");
    let state = tempfile::tempdir().expect("state");
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(k, _)| k == "PATH" || k == "HOME")
        .collect();
    let secrets = [("OPENAI_API_KEY".to_owned(), "sk-scripted".to_owned())];
    let rendezvous = Rendezvous::prepare(state.path()).expect("a meeting place");
    // Unconfined here: the scripted model listens on the host's loopback, which a confined
    // server's network namespace does not have (the gateway's tests run the server confined,
    // behind the relay its rendezvous forwards).
    let confinement = Confinement {
        sandbox: heartwood_sandbox::Sandbox::new(project.path()),
        level: heartwood_sandbox::SandboxLevel::Unsandboxed,
    };
    let mut server = AgentServer::start(
        &installation,
        state.path(),
        &rendezvous,
        confinement,
        &env,
        &secrets,
    )
    .await
    .expect("the agent server starts");
    let client = Client::new(&server).expect("a client");
    let conversation = client
        .start_conversation(&ConversationSpec {
            model: "openai/scripted".to_owned(),
            base_url: Some(model.base_url()),
            working_dir: project.path().to_string_lossy().into_owned(),
            confirm_every_action: true,
            max_iterations: 20,
            system_suffix: Some("## Skills\n- check-units: SUFFIX-MARK-7".into()),
            cost_per_token: None,
            finish_outcome: None,
            task_tool: false,
        })
        .await
        .expect("a conversation");
    let id = conversation.id;

    client
        .send_message(&id, "write the files", true)
        .await
        .expect("the task");
    let info = client.settle(&id, None, SETTLE).await.expect("settles");
    assert_eq!(
        info.execution_status,
        ExecutionStatus::WaitingForConfirmation
    );
    let actions: Vec<_> = client
        .events(&id)
        .await
        .expect("events")
        .into_iter()
        .filter_map(|e| match e {
            Event::Action(action) => Some(action),
            _ => None,
        })
        .collect();
    assert_eq!(
        actions.len(),
        2,
        "both actions of the reply wait: {actions:?}"
    );
    assert_eq!(actions[0].llm_response_id, actions[1].llm_response_id);
    assert_eq!(actions[1].action["command"], "echo two >> ran.txt");
    assert!(
        !project.path().join("ran.txt").exists(),
        "nothing ran before the decision"
    );

    client
        .respond(&id, false, Some("write only three"))
        .await
        .expect("rejected");
    client.run(&id).await.expect("runs on");
    let info = client
        .settle(&id, info.leaf_event_id.as_deref(), SETTLE)
        .await
        .expect("settles");
    assert_eq!(
        info.execution_status,
        ExecutionStatus::WaitingForConfirmation
    );
    let told = model
        .requests()
        .last()
        .map(ToString::to_string)
        .unwrap_or_default();
    let first = model.requests()[0]["messages"][0].to_string();
    assert!(
        first.contains("SUFFIX-MARK-7"),
        "the system prompt has no suffix: {first}"
    );
    assert!(
        told.contains("write only three"),
        "the model was not told why"
    );

    client.respond(&id, true, None).await.expect("allowed");
    // `finish` ends the run without a confirmation, as in the native engine.
    let info = client
        .settle(&id, info.leaf_event_id.as_deref(), SETTLE)
        .await
        .expect("settles");
    assert_eq!(info.execution_status, ExecutionStatus::Finished);
    let ran = std::fs::read_to_string(project.path().join("ran.txt")).expect("ran.txt");
    assert_eq!(
        ran, "three key=absent session=absent home=set\n",
        "only the allowed action ran, once, without the model key"
    );
    let events = client.events(&id).await.expect("events");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Rejected { reason, .. } if reason == "write only three")),
        "the rejection is an event with its reason"
    );

    // Owned: stopping it ends the process (and its group).
    let pid = server.pid().expect("pid");
    assert!(server.is_running());
    server.stop().await;
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server outlived its owner"
    );
}
