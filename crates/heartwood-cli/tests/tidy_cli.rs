//! Failures that leave things tidy, run as a user would meet them: the real binary against the
//! scripted model server. A refused run leaves no session behind; a model error is part of the
//! conversation and its history; retrying a failed run records the reply.

mod support;

use heartwood_testkit::{Fault, Script, Turn};
use serde_json::Value;
use support::{code, heartwood, heartwood_async, project_with, session_of, text};

fn sessions_dir_entries(project: &std::path::Path) -> usize {
    std::fs::read_dir(project.join(".heartwood/sessions"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The exit codes of a refusal's class (the README's table): the agent cannot be served, and
/// what the command says cannot be used.
const AGENT_UNAVAILABLE: i32 = 8;
const INVALID_INPUT: i32 = 9;

#[tokio::test(flavor = "multi_thread")]
async fn refused_runs_create_no_session() {
    // No model connected.
    let fresh = tempfile::tempdir().expect("project");
    let out = heartwood_async(fresh.path(), &["exec", "count the rows"]).await;
    assert_eq!(code(&out), AGENT_UNAVAILABLE, "{}", text(&out.stderr));
    assert_eq!(sessions_dir_entries(fresh.path()), 0);

    // A connected model, but an empty task.
    let (project, server) = project_with(Script::of(vec![Turn::text("unused")])).await;
    let out = heartwood_async(project.path(), &["exec", "   "]).await;
    assert_eq!(code(&out), INVALID_INPUT, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("empty"), "{}", text(&out.stderr));
    assert_eq!(sessions_dir_entries(project.path()), 0);

    // A model route whose key is missing from the environment.
    let keyed = tempfile::tempdir().expect("project");
    let connected = support::connect(
        keyed.path(),
        &server.base_url(),
        Some("HW_TIDY_NO_SUCH_KEY"),
    );
    assert!(connected.status.success(), "{}", text(&connected.stderr));
    let out = heartwood_async(keyed.path(), &["exec", "count the rows"]).await;
    assert_eq!(code(&out), AGENT_UNAVAILABLE, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("HW_TIDY_NO_SUCH_KEY"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(sessions_dir_entries(keyed.path()), 0);

    // A model that cannot be reached.
    let unreachable = tempfile::tempdir().expect("project");
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let connected =
        support::connect_anyway(unreachable.path(), &format!("http://127.0.0.1:{port}/v1"));
    assert_eq!(code(&connected), 3, "{}", text(&connected.stderr));
    let out = heartwood_async(unreachable.path(), &["exec", "count the rows"]).await;
    assert_eq!(code(&out), AGENT_UNAVAILABLE, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("reach"), "{}", text(&out.stderr));
    assert_eq!(sessions_dir_entries(unreachable.path()), 0);
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_error_is_in_the_conversation_and_a_retry_records_the_reply() {
    let (project, server) = project_with(Script::of(vec![
        Turn::fault(Fault::Status {
            status: 400,
            body: None,
            retry_after_secs: None,
        }),
        Turn::text("Forty-two rows."),
    ]))
    .await;
    let out = heartwood_async(project.path(), &["exec", "count the rows"]).await;
    assert_eq!(code(&out), 1, "{}{}", text(&out.stdout), text(&out.stderr));
    let session = session_of(&out);

    let projection = |project: &std::path::Path| -> Value {
        let out = heartwood(project, &["sessions", "show", &session, "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let shown: Value = serde_json::from_slice(&out.stdout).expect("json");
        shown["projection"].clone()
    };
    let failed = projection(project.path());
    let said: Vec<(String, String)> = failed["conversation"]
        .as_array()
        .expect("conversation")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        said.iter()
            .any(|(role, text)| role == "system" && text.contains("400")),
        "the model's error is in the conversation: {said:?}"
    );

    let out = heartwood_async(
        project.path(),
        &["exec", "--session", &session, "try again"],
    )
    .await;
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Forty-two rows."),
        "{}",
        text(&out.stdout)
    );
    // The reply is in the record as soon as the retry ends, not only when a later process
    // reconciles the session.
    let after = projection(project.path());
    let texts: Vec<&str> = after["conversation"]
        .as_array()
        .expect("conversation")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert!(texts.contains(&"Forty-two rows."), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("400")),
        "the error stays in the history: {texts:?}"
    );
    // The failed turn is not replayed to the model (the heddle document: "A failed turn is
    // recorded too, with its error, but contributes nothing to the history a later run
    // sees"): the retry's request holds the new message, not the failed task or its error.
    let requests = server.requests();
    let last = requests.last().expect("a request").to_string();
    assert!(
        !last.contains("count the rows") && last.contains("try again"),
        "{last}"
    );
    assert!(
        !last.contains("400"),
        "the error is not sent to the model: {last}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn json_lines_name_their_session_and_last_continues_the_latest() {
    let (project, server) = project_with(Script::of(vec![
        support::two_actions(),
        support::finish("wrote it"),
    ]))
    .await;
    let out = heartwood_async(project.path(), &["exec", "--json", "write ran.txt"]).await;
    assert_eq!(code(&out), 3, "{}{}", text(&out.stdout), text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let session = lines[0]["session"]
        .as_str()
        .expect("first line names the session")
        .to_owned();
    assert!(lines.len() > 3, "{lines:?}");
    assert!(
        lines.iter().all(|l| l["session"] == session.as_str()),
        "{lines:?}"
    );

    // `--last` reaches the same session: the text is guidance while it waits for a decision.
    let out = heartwood_async(
        project.path(),
        &["exec", "--last", "--json", "only one line, please"],
    )
    .await;
    assert_eq!(code(&out), 3, "{}{}", text(&out.stdout), text(&out.stderr));
    let first: Value =
        serde_json::from_str(text(&out.stdout).lines().next().expect("a line")).expect("json");
    assert_eq!(first["session"], session.as_str());
    assert!(
        text(&out.stdout).contains("guidance_sent"),
        "{}",
        text(&out.stdout)
    );

    let out = heartwood_async(project.path(), &["decide", "last", "allow"]).await;
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(server.remaining_turns(), 0);

    // The transcript holds the task, the set with its commands, the decision and the results.
    let out = heartwood(
        project.path(),
        &["sessions", "export", "last", "--format", "markdown"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let md = text(&out.stdout);
    for expected in [
        "# write ran.txt",
        "> write ran.txt",
        "> only one line, please",
        "echo one >> ran.txt",
        "**Decision** on set",
        "allow once",
        "Action #4: **completed**, exit 0",
        "wrote it",
    ] {
        assert!(md.contains(expected), "{expected:?} missing from:\n{md}");
    }
    // Written to a file, never over an existing one.
    let path = project.path().join("transcript.md");
    let out = heartwood(
        project.path(),
        &[
            "sessions",
            "export",
            "last",
            "--format",
            "markdown",
            "--out",
            "transcript.md",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&path).expect("written"), md);
    let again = heartwood(
        project.path(),
        &[
            "sessions",
            "export",
            "last",
            "--format",
            "markdown",
            "--out",
            "transcript.md",
        ],
    );
    assert!(!again.status.success());
    // A bundle copied where asked verifies with the bundle's own checkpoint.
    let out = heartwood(
        project.path(),
        &["sessions", "export", "last", "--out", "bundle"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(project.path().join("bundle/events.jsonl").is_file());
}

#[test]
fn version_and_completions_work_anywhere() {
    let dir = tempfile::tempdir().expect("dir");
    let out = heartwood(dir.path(), &["--version"]);
    assert!(out.status.success());
    assert!(
        text(&out.stdout).starts_with("heartwood "),
        "{}",
        text(&out.stdout)
    );
    for shell in ["bash", "zsh", "fish"] {
        let out = heartwood(dir.path(), &["completions", shell]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("sessions"), "{shell}");
    }
    // Completion names every subcommand, and printing it created nothing.
    assert!(!dir.path().join(".heartwood").exists());
}
