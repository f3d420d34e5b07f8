//! `heartwood replay`: a recorded session re-run with its recorded model replies in a copy of the
//! starting files reproduces the same tool results; a planted change is reported at the model
//! call where the run left the recording, and by the comparison.

mod support;

use std::path::Path;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;
use support::{connect_scripted, heartwood, heartwood_async, text};

fn starting_files(dir: &Path, rows: &str) {
    std::fs::create_dir_all(dir.join("data")).expect("mkdir");
    std::fs::write(dir.join("data/cohort.csv"), rows).expect("write");
}

const ROWS: &str = "id,site,y\n1,a,2\n2,b,3\n3,c,5\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_reproduces_the_results_and_a_planted_change_is_found() {
    let root = tempfile::tempdir().expect("tempdir");
    let original = root.path().join("original");
    starting_files(&original, ROWS);
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "wc -l data/cohort.csv"}))]),
        Turn::calls(&[("terminal", json!({"command": "head -2 data/cohort.csv"}))]),
        Turn::calls(&[("finish", json!({"message": "3 sites"}))]),
    ]))
    .await
    .expect("server");
    connect_scripted(&original, &server.base_url());
    let run = heartwood_async(
        &original,
        &[
            "exec",
            "--session",
            "r",
            "--policy",
            "low-risk",
            "count the sites",
        ],
    )
    .await;
    assert!(
        run.status.success(),
        "{}{}",
        text(&run.stdout),
        text(&run.stderr)
    );
    drop(server);

    let no_copy = heartwood(&original, &["replay", "r"]);
    assert!(!no_copy.status.success());
    assert!(
        text(&no_copy.stderr).contains("recorded no commit"),
        "{}",
        text(&no_copy.stderr)
    );

    let same = root.path().join("same");
    starting_files(&same, ROWS);
    let into = same.to_str().expect("utf-8");
    let replay = heartwood_async(&original, &["replay", "r", "--into", into]).await;
    assert!(
        replay.status.success(),
        "{}{}",
        text(&replay.stdout),
        text(&replay.stderr)
    );
    // `last` names the recorded session as its id does.
    let compare = heartwood(&original, &["replay", "last", "--into", into, "--compare"]);
    let report = text(&compare.stdout);
    assert!(
        compare.status.success(),
        "{report}{}",
        text(&compare.stderr)
    );
    assert!(report.contains("3 of 3 tool results match"), "{report}");

    let changed = root.path().join("changed");
    starting_files(&changed, "id,site,y\n1,a,2\n2,b,3\n");
    let into = changed.to_str().expect("utf-8");
    let diverged = heartwood_async(&original, &["replay", "r", "--into", into]).await;
    assert_eq!(diverged.status.code(), Some(1));
    let out = text(&diverged.stdout);
    assert!(
        out.contains("diverged from the recording at model call 2"),
        "{out}"
    );
    let compare = heartwood(&original, &["replay", "r", "--into", into, "--compare"]);
    let report = text(&compare.stdout);
    assert!(!compare.status.success());
    assert!(
        report.contains("differs  run `wc -l data/cohort.csv`"),
        "{report}"
    );
    assert!(report.contains("missing"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn in_a_git_project_the_replay_makes_its_own_copy_of_the_starting_files() {
    let root = tempfile::tempdir().expect("tempdir");
    let original = root.path().join("study");
    starting_files(&original, ROWS);
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .current_dir(&original)
            .status()
            .expect("git")
            .success();
        assert!(ok);
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(original.join(".gitignore"), ".heartwood/\n").expect("write");
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "data"]);
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "wc -l data/cohort.csv"}))]),
        Turn::calls(&[("finish", json!({"message": "3 rows"}))]),
    ]))
    .await
    .expect("server");
    connect_scripted(&original, &server.base_url());
    // The route lives in .heartwood/, which the repository ignores: the tree is still clean.
    let run = heartwood_async(
        &original,
        &["exec", "--session", "g", "--policy", "low-risk", "count"],
    )
    .await;
    assert!(
        run.status.success(),
        "{}{}",
        text(&run.stdout),
        text(&run.stderr)
    );
    // Work after the task does not change what the replay starts from.
    std::fs::write(original.join("data/cohort.csv"), "id,site,y\n").expect("write");
    drop(server);

    let replay = heartwood_async(&original, &["replay", "g"]).await;
    assert!(
        replay.status.success(),
        "{}{}",
        text(&replay.stdout),
        text(&replay.stderr)
    );
    let copy = root.path().join("study-replay-g");
    assert_eq!(
        std::fs::read_to_string(copy.join("data/cohort.csv")).expect("copy"),
        ROWS
    );
    let compare = heartwood(&original, &["replay", "g", "--compare"]);
    assert!(compare.status.success(), "{}", text(&compare.stdout));
    assert!(
        text(&compare.stdout).contains("2 of 2 tool results match"),
        "{}",
        text(&compare.stdout)
    );
    let again = heartwood_async(&original, &["replay", "g"]).await;
    assert!(
        text(&again.stderr).contains("already exists"),
        "{}",
        text(&again.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_task_of_a_session_is_replayed_in_turn() {
    let root = tempfile::tempdir().expect("tempdir");
    let original = root.path().join("original");
    starting_files(&original, ROWS);
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "wc -l data/cohort.csv"}))]),
        Turn::calls(&[("finish", json!({"message": "4 lines"}))]),
        Turn::calls(&[("terminal", json!({"command": "head -2 data/cohort.csv"}))]),
        Turn::calls(&[("finish", json!({"message": "a header and a row"}))]),
    ]))
    .await
    .expect("server");
    connect_scripted(&original, &server.base_url());
    for task in ["count the lines", "show the first two"] {
        let run = heartwood_async(
            &original,
            &["exec", "--session", "two", "--policy", "low-risk", task],
        )
        .await;
        assert!(run.status.success(), "{}", text(&run.stderr));
    }
    drop(server);

    let copy = root.path().join("copy");
    starting_files(&copy, ROWS);
    let into = copy.to_str().expect("utf-8");
    let replay = heartwood_async(&original, &["replay", "two", "--into", into]).await;
    let said = text(&replay.stdout);
    assert!(replay.status.success(), "{said}{}", text(&replay.stderr));
    assert!(said.contains("task 2 of 2: show the first two"), "{said}");
    let compare = heartwood(&original, &["replay", "two", "--into", into, "--compare"]);
    let report = text(&compare.stdout);
    assert!(compare.status.success(), "{report}");
    assert!(
        report.contains("4 of 4 tool results match"),
        "both tasks' calls: {report}"
    );
    let again = heartwood_async(&original, &["replay", "two", "--into", into]).await;
    assert!(
        text(&again.stderr).contains("every one of its 2 tasks replayed"),
        "{}",
        text(&again.stderr)
    );
}

/// A session run on OpenHands is replayed on OpenHands: its requests went through Heartwood's
/// relay, which recorded them (the project's folder, which OpenHands writes into its prompt,
/// replaced by a placeholder), so the replay in a copy elsewhere is served from the recording
/// with no model running, and every tool result matches. Each set waits for a decision there
/// too (OpenHands runs nothing unconfirmed), answered from another process each time.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_run_on_openhands_is_replayed_on_openhands() {
    let root = tempfile::tempdir().expect("tempdir");
    let original = root.path().join("original");
    starting_files(&original, ROWS);
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "wc -l data/cohort.csv"}))]),
        Turn::calls(&[("finish", json!({"message": "3 rows"}))]),
    ]))
    .await
    .expect("server");
    connect_scripted(&original, &server.base_url());
    if !support::use_openhands(&original) {
        return;
    }
    // `first` run in `dir` stops for a decision, which is answered in `decide_in`.
    let decided_to_the_end = async |dir: &Path, first: &[&str], decide_in: &Path| {
        let ran = heartwood_async(dir, first).await;
        assert_eq!(
            ran.status.code(),
            Some(3),
            "{}{}\n{}",
            text(&ran.stdout),
            text(&ran.stderr),
            support::agent_server_log_tail(dir)
        );
        let allowed = heartwood_async(decide_in, &["decide", "--last", "allow"]).await;
        assert!(
            allowed.status.success(),
            "{}{}\n{}",
            text(&allowed.stdout),
            text(&allowed.stderr),
            support::agent_server_log_tail(decide_in)
        );
    };
    decided_to_the_end(
        &original,
        &["exec", "--session", "o", "count the rows"],
        &original,
    )
    .await;
    drop(server);

    let same = root.path().join("same");
    starting_files(&same, ROWS);
    let into = same.to_str().expect("utf-8");
    decided_to_the_end(&original, &["replay", "o", "--into", into], &same).await;
    let compare = heartwood(&original, &["replay", "o", "--into", into, "--compare"]);
    let report = text(&compare.stdout);
    assert!(
        compare.status.success(),
        "{report}{}",
        text(&compare.stderr)
    );
    assert!(report.contains("2 of 2 tool results match"), "{report}");
}
