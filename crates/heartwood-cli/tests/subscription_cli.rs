//! ChatGPT subscription sign-in and its Responses transport, through the real binary against a
//! local server playing OpenAI's accounts service and the Responses endpoint (the scripted
//! model server): the device code is shown, the approval is polled, the tokens land in a 0600
//! file in the user's configuration folder (never in the project), a subscription route runs a
//! task over the Responses API with the signed-in token, an expiring token is refreshed before
//! use, and the token is in no file of the project.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use heartwood_testkit::{Script, ScriptedModelServer, Turn, chatgpt};
use serde_json::json;

async fn heartwood(
    project: &Path,
    config: &Path,
    server: &ScriptedModelServer,
    args: &[&str],
) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(args)
        .current_dir(project)
        .env("HEARTWOOD_CONFIG_HOME", config)
        .env("HEARTWOOD_CHATGPT_ISSUER", server.origin())
        .env(
            "HEARTWOOD_CHATGPT_BASE_URL",
            format!("{}/backend-api/codex", server.origin()),
        )
        .env_remove("HEARTWOOD_PLATFORM_FILE")
        .output()
        .await
        .expect("run heartwood")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_code_sign_in_runs_a_task_over_the_responses_api_and_refreshes_its_token() {
    let project = tempfile::tempdir().expect("project");
    let config = tempfile::tempdir().expect("user config");
    // A folder left open by a umask: the sign-in makes it private before writing into it.
    std::fs::set_permissions(config.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "echo from-the-subscription"}))])
            .with_usage(1200, 40),
        Turn::calls(&[("finish", json!({"message": "done"}))]).with_usage(1300, 10),
    ]))
    .await
    .expect("server");
    // Tokens that live one minute: inside the five-minute margin, so every call refreshes.
    server.set_sign_in(60, 2);

    let signed_in = heartwood(
        project.path(),
        config.path(),
        &server,
        &["model", "signin", "--json"],
    )
    .await;
    assert!(
        signed_in.status.success(),
        "{}",
        support::text(&signed_in.stderr)
    );
    let stdout = support::text(&signed_in.stdout);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines[0]["user_code"], chatgpt::USER_CODE);
    assert_eq!(
        lines[0]["verification_url"],
        format!("{}/codex/device", server.origin())
    );
    assert_eq!(lines[1]["email"], chatgpt::EMAIL);
    assert!(!stdout.contains("refresh-"), "no token is shown: {stdout}");
    let (polls, exchanges, _) = server.sign_in_counts();
    assert_eq!(
        (polls, exchanges),
        (2, 1),
        "polled until approved, exchanged once"
    );

    let tokens = config.path().join("chatgpt.json");
    let mode = std::fs::metadata(&tokens)
        .expect("token file")
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o600,
        "the tokens are readable by their owner only"
    );
    let folder = std::fs::metadata(config.path())
        .expect("folder")
        .permissions()
        .mode();
    assert_eq!(folder & 0o777, 0o700, "the sign-in folder is private");

    let connected = heartwood(
        project.path(),
        config.path(),
        &server,
        &[
            "model",
            "connect",
            "--category",
            "subscription",
            "--model",
            "gpt-5-codex",
        ],
    )
    .await;
    assert!(
        connected.status.success(),
        "{}",
        support::text(&connected.stderr)
    );
    let status = heartwood(
        project.path(),
        config.path(),
        &server,
        &["status", "--json"],
    )
    .await;
    let plan: serde_json::Value = serde_json::from_slice(&status.stdout).expect("plan");
    assert_eq!(plan["phase"], "ready", "{plan:#}");
    assert_eq!(plan["route"]["credential_boundary"], "application_scrubbed");
    assert_eq!(plan["route"]["low_risk_automation"]["allowed"], false);

    let ran = heartwood(
        project.path(),
        config.path(),
        &server,
        &["exec", "say where you run"],
    )
    .await;
    // The terminal command waits for a decision (exit 3); allow it and follow to the end.
    assert_eq!(ran.status.code(), Some(3), "{}", support::text(&ran.stderr));
    // No price is set for the route: the cost is unknown, never $0.
    assert!(
        support::text(&ran.stdout)
            .contains("usage: 1,200 tokens in, 40 out · cost unknown (no price set)"),
        "{}",
        support::text(&ran.stdout)
    );
    let allowed = heartwood(
        project.path(),
        config.path(),
        &server,
        &["decide", "--last", "allow"],
    )
    .await;
    assert!(
        allowed.status.success(),
        "{}",
        support::text(&allowed.stderr)
    );
    ran_over_the_responses_api(&server, "from-the-subscription");
    let (_, _, refreshes) = server.sign_in_counts();
    assert!(
        refreshes >= 1,
        "the expiring token was refreshed before use"
    );

    // No token in any file of the project.
    no_project_file_holds_the_token(project.path(), config.path());

    let out = heartwood(
        project.path(),
        config.path(),
        &server,
        &["model", "signout"],
    )
    .await;
    assert!(support::text(&out.stdout).contains("signed out"));
    assert!(!tokens.exists());
    let plan = heartwood(
        project.path(),
        config.path(),
        &server,
        &["status", "--json"],
    )
    .await;
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan");
    assert_eq!(plan["phase"], "credential_required");
    assert_eq!(plan["next_action"], "heartwood model signin");
}

/// The OpenHands engine on a subscription route: its agent server cannot speak the Responses
/// API or hold Heartwood's sign-in, so it reaches the model through Heartwood's loopback relay.
/// The task runs, is decided from another process (a new agent server, told the new relay's
/// address), and every request reaches the Responses endpoint with the signed-in token, which
/// is in no file of the project, the agent server's own store included.
#[tokio::test(flavor = "multi_thread")]
async fn the_openhands_engine_runs_a_task_on_a_subscription_through_the_relay() {
    let project = tempfile::tempdir().expect("project");
    let config = tempfile::tempdir().expect("user config");
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "echo from-the-relay"}))]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await
    .expect("server");
    server.set_sign_in(3600, 1);
    if !support::use_openhands(project.path()) {
        return;
    }
    for args in [
        &["model", "signin", "--json"][..],
        &[
            "model",
            "connect",
            "--category",
            "subscription",
            "--model",
            "gpt-5-codex",
        ],
    ] {
        let out = heartwood(project.path(), config.path(), &server, args).await;
        assert!(
            out.status.success(),
            "{args:?}: {}",
            support::text(&out.stderr)
        );
    }

    let ran = heartwood(
        project.path(),
        config.path(),
        &server,
        &["exec", "say where you run"],
    )
    .await;
    assert_eq!(
        ran.status.code(),
        Some(3),
        "{}{}\n{}",
        support::text(&ran.stdout),
        support::text(&ran.stderr),
        support::agent_server_log_tail(project.path())
    );
    let allowed = heartwood(
        project.path(),
        config.path(),
        &server,
        &["decide", "--last", "allow"],
    )
    .await;
    assert!(
        allowed.status.success(),
        "{}{}\n{}",
        support::text(&allowed.stdout),
        support::text(&allowed.stderr),
        support::agent_server_log_tail(project.path())
    );
    // The route's model (not the name the agent server was told), with the token.
    ran_over_the_responses_api(&server, "from-the-relay");
    no_project_file_holds_the_token(project.path(), config.path());
}

/// The task went to the Responses endpoint as the subscription's model with its tools and the
/// signed-in token, and the command's output (which printed `printed`) went back as the call's
/// output.
fn ran_over_the_responses_api(server: &ScriptedModelServer, printed: &str) {
    let requests = server.requests();
    assert!(requests.len() >= 2, "{requests:#?}");
    let first = &requests[0];
    assert_eq!(first["model"], "gpt-5-codex");
    assert_eq!(first["store"], false);
    assert!(
        first["instructions"]
            .as_str()
            .is_some_and(|i| !i.is_empty())
    );
    assert!(
        first["input"].to_string().contains("say where you run"),
        "the task is an input item: {first:#}"
    );
    assert!(first["tools"].to_string().contains("\"name\":\"terminal\""));
    let second = requests[1]["input"].to_string();
    assert!(
        second.contains("function_call_output") && second.contains(printed),
        "the command's output went back as the call's output: {second}"
    );
    let authorizations = server.authorizations();
    assert!(
        authorizations
            .iter()
            .all(|a| a.as_deref().is_some_and(|a| a.starts_with("Bearer ey"))),
        "{authorizations:?}"
    );
}

/// The signed-in access token (in `config`) is in no file under `project`.
fn no_project_file_holds_the_token(project: &Path, config: &Path) {
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(config.join("chatgpt.json")).expect("tokens"))
            .expect("json");
    let access = stored["access_token"].as_str().expect("access token");
    for file in heartwood_testkit::files_under(project) {
        let bytes = std::fs::read(&file).expect("read");
        assert!(
            !bytes.windows(access.len()).any(|w| w == access.as_bytes()),
            "{} holds the access token",
            file.display()
        );
    }
}
