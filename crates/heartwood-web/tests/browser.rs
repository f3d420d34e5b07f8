//! The page in real headless Chromium, driven by playwright-core: start a task against the
//! scripted model server, see a two-member set, reject it with a reason, see the agent continue,
//! allow the next set, see it finish; the session then reads the same through the gateway. The
//! test saves a screenshot (`target/browser-test.png`).
//!
//! It needs Debian's `chromium` and `playwright-core` from npm (`.ci/run` installs both; set
//! `HEARTWOOD_NODE_PATH` to the `node_modules` holding playwright-core).

mod support;

use std::path::Path;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use heartwood_web::{Capability, Mode};
use serde_json::json;

/// How long one step of a browser scenario may take. Generous: in CI these scenarios run side
/// by side with each other and with an OpenHands server starting, on two cores, and a step
/// that took 20 s there once was slow, not stuck.
const PATIENCE_MS: &str = "60000";

/// The browser scenarios run side by side, except the OpenHands one, which runs alone.
static HEAVY: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

fn set_of(a: &str, b: &str) -> Turn {
    Turn::calls(&[
        (
            "terminal",
            json!({ "command": format!("echo {a} >> ran.txt") }),
        ),
        (
            "terminal",
            json!({ "command": format!("echo {b} >> ran.txt") }),
        ),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_runs_a_task_with_a_rejection_and_an_approval_in_chromium() {
    let _beside_others = HEAVY.read().await;
    flow(None, "browser-test.png", false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_flow_works_behind_a_jupyter_proxy_prefix() {
    let _beside_others = HEAVY.read().await;
    flow(
        Some("/user/alice/proxy/8765/"),
        "browser-test-jupyter.png",
        false,
    )
    .await;
}

/// The same page and flow with the project's sessions on the OpenHands engine. Needs the pinned
/// OpenHands environment; without it the test says so and passes, unless
/// `HEARTWOOD_REQUIRE_OPENHANDS` is set (as CI does).
#[tokio::test(flavor = "multi_thread")]
async fn the_same_flow_works_with_the_openhands_engine() {
    // Its agent server's start takes both cores for a while: no other scenario runs then.
    let _alone = HEAVY.write().await;
    if let Err(why) = heartwood_gateway::openhands_installation() {
        assert!(
            std::env::var_os("HEARTWOOD_REQUIRE_OPENHANDS").is_none(),
            "HEARTWOOD_REQUIRE_OPENHANDS is set, and: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    flow(None, "browser-test-openhands.png", true).await;
}

/// The whole flow, at the root or under a Jupyter server proxy prefix, on the native engine or
/// on OpenHands.
async fn flow(prefix: Option<&str>, screenshot_name: &str, openhands: bool) {
    let Some(node_path) = support::node_path() else {
        return;
    };
    let project = tempfile::tempdir().expect("project");
    // OpenHands' editor takes absolute paths only; the review resolves either inside the
    // project.
    let notes = if openhands {
        project.path().join("notes.txt").display().to_string()
    } else {
        "notes.txt".to_owned()
    };
    let model = ScriptedModelServer::start(Script::of(vec![
        set_of("A1", "A2"),
        // The second set edits a file: the page must show the diff before anyone allows it.
        Turn::calls(&[
            ("terminal", json!({ "command": "echo B1 >> ran.txt" })),
            (
                "file_editor",
                json!({
                    "command": "str_replace", "path": notes,
                    "old_str": "status: draft", "new_str": "status: final",
                    "summary": "mark the notes final"
                }),
            ),
        ]),
        Turn::calls(&[(
            "finish",
            json!({"message": "**Wrote** B:\n\n- `ran.txt`\n- notes.txt"}),
        )]),
    ]))
    .await
    .expect("model");
    std::fs::write(
        project.path().join("notes.txt"),
        "title: cohort\nstatus: draft\n",
    )
    .expect("notes");
    support::connect_model(project.path(), &model.base_url());
    if openhands {
        heartwood_gateway::config::ProjectConfig::set_backend(
            &heartwood_gateway::ProjectContext::at(project.path()).expect("a UTF-8 path"),
            heartwood_gateway::config::BackendKind::OpenHands,
        )
        .expect("backend");
    }
    let capability = Capability::generate().expect("capability");
    let secret = capability.reveal().to_owned();
    let mode = match prefix {
        None => Mode::Loopback,
        Some(base_path) => Mode::JupyterProxy {
            base_path: base_path.to_owned(),
            external_host: "hub.example.org".into(),
        },
    };
    let (addr, state) = support::serve(project.path(), mode, capability).await;
    let base = prefix.unwrap_or("/");
    let url = format!("http://127.0.0.1:{}{base}?token={secret}", addr.port());

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser.mjs");
    let screenshot = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target")
        .join(screenshot_name);
    let stdout = support::chromium(
        &node_path,
        &script,
        &[&url, &screenshot],
        if openhands { "240000" } else { PATIENCE_MS },
    )
    .await;
    assert!(screenshot.exists(), "no screenshot");
    let ran = std::fs::read_to_string(project.path().join("ran.txt")).expect("ran");
    assert_eq!(ran, "B1\n", "only the allowed set ran, once");
    let notes = std::fs::read_to_string(project.path().join("notes.txt")).expect("notes");
    assert_eq!(
        notes, "title: cohort\nstatus: final\n",
        "the edit the diff showed"
    );
    let review_shot = screenshot.with_file_name(screenshot_name.replace(".png", "-review.png"));
    assert!(review_shot.exists(), "no screenshot of the review");
    assert!(
        stdout.contains("diff shown: -status: draft +status: final"),
        "{stdout}"
    );
    let told = model.requests()[1]["messages"].to_string();
    assert!(
        told.contains("append to notes.txt instead"),
        "the reason never reached the model"
    );

    // The same session, through the gateway's own view.
    let session = stdout
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .expect("session line")
        .to_owned();
    let id = heartwood_events::SessionId::parse(&session).expect("id");
    let projection = state.gateway.projection(&id).expect("projection");
    assert_eq!(projection.status_line, "Finished.");
    assert_eq!(projection.actions.len(), 5);
}

/// The core loop at 390, 800 and 1440 px: nothing wider than the window, the decision on screen
/// without scrolling from 800 px up, no serious accessibility violation (axe-core, light and
/// dark), the keys the terminal interface uses, and a screenshot at each width
/// (`target/page-<width>.png`, the pictures in docs/).
#[tokio::test(flavor = "multi_thread")]
async fn the_page_fits_every_width_and_passes_an_accessibility_check() {
    let _beside_others = HEAVY.read().await;
    let Some(node_path) = support::node_path() else {
        return;
    };
    let project = tempfile::tempdir().expect("project");
    let mut turns = Vec::new();
    for width in [390, 800, 1440] {
        turns.push(Turn::calls(&[
            (
                "terminal",
                json!({ "command": format!("echo {width} >> ran.txt") }),
            ),
            (
                "file_editor",
                json!({
                    "command": "create", "path": format!("notes/width-{width}.md"),
                    "file_text": "# A note with a long unbroken line\n\nsha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
                    "summary": "write a note whose line is longer than a phone is wide"
                }),
            ),
        ]));
        turns.push(Turn::calls(&[(
            "finish",
            json!({"message": format!("Wrote ran.txt at {width} px.")}),
        )]));
    }
    let model = ScriptedModelServer::start(Script::of(turns))
        .await
        .expect("model");
    support::connect_model(project.path(), &model.base_url());
    let capability = Capability::generate().expect("capability");
    let secret = capability.reveal().to_owned();
    let (addr, _state) = support::serve(project.path(), Mode::Loopback, capability).await;
    let url = format!("http://127.0.0.1:{}/?token={secret}", addr.port());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/layout.mjs");
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::fs::create_dir_all(&shots).expect("target");
    let stdout = support::chromium(&node_path, &script, &[&url, &shots], PATIENCE_MS).await;
    for width in [390, 800, 1440] {
        assert!(
            stdout.contains(&format!(
                "{width} px: scrolls sideways false, wider than the window: []"
            )),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("{width} px: axe serious or critical (dark): 0")),
            "{stdout}"
        );
        assert!(shots.join(format!("page-{width}.png")).exists());
    }
    assert!(
        stdout.contains("800 px: the set's first preview, Allow and Reject are on screen"),
        "{stdout}"
    );
    let ran = std::fs::read_to_string(project.path().join("ran.txt")).expect("ran");
    assert_eq!(
        ran, "390\n800\n1440\n",
        "each width's set ran once, allowed by keyboard"
    );
}

/// One stage's scripted turn: a command that writes its files, then `finish` with the
/// structured outcome.
fn stage_turns(command: &str, artifacts: &[&str]) -> [Turn; 2] {
    [
        Turn::calls(&[("terminal", json!({ "command": command }))]),
        Turn::calls(&[(
            "finish",
            json!({"message": "done", "outcome": {
                "status": "completed", "artifacts": artifacts, "notes": ""
            }}),
        )]),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_runs_workflow_stages_and_shows_the_judged_model() {
    let _beside_others = HEAVY.read().await;
    let Some(node_path) = support::node_path() else {
        return;
    };
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, root);
    // The artifacts move aside; each stage's scripted turn writes its own back.
    std::fs::create_dir(root.join("stash")).expect("stash");
    for path in [
        "reports/readiness.json",
        "analysis/plan.json",
        "outputs/split.csv",
        "analysis/fit.py",
        "outputs/model.json",
    ] {
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
    ] {
        turns.extend(stage_turns(command, &wrote));
    }
    // The model stage's review: the agent asks the reviewer, which makes two claims.
    turns.push(Turn::calls(&[(
        "task",
        json!({"subagent_type": "reviewer", "description": "review the model",
               "prompt": "analysis/fit.py and outputs/model.json follow."}),
    )]));
    turns.push(Turn::calls(&[(
        "finish",
        json!({"result": {"proposals": [
            {"condition": "python_invalid", "path": "analysis/fit.py", "claim": "fit.py has a syntax error"},
            {"condition": "other", "path": "outputs/model.json", "claim": "the model is too simple"}
        ]}}),
    )]));
    turns.push(stage_turns("true", &[])[1].clone());
    let model = ScriptedModelServer::start(Script::of(turns))
        .await
        .expect("model");
    support::connect_model(root, &model.base_url());
    let capability = Capability::generate().expect("capability");
    let secret = capability.reveal().to_owned();
    let (addr, state) = support::serve(root, Mode::Loopback, capability).await;
    let url = format!("http://127.0.0.1:{}/?token={secret}", addr.port());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workflow.mjs");
    let screenshot =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-workflow.png");
    let stdout = support::chromium(
        &node_path,
        &script,
        &[&url, &"Does sleep predict the test score?", &screenshot],
        PATIENCE_MS,
    )
    .await;
    assert!(screenshot.exists(), "no screenshot");
    assert!(stdout.contains("figure drawn"), "{stdout}");
    assert!(stdout.contains("figures beside the picture"), "{stdout}");
    assert!(stdout.contains("at 390 px: picture at"), "{stdout}");
    assert!(
        stdout.contains("figure kept after the model stage"),
        "{stdout}"
    );
    assert!(
        stdout.contains("exported: Exported as an RO-Crate to"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the bytes the latest checks judged"),
        "{stdout}"
    );
    assert!(stdout.contains("split accepted by its checks"), "{stdout}");
    assert!(
        stdout.contains("the set and its decision are on screen at 1280×800"),
        "{stdout}"
    );
    assert!(
        stdout.contains("findings: review of model: 0 findings (verified"),
        "{stdout}"
    );
    assert!(
        stdout.contains("“fit.py has a syntax error” on analysis/fit.py — not observed"),
        "{stdout}"
    );
    let session = stdout
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .and_then(|s| heartwood_events::SessionId::parse(s).ok())
        .expect("the page named the run's session");
    let projection = state.gateway.projection(&session).expect("projection");
    let w = projection.workflow.expect("workflow");
    assert_eq!(w.current.as_deref(), Some("report"), "{w:?}");
    assert_eq!(model.remaining_turns(), 0);
}

/// The page shows a skill under review whole (files, SKILL.md, digest, that it is unreviewed),
/// approves the exact tree shown and activates it; the gateway then hands it to the agent.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_reviews_approves_and_activates_a_skill() {
    let _beside_others = HEAVY.read().await;
    let Some(node_path) = support::node_path() else {
        return;
    };
    let project = tempfile::tempdir().expect("project");
    let elsewhere = tempfile::tempdir().expect("skills");
    let dir = elsewhere.path().join("check-units");
    std::fs::create_dir_all(dir.join("scripts")).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: check-units\ndescription: Check units before fitting.\n---\nUNITS-BODY\n",
    )
    .expect("write");
    std::fs::write(dir.join("scripts/units.py"), "print(1)\n").expect("write");
    let context = heartwood_gateway::ProjectContext::at(project.path()).expect("project");
    let skills = heartwood_gateway::skills::SkillsService::open(&context);
    let added = skills.add_local(&dir).expect("add");
    let capability = Capability::generate().expect("capability");
    let secret = capability.reveal().to_owned();
    let (addr, _state) = support::serve(project.path(), Mode::Loopback, capability).await;
    let url = format!("http://127.0.0.1:{}/?token={secret}", addr.port());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/skills.mjs");
    let screenshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-skills.png");
    let stdout = support::chromium(&node_path, &script, &[&url, &screenshot], PATIENCE_MS).await;
    assert!(stdout.contains("scripts/units.py"), "{stdout}");
    assert!(stdout.contains("(unreviewed)"), "{stdout}");
    let digest = added.digest.expect("digest");
    assert!(stdout.contains(&format!("digest: {digest}")), "{stdout}");
    let given = tokio::task::spawn_blocking(move || skills.for_agent())
        .await
        .expect("join")
        .expect("for agent");
    assert_eq!(given.0.len(), 1);
    assert_eq!(given.0[0].digest.as_str(), digest);
}

/// The page shows the project's local models with the gateway's line (validation included) and
/// a transfer's progress as it moves (polled from the views every process writes), then its end.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_shows_local_models_and_a_transfer_moving() {
    let _beside_others = HEAVY.read().await;
    let Some(node_path) = support::node_path() else {
        return;
    };
    let project = tempfile::tempdir().expect("project");
    let weights = project.path().join("tiny.gguf");
    std::fs::write(&weights, b"GGUF tiny weights").expect("write");
    let context = heartwood_gateway::ProjectContext::at(project.path()).expect("project");
    let desk = heartwood_gateway::models::ModelDesk::new(&context);
    let options = heartwood_gateway::models::FileImport {
        name: Some("tiny".into()),
        license: "mit".into(),
        ..Default::default()
    };
    let paths = [weights];
    let review = desk.review_files(&paths, &options).expect("review");
    desk.import_files(&paths, &options, Some(&review.manifest_sha256))
        .expect("import");
    // A download in flight, as another process's would be seen.
    let moving = desk
        .transfers()
        .begin(heartwood_gateway::models::TransferKind::Download, "tiny");
    moving.set_total(100);
    std::thread::sleep(std::time::Duration::from_millis(300));
    moving.advance(40);
    // Another download, which the page cancels: its worker sees the request between chunks
    // and ends it cancelled, publishing nothing.
    let slow = desk
        .transfers()
        .begin(heartwood_gateway::models::TransferKind::Download, "slow");
    slow.set_total(1000);
    slow.advance(10);
    let slow_worker = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !slow.is_cancelled() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let cancelled = slow.is_cancelled();
        slow.end_cancelled();
        cancelled
    });

    let capability = Capability::generate().expect("capability");
    let secret = capability.reveal().to_owned();
    let (addr, _state) = support::serve(project.path(), Mode::Loopback, capability).await;
    let url = format!("http://127.0.0.1:{}/?token={secret}", addr.port());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models.mjs");
    let screenshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-models.png");
    let seen = project.path().join("seen");
    let finisher = {
        let seen = seen.clone();
        tokio::task::spawn_blocking(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !seen.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            moving.succeed("published tiny".to_owned());
        })
    };
    let stdout = support::chromium(
        &node_path,
        &script,
        &[&url, &screenshot, &seen],
        PATIENCE_MS,
    )
    .await;
    finisher.await.expect("finisher");
    assert!(
        slow_worker.await.expect("worker"),
        "the page's Cancel reached the worker: {stdout}"
    );
    assert!(
        stdout.contains("cancelled: download slow: cancelled"),
        "{stdout}"
    );
    assert!(
        stdout.contains("model: tiny · unvalidated") && stdout.contains("license mit"),
        "{stdout}"
    );
    assert!(
        stdout.contains("moving: download tiny: 40 B of 100 B (40%)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ended: download tiny: done (published tiny)"),
        "{stdout}"
    );
}

/// The page signs in with a ChatGPT subscription: it shows the device code and the page to open
/// (the gateway holds the handle), polls until the sign-in service approves, and names the
/// account. The service is the scripted server, started here; the page's server runs in a child
/// process whose environment points the sign-in at it and keeps the tokens in a folder of the
/// test's.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_signs_in_with_a_chatgpt_subscription() {
    let _beside_others = HEAVY.read().await;
    const TEST: &str = "the_page_signs_in_with_a_chatgpt_subscription";
    if std::env::var_os("HEARTWOOD_TEST_CHILD").is_some() {
        let Some(node_path) = support::node_path() else {
            return;
        };
        let project = tempfile::tempdir().expect("project");
        let capability = Capability::generate().expect("capability");
        let secret = capability.reveal().to_owned();
        let (addr, _state) = support::serve(project.path(), Mode::Loopback, capability).await;
        let url = format!("http://127.0.0.1:{}/?token={secret}", addr.port());
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/signin.mjs");
        let screenshot =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-signin.png");
        let stdout =
            support::chromium(&node_path, &script, &[&url, &screenshot], PATIENCE_MS).await;
        let config = std::env::var("HEARTWOOD_CONFIG_HOME").expect("config home");
        assert!(
            stdout.contains(&format!("code: {}", heartwood_testkit::chatgpt::USER_CODE)),
            "{stdout}"
        );
        assert!(stdout.contains("/codex/device"), "{stdout}");
        assert!(
            stdout.contains(&format!(
                "Signed in as {}",
                heartwood_testkit::chatgpt::EMAIL
            )),
            "{stdout}"
        );
        assert!(Path::new(&config).join("chatgpt.json").is_file());
        return;
    }
    if support::node_path().is_none() {
        return;
    }
    let server = ScriptedModelServer::start(Script::of(Vec::new()))
        .await
        .expect("server");
    let config = tempfile::tempdir().expect("config");
    let origin = server.origin();
    let vars = [
        ("HEARTWOOD_CHATGPT_ISSUER", std::ffi::OsStr::new(&origin)),
        ("HEARTWOOD_CONFIG_HOME", config.path().as_os_str()),
    ];
    tokio::task::block_in_place(|| heartwood_testkit::child::rerun_with(TEST, &vars));
    let (polls, exchanges, _) = server.sign_in_counts();
    assert!(
        polls >= 2 && exchanges == 1,
        "{polls} polls, {exchanges} exchanges"
    );
}
