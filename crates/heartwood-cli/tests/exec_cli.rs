//! `heartwood exec` and `heartwood decide`, end to end: the real binary, in separate processes,
//! against the scripted model server over TCP, in a real project directory.

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::{
    code, finish, heartwood, heartwood_async, project_with, session_of, text, two_actions,
};

/// The `heartwood decide …` command `exec` printed, with the decision and any extra arguments.
fn printed_decide_command(out: &Output, decision: &str) -> Vec<String> {
    let stdout = text(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("heartwood decide") && l.trim_end().ends_with(" allow"))
        .unwrap_or_else(|| panic!("no decide command printed:\n{stdout}"));
    let command = &line[line.find("heartwood decide").expect("command")..];
    let mut words: Vec<String> = command
        .split_whitespace()
        .skip(1)
        .map(str::to_owned)
        .collect();
    words.pop();
    words.push(decision.to_owned());
    words
}

fn args(words: &[String]) -> Vec<&str> {
    words.iter().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_that_finishes_exits_zero_with_the_agents_answer() {
    let (project, server) =
        project_with(Script::of(vec![Turn::text("The file has one row.")])).await;
    let out = heartwood_async(project.path(), &["exec", "how many rows?"]).await;
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        text(&out.stdout).contains("agent: The file has one row."),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_set_stops_exec_and_a_later_process_decides_it_and_it_runs_once() {
    let (project, server) = project_with(Script::of(vec![two_actions(), finish("wrote it")])).await;
    let out = heartwood_async(project.path(), &["exec", "write ran.txt"]).await;
    assert_eq!(code(&out), 3, "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        text(&out.stdout).contains("echo one"),
        "the set is shown whole"
    );
    assert!(
        text(&out.stdout).contains("echo two"),
        "the set is shown whole"
    );
    assert!(
        !project.path().join("ran.txt").exists(),
        "ran before the decision"
    );

    // The process has exited; the set is durable and shown as pending.
    let session = session_of(&out);
    let shown = heartwood(project.path(), &["sessions", "show", &session]);
    assert!(
        text(&shown.stdout).contains("Waiting for your decision on 2 proposed actions"),
        "{}",
        text(&shown.stdout)
    );

    let decide = printed_decide_command(&out, "allow");
    let answered = heartwood_async(project.path(), &args(&decide)).await;
    assert_eq!(
        code(&answered),
        0,
        "{}{}",
        text(&answered.stdout),
        text(&answered.stderr)
    );
    assert!(text(&answered.stdout).contains("agent: wrote it"));
    let ran = std::fs::read_to_string(project.path().join("ran.txt")).expect("ran");
    assert_eq!(ran, "one\ntwo\n", "each action ran exactly once");

    // Answering again changes nothing: there is no pending set any more.
    let again = heartwood_async(project.path(), &args(&decide)).await;
    // A refusal exits with its kind's documented code: 6, the session does not take it now.
    assert_eq!(code(&again), 6);
    assert!(
        text(&again.stderr).contains("no action set waiting"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        ran
    );
    assert_eq!(server.requests().len(), 2);
    let verify = heartwood(project.path(), &["sessions", "verify", &session]);
    assert!(verify.status.success(), "{}", text(&verify.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejection_reaches_the_model_and_a_stale_revision_is_refused() {
    let (project, server) = project_with(Script::of(vec![
        two_actions(),
        Turn::text("Understood; nothing written."),
    ]))
    .await;
    let out = heartwood_async(project.path(), &["exec", "write ran.txt"]).await;
    assert_eq!(code(&out), 3);
    let mut stale = printed_decide_command(&out, "allow");
    let at = stale
        .iter()
        .position(|w| w == "--revision")
        .expect("revision")
        + 1;
    let revision: u64 = stale[at].parse().expect("number");
    stale[at] = (revision - 1).to_string();
    let refused = heartwood_async(project.path(), &args(&stale)).await;
    // A stale decision exits 5: look again and decide again.
    assert_eq!(code(&refused), 5);
    assert!(
        text(&refused.stderr).contains("stale"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!project.path().join("ran.txt").exists());

    let mut reject = printed_decide_command(&out, "reject");
    reject.extend(["--reason".to_owned(), "use the scratch folder".to_owned()]);
    let answered = heartwood_async(project.path(), &args(&reject)).await;
    assert_eq!(
        code(&answered),
        0,
        "{}{}",
        text(&answered.stdout),
        text(&answered.stderr)
    );
    assert!(
        !project.path().join("ran.txt").exists(),
        "a rejected action ran"
    );
    let told = server.requests()[1]["messages"].to_string();
    assert!(told.contains("use the scratch folder"), "{told}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_process_on_a_busy_session_reaches_it_through_its_owner() {
    let slow = Turn::text("slowly done").with_fault(Fault::ChunkDelayMs(400));
    let (project, _server) =
        project_with(Script::of(vec![slow, Turn::text("noted: me too")])).await;
    let first = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["exec", "--session", "shared", "take your time"])
        .current_dir(project.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for_writer(project.path()).await;
    let journal = project
        .path()
        .join(".heartwood/sessions/shared/events.jsonl");
    for _ in 0..500 {
        if std::fs::read_to_string(&journal).is_ok_and(|j| j.contains("task_submitted")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The first process serves the session; the second's text reaches it as guidance
    // (what typed text means while a task runs) instead of being refused.
    let second = heartwood_async(project.path(), &["exec", "--session", "shared", "me too"]).await;
    // Finished, or paused when the first process stopped serving after its own task ended
    // (the run the guidance continued then waits for the next instruction): never refused.
    assert!(
        matches!(code(&second), 0 | 4),
        "{}{}",
        text(&second.stdout),
        text(&second.stderr)
    );
    let first = first.wait_with_output().await.expect("first");
    assert_eq!(code(&first), 0, "{}", text(&first.stdout));
    let shown = heartwood(project.path(), &["sessions", "show", "shared", "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("json");
    let guidance: Vec<&str> = view["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "guidance_sent")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(guidance, ["me too"]);
}

async fn wait_for_writer(project: &Path) {
    let writer = project.join(".heartwood/sessions/shared/writer.json");
    for _ in 0..500 {
        if std::fs::read_to_string(&writer).is_ok_and(|t| t.contains("pid")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the first process never took the session");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_command_id_acts_once() {
    let (project, server) = project_with(Script::of(vec![Turn::text("hello")])).await;
    let run = [
        "exec",
        "--session",
        "s",
        "--command-id",
        "task-1",
        "say hello",
    ];
    let first = heartwood_async(project.path(), &run).await;
    assert_eq!(code(&first), 0, "{}", text(&first.stderr));
    let retry = heartwood_async(project.path(), &run).await;
    assert_eq!(code(&retry), 0, "{}", text(&retry.stderr));
    assert_eq!(server.requests().len(), 1, "the retry reached the model");
    let shown = heartwood(project.path(), &["sessions", "show", "s", "--json"]);
    let view: Value = serde_json::from_slice(&shown.stdout).expect("json");
    let tasks = view["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "task_submitted")
        .count();
    assert_eq!(tasks, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_pauses_and_exec_on_the_paused_session_continues_with_guidance() {
    let slow = |t: Turn| t.with_fault(Fault::ChunkDelayMs(300));
    let (project, server) = project_with(Script::of(vec![
        slow(Turn::calls(&[("think", json!({"thought": "first"}))])),
        Turn::calls(&[("think", json!({"thought": "second"}))]),
        finish("done with guidance"),
    ]))
    .await;
    let running = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["exec", "--session", "p", "think"])
        .current_dir(project.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = running.id().expect("pid").to_string();
    wait_for_request(&server).await;
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    let paused = running.wait_with_output().await.expect("paused");
    assert_eq!(
        code(&paused),
        4,
        "{}{}",
        text(&paused.stdout),
        text(&paused.stderr)
    );

    let resumed = heartwood_async(
        project.path(),
        &["exec", "--session", "p", "use the held-out split"],
    )
    .await;
    assert_eq!(
        code(&resumed),
        0,
        "{}{}",
        text(&resumed.stdout),
        text(&resumed.stderr)
    );
    let last = server.requests().last().expect("request").to_string();
    assert!(
        last.contains("use the held-out split"),
        "guidance never reached the model"
    );
}

async fn wait_for_request(server: &ScriptedModelServer) {
    for _ in 0..500 {
        if !server.requests().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the model was never called");
}

#[tokio::test(flavor = "multi_thread")]
async fn decide_last_acts_on_the_one_pending_set_and_ids_take_prefixes() {
    let (project, _server) =
        project_with(Script::of(vec![two_actions(), Turn::text("wrote it")])).await;
    let waiting = heartwood_async(
        project.path(),
        &["exec", "--session", "s-alpha-1", "write ran.txt"],
    )
    .await;
    assert_eq!(code(&waiting), 3, "{}", text(&waiting.stdout));
    // `--last` and no --set/--revision: the set pending now, named before it is decided.
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(
        code(&decided),
        0,
        "{}{}",
        text(&decided.stdout),
        text(&decided.stderr)
    );
    assert!(
        text(&decided.stderr).contains("deciding set set-"),
        "{}",
        text(&decided.stderr)
    );
    assert!(project.path().join("ran.txt").exists());
    // Nothing pending now: refused, saying so.
    let nothing = heartwood_async(project.path(), &["decide", "s-alpha", "allow"]).await;
    assert_eq!(code(&nothing), 6);
    assert!(
        text(&nothing.stderr).contains("no action set waiting"),
        "{}",
        text(&nothing.stderr)
    );

    // A unique prefix names the session; an ambiguous one lists the candidates.
    let shown = heartwood(project.path(), &["sessions", "show", "s-alpha"]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let other = heartwood_async(project.path(), &["exec", "--session", "s-alpine", "hello"]).await;
    assert_ne!(code(&other), 2);
    let ambiguous = heartwood(project.path(), &["sessions", "show", "s-alp"]);
    assert!(!ambiguous.status.success());
    let said = text(&ambiguous.stderr);
    assert!(
        said.contains("s-alpha-1") && said.contains("s-alpine"),
        "{said}"
    );

    // From a folder inside the project, the project is found above it, as git finds its
    // work tree, and said so.
    let inside = project.path().join("data/raw");
    std::fs::create_dir_all(&inside).expect("mkdir");
    let status = text(&heartwood(&inside, &["status"]).stdout);
    assert!(
        status.contains("found above the current folder"),
        "{status}"
    );
    assert!(!status.contains("no model is connected"), "{status}");
    let listed = text(&heartwood(&inside, &["sessions", "ls"]).stdout);
    assert!(listed.contains("s-alpha-1"), "{listed}");

    // A reader that goes away early ends the output quietly.
    let mut piped = std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["sessions", "show", "s-alpha-1"])
        .current_dir(project.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(piped.stdout.take());
    let out = piped.wait_with_output().expect("wait");
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
}

/// `exec --json` lines as JSON values.
fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_json_stream_carries_arguments_once_the_pending_set_and_a_closing_summary() {
    let (project, _server) = support::project_with(heartwood_testkit::Script::of(vec![
        support::two_actions(),
        support::finish("wrote ran.txt"),
    ]))
    .await;
    let root = project.path();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.org",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "base",
        ][..],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .status();
        assert!(ok.is_ok_and(|s| s.success()), "git {args:?}");
    }
    let asked = support::heartwood_async(root, &["exec", "--json", "write ran.txt"]).await;
    assert_eq!(support::code(&asked), 3, "{}", text(&asked.stderr));
    let lines = json_lines(&asked);
    assert!(
        lines.iter().all(|l| l["session"].is_string()),
        "every line names its session"
    );
    let proposed = lines
        .iter()
        .find(|l| l["type"] == "action_proposed")
        .expect("a proposal");
    assert_eq!(
        proposed["action"]["arguments"]["command"], "echo one >> ran.txt",
        "arguments are JSON, not JSON text: {proposed}"
    );
    let pending = lines
        .iter()
        .find(|l| l["type"] == "pending_set")
        .expect("the pending set");
    assert_eq!(
        pending["set"]["members"].as_array().map(Vec::len),
        Some(2),
        "{pending}"
    );
    assert!(
        pending["review"]["members"][0]["preview"].is_object(),
        "{pending}"
    );
    let allow = pending["decide"]["allow"].as_str().expect("allow");
    let summary = lines.last().expect("a last line");
    assert_eq!(summary["type"], "summary", "{summary}");
    assert_eq!(summary["outcome"], "waiting_for_decision");
    assert_eq!(summary["exit_code"], 3);

    // The decide command as the stream gave it, with --json: the run ends with its summary.
    let mut words: Vec<&str> = allow.split_whitespace().skip(1).collect();
    words.push("--json");
    let decided = support::heartwood_async(root, &words).await;
    assert_eq!(support::code(&decided), 0, "{}", text(&decided.stderr));
    let summary = json_lines(&decided).pop().expect("summary");
    assert_eq!(summary["type"], "summary", "{summary}");
    assert_eq!(summary["outcome"], "finished", "{summary}");
    // The session's changes are what its record says it wrote: its commands' writes are not
    // attributed (workspace_cli shows its file edits are).
    assert_eq!(summary["files_changed"], serde_json::json!([]), "{summary}");
    assert!(summary["usage"].is_object(), "{summary}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_heredoc_reads_as_the_script_it_is() {
    let script = "cat > fit.py <<'EOF'\nimport csv\nprint(1)\nEOF\npython3 fit.py";
    let (project, _server) = support::project_with(heartwood_testkit::Script::of(vec![
        heartwood_testkit::Turn::calls(&[("terminal", serde_json::json!({"command": script}))]),
    ]))
    .await;
    let asked = support::heartwood_async(project.path(), &["exec", "write fit.py"]).await;
    assert_eq!(support::code(&asked), 3, "{}", text(&asked.stderr));
    let shown = text(&asked.stdout);
    assert!(shown.contains("$ cat > fit.py <<'EOF'"), "{shown}");
    assert!(shown.contains("$ python3 fit.py"), "{shown}");
    for body in ["import csv", "print(1)", "EOF"] {
        assert!(shown.contains(&format!("  {body}")), "{shown}");
        assert!(
            !shown.contains(&format!("$ {body}")),
            "{body} shown as a command: {shown}"
        );
    }
}
