//! The page as a researcher comes back to it, in real headless Chromium at 390, 800 and 1440 px,
//! light and dark: a bookmarked `s/<id>` in a fresh browser asks for the launch token and lands
//! on that session; a launch link to `s/<id>?token=` lands on it too; the waiting set is
//! brought into view; Page Down and End scroll the review's list (so a keyboard reader reaches
//! Allow); a disabled Allow looks disabled in both themes; the top of the page carries no
//! platform details.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use heartwood_events::ActionPolicy;
use heartwood_gateway::SessionGateway;
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use heartwood_web::{Capability, Mode};
use serde_json::json;

/// Four 15-line scripts: more than the review's list shows at once at any width.
fn long_set() -> Turn {
    let script = |n: u32| {
        let mut lines: Vec<String> = (0..14).map(|i| format!("echo step {n}.{i}")).collect();
        lines.push(format!("echo {n} >> ran.txt"));
        lines.join("\n")
    };
    let mut turn = Turn::calls(&[
        ("terminal", json!({ "command": script(1) })),
        ("terminal", json!({ "command": script(2) })),
        ("terminal", json!({ "command": script(3) })),
        ("terminal", json!({ "command": script(4) })),
    ]);
    turn.content = Some("I'll run the four scripts, one after another.".into());
    turn
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bookmarked_session_opens_and_its_set_is_reachable_by_keyboard_at_every_width() {
    let Some(node_path) = support::node_path() else {
        return;
    };
    let project = tempfile::tempdir().expect("project");
    let model = ScriptedModelServer::start(Script::of(vec![long_set()]))
        .await
        .expect("model");
    support::connect_model(project.path(), &model.base_url());
    let capability = Capability::generate().expect("capability");
    let secret = capability.reveal().to_owned();
    let (addr, state) = support::serve(project.path(), Mode::Loopback, capability).await;

    // A session waiting for a decision, made before any browser opens the page.
    let id = SessionGateway::new_session_id();
    let serving = std::sync::Arc::clone(&state);
    let asked = id.clone();
    tokio::task::spawn_blocking(move || {
        let text = "run the four scripts".to_owned();
        let policy = ActionPolicy::AlwaysReview;
        serving
            .gateway
            .submit_blocking(heartwood_events::Command::new(
                SessionGateway::new_command_id(),
                asked,
                heartwood_events::CommandKind::Say { text, policy },
            ))
    })
    .await
    .expect("join")
    .expect("say");
    let started = Instant::now();
    while state
        .gateway
        .projection(&id)
        .map_or(true, |p| p.pending.is_none())
    {
        assert!(started.elapsed() < Duration::from_secs(30), "no set waits");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let base = format!("http://127.0.0.1:{}/", addr.port());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/page_access.mjs");
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::fs::create_dir_all(&shots).expect("target");
    let stdout = support::chromium(
        &node_path,
        &script,
        &[&base, &secret, &id.as_str(), &shots],
        "60000",
    )
    .await;
    for width in [390, 800, 1440] {
        for scheme in ["light", "dark"] {
            let at = format!("{width} px {scheme}");
            for promise in [
                "bookmark asks for the token: 401",
                "the token form lands on the session",
                "the launch link lands on the session",
                "the set is in view",
                "disabled Allow looks disabled",
                "End reached Allow",
                "no platform details at the top",
            ] {
                assert!(
                    stdout.contains(&format!("{at}: {promise}")),
                    "{at}: {promise}\n{stdout}"
                );
            }
        }
    }
    assert!(
        !project.path().join("ran.txt").exists(),
        "reading decided something"
    );
}
