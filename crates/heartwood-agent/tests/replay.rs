//! Recording and replaying a conversation's model calls: the replay makes the same decisions
//! (same actions, same observations for deterministic commands), and a planted divergence stops
//! it at the step where the model would have seen something else.

use std::path::Path;

use heartwood_agent::conversation::{
    ConfirmationPolicy, Conversation, ConversationConfig, EventKind, ExecutionStatus,
};
use heartwood_agent::model::ModelRoute;
use heartwood_agent::model::replay::{EXCHANGES_FILE, load};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("project");
    std::fs::create_dir(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/cohort.csv"), "id,y\n1,2\n2,3\n").expect("write");
    dir
}

async fn run(route: ModelRoute, project: &Path, state: &Path) -> Vec<EventKind> {
    let mut config = ConversationConfig::new(route, project.to_owned(), state.to_owned());
    config.policy = ConfirmationPolicy::NeverConfirm;
    let mut conversation = Conversation::open(config).expect("open");
    conversation.send_message("count the rows").expect("send");
    let status = conversation.run().await.expect("run");
    let events = conversation
        .events()
        .iter()
        .map(|e| e.kind.clone())
        .collect();
    conversation.close().await;
    let _ = status;
    events
}

fn observations(events: &[EventKind]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EventKind::Observation { observation, .. } => Some(observation.content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_repeats_the_recorded_run_and_stops_where_it_diverges() {
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "wc -l < data/cohort.csv"}))])
            .with_usage(100, 10),
        Turn::calls(&[("terminal", json!({"command": "head -1 data/cohort.csv"}))]),
        Turn::calls(&[("finish", json!({"message": "3 lines"}))]),
    ]))
    .await
    .expect("server");
    let original = project();
    let state = tempfile::tempdir().expect("state");
    let recorded = run(
        ModelRoute::compatible(&server.base_url(), "scripted"),
        original.path(),
        &state.path().join("original"),
    )
    .await;
    let recording = state.path().join("original").join(EXCHANGES_FILE);
    let exchanges = load(&recording).expect("recording");
    assert_eq!(exchanges.len(), 3);
    assert_eq!(exchanges[0].usage.prompt_tokens, 100);

    // The same starting files: the same actions and observations, without the server.
    drop(server);
    let replay_route = ModelRoute {
        replay: Some(recording.clone()),
        ..ModelRoute::compatible("http://127.0.0.1:9", "replay")
    };
    let copy = project();
    let replayed = run(
        replay_route.clone(),
        copy.path(),
        &state.path().join("replay"),
    )
    .await;
    assert_eq!(observations(&replayed), observations(&recorded));
    assert!(replayed.iter().any(|e| matches!(
        e,
        EventKind::Status {
            status: ExecutionStatus::Finished
        }
    )));

    // A file changed before the replay: the first observation differs, so the second model
    // call's request differs from the recorded one, and the replay stops there.
    let changed = project();
    std::fs::write(changed.path().join("data/cohort.csv"), "id,y\n1,2\n").expect("write");
    let diverged = run(replay_route, changed.path(), &state.path().join("diverged")).await;
    let error = diverged
        .iter()
        .find_map(|e| match e {
            EventKind::Error { message } => Some(message.clone()),
            _ => None,
        })
        .expect("a divergence error");
    assert!(
        error.contains("diverged from the recording at model call 2"),
        "{error}"
    );
    assert!(diverged.iter().any(|e| matches!(
        e,
        EventKind::Status {
            status: ExecutionStatus::Error
        }
    )));
    assert_eq!(
        observations(&diverged).len(),
        1,
        "nothing ran after the divergence"
    );
}
