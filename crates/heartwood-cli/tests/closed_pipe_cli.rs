//! A reader that goes away (`heartwood decide last allow | head -1`) never stops work: the
//! command stops printing, finishes the action and the run, and leaves the session settled; no
//! command panics on a closed pipe.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use heartwood_testkit::{Script, Turn};
use serde_json::{Value, json};
use support::{code, heartwood, heartwood_async, project_with, text};

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_whose_output_is_cut_off_still_runs_its_actions_and_settles() {
    let slow_pair = Turn::calls(&[
        (
            "terminal",
            json!({"command": "sleep 1; echo one >> ran.txt"}),
        ),
        ("terminal", json!({"command": "echo two >> ran.txt"})),
    ]);
    let (project, _server) = project_with(Script::of(vec![
        slow_pair,
        Turn::text("both lines are written"),
    ]))
    .await;
    let asked = heartwood_async(project.path(), &["exec", "write ran.txt"]).await;
    assert_eq!(code(&asked), 3, "{}", text(&asked.stderr));

    let root = project.path().to_path_buf();
    let (status, stderr) = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_heartwood"))
            .args(["decide", "last", "allow"])
            .current_dir(&root)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("decide");
        // `| head -1`: one line, then the reader is gone.
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("a first line");
        let out = child.wait_with_output().expect("decide ends");
        (out.status, text(&out.stderr))
    })
    .await
    .expect("reader");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n",
        "both actions ran, once"
    );
    let listed = heartwood(project.path(), &["sessions", "ls", "--json"]);
    let rows: Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(rows[0]["state"], "finished", "{rows}");
}

#[test]
fn no_command_panics_when_its_reader_goes_away() {
    let project = tempfile::tempdir().expect("project");
    // Both scripts are larger than a pipe holds, so the writer meets the closed pipe.
    for args in [["completions", "bash"], ["completions", "zsh"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_heartwood"))
            .args(args)
            .current_dir(project.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("a first line");
        let out = child.wait_with_output().expect("ends");
        let said = text(&out.stderr);
        assert!(!said.contains("panicked"), "{args:?}: {said}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {said}");
    }
}
