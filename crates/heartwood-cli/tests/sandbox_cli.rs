//! The action boundary, end to end with the real binary: under the low-risk policy, commands
//! the risk rules call read-only run without a decision, but confined read-only by the kernel,
//! so a writer in disguise writes nothing and a reader of secrets reads nothing (the sign-in
//! token and the Heartwood process's environment never reach the journal); an ordinary command
//! still runs. A set that waits shows each command's confinement, and asking to leave the
//! sandbox is high risk and shown as such.

mod support;

use std::path::Path;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::{code, connect_scripted, finish, heartwood, text};

const SIGNIN: &str = "SIGNIN-SECRET-TOKEN-0451";
const ENV_SECRET: &str = "SECRET-ENV-VALUE-9917";

/// Whether this machine confines commands (the plan says); skips loudly where it does not,
/// and fails where CI requires it.
fn sandboxed(project: &Path) -> bool {
    let plan = heartwood(project, &["status", "--json"]);
    let plan: Value = serde_json::from_slice(&plan.stdout).expect("plan");
    let enforcing = plan["sandbox"]["enforcing"] == true;
    if !enforcing {
        assert!(
            std::env::var_os("HEARTWOOD_REQUIRE_SANDBOX").is_none(),
            "the sandbox is required here: {}",
            plan["sandbox"]["detail"]
        );
        eprintln!("SKIPPED: {}", plan["sandbox"]["detail"]);
    }
    enforcing
}

fn git(project: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(project)
        .output()
        .expect("git");
    assert!(out.status.success(), "{out:?}");
}

/// Every session journal of the project, one after another.
fn journals(project: &Path) -> String {
    std::fs::read_dir(project.join(".heartwood/sessions"))
        .expect("sessions")
        .flatten()
        .map(|s| std::fs::read_to_string(s.path().join("events.jsonl")).unwrap_or_default())
        .collect()
}

fn calls(commands: &[Value]) -> Turn {
    let calls: Vec<(&str, Value)> = commands.iter().map(|c| ("terminal", c.clone())).collect();
    Turn::calls(&calls)
}

#[tokio::test(flavor = "multi_thread")]
async fn low_risk_automation_runs_disguised_writers_and_secret_readers_harmlessly() {
    let project = tempfile::tempdir().expect("project");
    let p = project.path();
    if !sandboxed(p) {
        return;
    }
    std::fs::write(p.join("input"), "b\na\na\n").expect("input");
    git(p, &["init", "-q"]);
    git(p, &["add", "input"]);
    git(p, &["commit", "-q", "-m", "first"]);
    let config = tempfile::tempdir().expect("config");
    let token = config.path().join("chatgpt.json");
    std::fs::write(&token, format!("{{\"access_token\": \"{SIGNIN}\"}}")).expect("token");
    let server = ScriptedModelServer::start(Script::of(vec![
        calls(&[
            json!({"command": "sort -o victim input"}),
            json!({"command": "uniq input copy"}),
            json!({"command": "sort --output=log input"}),
            json!({"command": format!("cat {}", token.display())}),
            json!({"command": "cat /proc/1/environ /proc/2/environ /proc/3/environ"}),
            json!({"command": "echo probe-ran"}),
        ]),
        finish("probed"),
    ]))
    .await
    .expect("server");
    connect_scripted(p, &server.base_url());
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["exec", "--policy", "low-risk", "probe the machine"])
        .current_dir(p)
        .env("HEARTWOOD_CONFIG_HOME", config.path())
        .env("SECRET_TOKEN", ENV_SECRET)
        .output()
        .await
        .expect("heartwood");
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    for written in ["victim", "copy", "log"] {
        assert!(
            !p.join(written).exists(),
            "{written} was written without a decision"
        );
    }
    let shown = heartwood(p, &["sessions", "show", "last", "--json"]);
    let record = text(&shown.stdout);
    let journal = journals(p);
    for secret in [SIGNIN, ENV_SECRET] {
        assert!(
            !record.contains(secret) && !journal.contains(secret),
            "{secret} leaked"
        );
    }
    assert!(
        journal.contains("probe-ran"),
        "the ordinary command ran: {journal}"
    );
    assert_eq!(
        journal.matches("\"sandbox\":\"read_only\"").count(),
        6,
        "every command is recorded as run read-only: {journal}"
    );
    assert!(
        journal.contains("allowed by the action policy (commands run in the read-only sandbox)")
            && !journal.contains("decision_recorded"),
        "they ran without a decision: {journal}"
    );
    assert_eq!(server.remaining_turns(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_set_shows_each_commands_confinement_and_leaving_the_sandbox_is_high_risk() {
    let project = tempfile::tempdir().expect("project");
    let p = project.path();
    if !sandboxed(p) {
        return;
    }
    let server = ScriptedModelServer::start(Script::of(vec![calls(&[
        json!({"command": "python3 analysis.py"}),
        json!({"command": "pip install --user pandas", "sandbox": "unsandboxed"}),
    ])]))
    .await
    .expect("server");
    connect_scripted(p, &server.base_url());
    let out = heartwood(p, &["exec", "run the analysis"]);
    assert_eq!(code(&out), 3, "{}{}", text(&out.stdout), text(&out.stderr));
    let shown = heartwood(p, &["sessions", "show", "last", "--json"]);
    let view: Value = serde_json::from_slice(&shown.stdout).expect("json");
    let members = view["projection"]["pending"]["members"]
        .as_array()
        .expect("a set waits");
    let levels: Vec<(&str, &str)> = members
        .iter()
        .map(|m| {
            (
                m["sandbox"].as_str().unwrap_or("none"),
                m["risk"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        levels,
        [("project_write", "unknown"), ("unsandboxed", "high")],
        "{members:#?}"
    );
    let printed = text(&out.stdout);
    assert!(
        printed.contains("UNSANDBOXED") && printed.contains("writes only inside the project"),
        "the review shows where each command runs: {printed}"
    );
}

/// The review names the hosts a confined command may reach (the project's `network` list)
/// beside each command, in the line every interface shows; a project that names none says so,
/// and an unsandboxed command lists none (its label says it has the whole network).
#[tokio::test(flavor = "multi_thread")]
async fn the_review_names_the_hosts_each_confined_command_may_reach() {
    for (network, said) in [
        (
            Some(r#"network = ["pypi.org", "files.pythonhosted.org"]"#),
            "named hosts: files.pythonhosted.org, pypi.org (through Heartwood's proxy)",
        ),
        (None, "named hosts: none"),
    ] {
        let project = tempfile::tempdir().expect("project");
        let p = project.path();
        if !sandboxed(p) {
            return;
        }
        let server = ScriptedModelServer::start(Script::of(vec![calls(&[
            json!({"command": "pip download pandas"}),
            json!({"command": "pip install --user pandas", "sandbox": "unsandboxed"}),
        ])]))
        .await
        .expect("server");
        connect_scripted(p, &server.base_url());
        if let Some(network) = network {
            let config = p.join(".heartwood/config.toml");
            let text = std::fs::read_to_string(&config).expect("config");
            std::fs::write(&config, format!("{network}\n{text}")).expect("write config");
        }
        let out = heartwood(p, &["exec", "fetch pandas"]);
        assert_eq!(code(&out), 3, "{}{}", text(&out.stdout), text(&out.stderr));
        let printed = text(&out.stdout);
        assert!(printed.contains(said), "{said:?} missing from: {printed}");
        // The unsandboxed command's line names none.
        let unsandboxed = printed
            .lines()
            .find(|l| l.contains("UNSANDBOXED"))
            .expect("the unsandboxed command's line");
        assert!(!unsandboxed.contains("named hosts"), "{printed}");
        assert_eq!(printed.matches("named hosts:").count(), 1, "{printed}");
    }
}

/// A harmless first word followed by a newline, `;`, `&&`, a substitution or a process
/// substitution is not a plain pipeline of readers: under the low-risk policy the set waits
/// for a person, and the program after the first word has not run.
#[tokio::test(flavor = "multi_thread")]
async fn a_chained_command_after_a_reader_waits_for_a_person() {
    let project = tempfile::tempdir().expect("project");
    let p = project.path();
    if !sandboxed(p) {
        return;
    }
    std::fs::write(p.join("input"), "a\n").expect("input");
    for chained in [
        "ls\ntouch ran-newline",
        "ls; touch ran-semicolon",
        "cat input && touch ran-and",
        "echo $(touch ran-substitution)",
        "cat <(touch ran-process)",
        "ls `touch ran-backtick`",
    ] {
        let server =
            ScriptedModelServer::start(Script::of(vec![calls(&[json!({ "command": chained })])]))
                .await
                .expect("server");
        connect_scripted(p, &server.base_url());
        let out = heartwood(p, &["exec", "--policy", "low-risk", "look around"]);
        assert_eq!(
            code(&out),
            3,
            "{chained:?} must wait: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        let ran: Vec<_> = std::fs::read_dir(p)
            .expect("list")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("ran-"))
            .collect();
        assert!(
            ran.is_empty(),
            "{chained:?} ran without a decision: {ran:?}"
        );
    }
}

/// A credential inside an allowed variable's value (URL user-info in a package index or a
/// proxy) never reaches a command, so never the model or the journal; the variable itself
/// does, without it.
#[tokio::test(flavor = "multi_thread")]
async fn credentials_inside_allowed_values_do_not_reach_commands() {
    let project = tempfile::tempdir().expect("project");
    let p = project.path();
    if !sandboxed(p) {
        return;
    }
    let server = ScriptedModelServer::start(Script::of(vec![
        calls(&[json!({"command": "cat /proc/self/environ"})]),
        finish("looked"),
    ]))
    .await
    .expect("server");
    connect_scripted(p, &server.base_url());
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["exec", "--policy", "low-risk", "show the environment"])
        .current_dir(p)
        .env(
            "PIP_INDEX_URL",
            "https://reader:PIP-TOKEN-4471@pypi.example.org/simple",
        )
        .env(
            "https_proxy",
            "http://alice:PROXY-PASSWORD-0933@proxy.example.org:3128",
        )
        .output()
        .await
        .expect("heartwood");
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    let journal = journals(p);
    // The package index reaches the command without its token; the host's proxy is of no use
    // inside the sandbox's network and is not given at all.
    assert!(
        journal.contains("pypi.example.org/simple"),
        "the variable itself reaches the command: {journal}"
    );
    for secret in ["PIP-TOKEN-4471", "PROXY-PASSWORD-0933"] {
        assert!(!journal.contains(secret), "{secret} reached the journal");
    }
}

/// A project's own environment on `PATH` (an activated virtual environment) puts its programs
/// before the system's: a "reader" that runs without a decision is the system's, never a
/// `cat` the project planted.
#[tokio::test(flavor = "multi_thread")]
async fn a_reader_is_the_systems_never_one_the_project_put_on_path() {
    let project = tempfile::tempdir().expect("project");
    let p = project.path();
    if !sandboxed(p) {
        return;
    }
    std::fs::write(p.join("data.txt"), "REAL-CONTENT\n").expect("data");
    let bin = p.join(".venv/bin");
    std::fs::create_dir_all(&bin).expect("venv");
    std::fs::write(bin.join("cat"), "#!/bin/sh\necho PLANTED-CAT-RAN\n").expect("cat");
    std::fs::set_permissions(
        bin.join("cat"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let server = ScriptedModelServer::start(Script::of(vec![
        calls(&[json!({"command": "cat data.txt"})]),
        finish("read"),
    ]))
    .await
    .expect("server");
    connect_scripted(p, &server.base_url());
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["exec", "--policy", "low-risk", "read the data"])
        .current_dir(p)
        .env("PATH", path)
        .output()
        .await
        .expect("heartwood");
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    let journal = journals(p);
    assert!(
        journal.contains("REAL-CONTENT"),
        "the reader ran: {journal}"
    );
    assert!(
        !journal.contains("PLANTED-CAT-RAN"),
        "the project's cat ran"
    );
}
