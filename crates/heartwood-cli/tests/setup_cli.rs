//! `heartwood status` and `heartwood model` as real processes: the startup plan moves through its
//! phases as the project is set up, and looking creates nothing.

use std::net::TcpListener;
use std::path::Path;

mod support;
use support::{connect, heartwood};

use serde_json::Value;

fn phase(project: &Path) -> (String, Value) {
    let out = heartwood(project, &["status", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).expect("json");
    (plan["phase"].as_str().unwrap_or("").to_owned(), plan)
}

#[test]
fn status_in_an_empty_directory_asks_for_a_model_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (phase, plan) = phase(dir.path());
    assert_eq!(phase, "model_required");
    assert!(
        plan["next_action"]
            .as_str()
            .unwrap_or("")
            .contains("heartwood model connect")
    );
    let text = String::from_utf8_lossy(&heartwood(dir.path(), &["status"]).stdout).to_string();
    assert!(text.contains("no model is connected"), "{text}");
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("read").count(),
        0,
        "status created state"
    );
}

#[test]
fn the_plan_follows_the_route_from_unreachable_to_credential_to_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A port nothing listens on: bind, note it, close.
    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let closed_url = format!("http://{closed}/v1");
    let out = connect(dir.path(), &closed_url, None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unreachable route is not saved"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be reached"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.path().join(".heartwood/config.toml").exists());
    let out = support::connect_anyway(dir.path(), &closed_url);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(phase(dir.path()).0, "connection_required");

    let live = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", live.local_addr().expect("addr"));
    assert!(
        connect(dir.path(), &url, Some("HEARTWOOD_TEST_UNSET_KEY"))
            .status
            .success()
    );
    let (phase_now, plan) = phase(dir.path());
    assert_eq!(phase_now, "credential_required");
    assert!(
        plan["next_action"]
            .as_str()
            .unwrap_or("")
            .contains("export HEARTWOOD_TEST_UNSET_KEY")
    );
    assert_eq!(plan["route"]["credential_boundary"], "application_scrubbed");

    // Set for test processes (and so for this child) by `.cargo/config.toml`.
    assert!(
        connect(dir.path(), &url, Some("HEARTWOOD_TEST_MODEL_KEY"))
            .status
            .success()
    );
    assert_eq!(phase(dir.path()).0, "ready");
    let config =
        std::fs::read_to_string(dir.path().join(".heartwood/config.toml")).expect("config");
    assert!(
        config.contains("HEARTWOOD_TEST_MODEL_KEY") && !config.contains("sk-test-secret-123"),
        "{config}"
    );
    let shown: Value =
        serde_json::from_slice(&heartwood(dir.path(), &["model", "show", "--json"]).stdout)
            .expect("json");
    assert_eq!(shown["base_url"], url.as_str());
}

#[test]
fn routes_that_cannot_work_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let local = heartwood(
        dir.path(),
        &[
            "model",
            "connect",
            "--category",
            "local",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--model",
            "m",
        ],
    );
    assert!(!local.status.success());
    assert!(String::from_utf8_lossy(&local.stderr).contains("heartwood model use NAME"));
    let bad_url = connect(dir.path(), "localhost:11434", None);
    assert!(!bad_url.status.success());
    assert!(String::from_utf8_lossy(&bad_url.stderr).contains("http://"));
    assert!(!dir.path().join(".heartwood/config.toml").exists());
}

#[test]
fn an_interrupted_session_puts_recovery_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    heartwood_testkit::sessions::interrupt_an_append(dir.path(), "crashed");
    let (phase_now, plan) = phase(dir.path());
    assert_eq!(phase_now, "recovery_required");
    assert_eq!(plan["next_action"], "heartwood sessions recover crashed");
    assert!(
        heartwood(dir.path(), &["sessions", "recover", "crashed"])
            .status
            .success()
    );
    assert_eq!(phase(dir.path()).0, "model_required");
}

#[test]
fn running_in_the_home_folder_asks_for_a_project_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["status", "--json"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .output()
        .expect("run");
    let plan: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(plan["phase"], "project_review");
    assert!(
        plan["explanation"]
            .as_str()
            .unwrap_or("")
            .contains("home folder")
    );
}

#[test]
fn a_project_on_openhands_without_it_installed_is_told_to_install_it_and_can_go_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", live.local_addr().expect("addr"));
    assert!(connect(dir.path(), &url, None).status.success());
    assert_eq!(phase(dir.path()).0, "ready");
    let missing = dir.path().join("no-venv");
    let with_missing = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
            .args(args)
            .current_dir(dir.path())
            .env("HEARTWOOD_OPENHANDS_VENV", &missing)
            .output()
            .expect("run heartwood")
    };
    let chosen = with_missing(&["backend", "use", "openhands"]);
    assert!(chosen.status.success(), "{}", support::text(&chosen.stderr));
    assert!(
        support::text(&chosen.stdout).contains("heartwood backend install openhands"),
        "{}",
        support::text(&chosen.stdout)
    );
    let status = with_missing(&["status", "--json"]);
    let plan: Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(plan["phase"], "compute_required", "{plan}");
    assert!(
        plan["next_action"]
            .as_str()
            .unwrap_or("")
            .contains("heartwood backend install openhands")
    );
    let shown = support::text(&with_missing(&["backend", "show"]).stdout);
    assert!(
        shown.contains("new sessions use  openhands") && shown.contains("not installed"),
        "{shown}"
    );
    assert!(with_missing(&["backend", "use", "native"]).status.success());
    assert_eq!(phase(dir.path()).0, "ready");
}

#[tokio::test(flavor = "multi_thread")]
async fn connect_lists_the_services_models_and_refuses_one_it_does_not_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        heartwood_testkit::ScriptedModelServer::start(heartwood_testkit::Script::of(Vec::new()))
            .await
            .expect("server");
    let url = server.base_url();
    let project = dir.path().to_owned();
    let typo = {
        let (project, url) = (project.clone(), url.clone());
        tokio::task::spawn_blocking(move || {
            heartwood(
                &project,
                &[
                    "model",
                    "connect",
                    "--category",
                    "compatible",
                    "--base-url",
                    &url,
                    "--model",
                    "scriptd",
                ],
            )
        })
        .await
        .expect("join")
    };
    assert_eq!(typo.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert!(
        stderr.contains("does not list the model \"scriptd\"")
            && stderr.contains("scripted, scripted-large"),
        "{stderr}"
    );
    assert!(!project.join(".heartwood/config.toml").exists());
    let right = tokio::task::spawn_blocking(move || connect(&project, &url, None))
        .await
        .expect("join");
    assert_eq!(
        right.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&right.stderr)
    );
    assert!(
        String::from_utf8_lossy(&right.stdout)
            .contains("the service lists 2 model(s): scripted, scripted-large")
    );
    assert!(server.requests().is_empty(), "listing sends no completion");
}

/// Runs `heartwood ARGS` in `project` with `config_home` as the user's configuration folder.
fn heartwood_as_user(project: &Path, config_home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(args)
        .current_dir(project)
        .env("HEARTWOOD_CONFIG_HOME", config_home)
        .output()
        .expect("run heartwood")
}

#[test]
fn a_users_default_route_serves_every_project_without_its_own_and_status_says_so() {
    let user = tempfile::tempdir().expect("user config");
    let first = tempfile::tempdir().expect("project");
    let second = tempfile::tempdir().expect("project");
    let live = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", live.local_addr().expect("addr"));
    let saved = heartwood_as_user(
        first.path(),
        user.path(),
        &[
            "model",
            "connect",
            "--user",
            "--category",
            "compatible",
            "--base-url",
            &url,
            "--model",
            "scripted",
        ],
    );
    assert_eq!(
        saved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    assert!(user.path().join("config.toml").is_file());
    assert!(
        !first.path().join(".heartwood").exists(),
        "a default route is not the project's"
    );

    let status = |project: &Path| -> Value {
        let out = heartwood_as_user(project, user.path(), &["status", "--json"]);
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let inherited = status(second.path());
    assert_eq!(inherited["phase"], "ready", "{inherited}");
    assert!(
        inherited["route"]["inherited_from"]
            .as_str()
            .is_some_and(|p| p.ends_with("config.toml")),
        "{inherited}"
    );
    let shown = heartwood_as_user(second.path(), user.path(), &["model", "show"]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("your default route"));

    // The project's own route takes over, and the user's file is left as it was.
    let own = heartwood_as_user(
        second.path(),
        user.path(),
        &[
            "model",
            "connect",
            "--category",
            "compatible",
            "--base-url",
            &url,
            "--model",
            "scripted",
            "--max-output-tokens",
            "512",
        ],
    );
    assert_eq!(
        own.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&own.stderr)
    );
    let own_status = status(second.path());
    assert!(
        own_status["route"]["inherited_from"].is_null(),
        "{own_status}"
    );
    let project_file =
        std::fs::read_to_string(second.path().join(".heartwood/config.toml")).expect("config");
    assert!(project_file.contains("512"));
    assert!(
        !std::fs::read_to_string(user.path().join("config.toml"))
            .expect("user config")
            .contains("512")
    );
}

#[test]
fn heartwood_keeps_its_own_folder_out_of_git_and_status_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q", "."]);
    std::fs::write(dir.path().join("analysis.py"), "print(1)\n").expect("file");
    let said = String::from_utf8_lossy(&heartwood(dir.path(), &["status"]).stdout).to_string();
    assert!(said.contains("state     not created yet"), "{said}");

    // The first write creates `.heartwood/` with its own ignore file.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let saved = support::connect_anyway(dir.path(), &format!("http://127.0.0.1:{port}/v1"));
    assert!(
        dir.path().join(".heartwood/config.toml").is_file(),
        "{saved:?}"
    );
    git(&["add", "-A"]);
    let staged = git(&["diff", "--cached", "--name-only"]);
    assert_eq!(
        staged.trim(),
        "analysis.py",
        "git add -A took Heartwood's state"
    );
    let said = String::from_utf8_lossy(&heartwood(dir.path(), &["status"]).stdout).to_string();
    assert!(
        said.contains("kept out of git by its own .gitignore"),
        "{said}"
    );
    let (_, plan) = phase(dir.path());
    assert_eq!(plan["state_folder"]["ignored"], true, "{plan}");

    // Without it, status says what `git add -A` would do and how to stop it.
    std::fs::remove_file(dir.path().join(".heartwood/.gitignore")).expect("rm");
    let said = String::from_utf8_lossy(&heartwood(dir.path(), &["status"]).stdout).to_string();
    assert!(said.contains("would commit its journals"), "{said}");
}
