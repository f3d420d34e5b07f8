//! The terminal interface at 80×24 (the size a laptop's default terminal opens at), the real
//! binary in tmux against the scripted model server: what a researcher needs to read is on
//! screen and whole (session ids, the sandbox note, key hints, usage), a refusal to allow goes
//! once the reader scrolls on, and `r` followed by text is a rejection with that reason.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::tmux::Tmux;
use support::{connect_scripted, heartwood};

fn two_commands() -> Turn {
    Turn::calls(&[
        ("terminal", json!({ "command": "echo one >> ran.txt" })),
        ("terminal", json!({ "command": "echo two >> ran.txt" })),
    ])
}

/// Three 8-line scripts: at 80×24 the later ones start below the screen.
fn long_set() -> Turn {
    let script = |n: u32| {
        let mut lines: Vec<String> = (0..7).map(|i| format!("echo step {n}.{i}")).collect();
        lines.push(format!("echo {n} >> ran.txt"));
        lines.join("\n")
    };
    Turn::calls(&[
        ("terminal", json!({ "command": script(1) })),
        ("terminal", json!({ "command": script(2) })),
        ("terminal", json!({ "command": script(3) })),
    ])
}

/// The screen's text with box borders taken out and runs of blanks made one: a note wrapped
/// inside a panel reads as one sentence, a cut one does not.
fn prose(screen: &str) -> String {
    let unboxed: String = screen
        .chars()
        .map(|c| {
            if "│┌┐└┘─".contains(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    unboxed.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn session_json(project: &Path) -> Value {
    let listed = heartwood(project, &["sessions", "ls", "--json"]);
    let list: Value = serde_json::from_slice(&listed.stdout).expect("json");
    let id = list[0]["id"].as_str().expect("id");
    let shown = heartwood(project, &["sessions", "show", id, "--json"]);
    serde_json::from_slice(&shown.stdout).expect("json")
}

#[tokio::test(flavor = "multi_thread")]
async fn at_80x24_notes_and_ids_are_whole_a_refusal_clears_and_r_text_rejects_with_it() {
    let project = tempfile::tempdir().expect("project");
    let server = ScriptedModelServer::start(Script::of(vec![
        two_commands(),
        long_set(),
        support::finish("done").with_usage(1200, 340),
    ]))
    .await
    .expect("server");
    connect_scripted(project.path(), &server.base_url());
    let tmux = Tmux::start_sized(project.path(), &[], (80, 24));
    tmux.start_task("write ran.txt").await;

    // The review: where each command runs (the sandbox's level) and the keys, whole.
    let review = tmux
        .wait_for("the first set", |s| s.contains("Review: 2 proposed"))
        .await;
    let read = prose(&review);
    assert!(
        read.contains(
            "sandbox: writes only inside the project; no network beyond the project's named hosts"
        ) || read.contains("UNSANDBOXED: full access as your user"),
        "the sandbox note is cut:\n{review}"
    );
    assert!(
        read.contains("typing goes to guidance"),
        "the key hints are cut:\n{review}"
    );
    tmux.keys(&["Tab"]);
    let summary = tmux
        .wait_for("the set's summary", |s| s.contains("Tab review"))
        .await;
    assert!(
        prose(&summary).contains("never a decision"),
        "the summary's hint is cut:\n{summary}"
    );

    // `r` and then text: a rejection with that reason, not guidance.
    tmux.keys(&["Tab"]);
    tmux.type_text("r use notes.txt instead");
    tmux.wait_for("the reason line", |s| {
        s.contains("Reason for rejecting all") && s.contains("use notes.txt instead")
    })
    .await;
    tmux.keys(&["Enter"]);
    let long = tmux
        .wait_for("the second set", |s| s.contains("Review: 3 proposed"))
        .await;
    let view = session_json(project.path());
    let rejected: Vec<&Value> = view["projection"]["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter(|a| a["state"] == "rejected")
        .collect();
    assert_eq!(rejected.len(), 2, "{}", view["projection"]["actions"]);
    let told = server.requests()[1]["messages"].to_string();
    assert!(
        told.contains("use notes.txt instead"),
        "the reason never reached the model"
    );
    assert!(!project.path().join("ran.txt").exists());

    // Allow is refused with members unseen; the refusal goes once the reader scrolls on.
    assert!(long.contains("not shown yet"), "{long}");
    tmux.keys(&["a", "Enter"]);
    tmux.wait_for("the refusal", |s| s.contains("not allowed"))
        .await;
    tmux.keys(&["PageDown"]);
    tmux.wait_for("the refusal cleared", |s| !s.contains("not allowed"))
        .await;
    for _ in 0..12 {
        tmux.keys(&["PageDown"]);
    }
    tmux.wait_for("every member seen", |s| !s.contains("not shown yet"))
        .await;
    tmux.keys(&["a", "Enter"]);

    // Finished: the next steps' commands keep the session id on one line; usage is on screen.
    let finished = tmux
        .wait_for("the task to finish", |s| s.contains("Finished."))
        .await;
    let id = view["projection"]["session"].as_str().expect("id");
    let started = Instant::now();
    let mut screen = finished;
    while !screen.contains(id) && started.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        screen = tmux.screen();
    }
    assert!(
        screen.contains(id),
        "the session id {id} is not shown:\n{screen}"
    );
    for line in screen.lines() {
        // A line (or a panel's row) that ends in the id's first part broke it.
        for part in line.split('│') {
            let part = part.trim_end();
            let broken = (8..id.len()).any(|cut| part.ends_with(&id[..cut]));
            assert!(!broken, "the session id {id} is broken:\n{screen}");
        }
    }
    assert!(
        screen.contains("Usage: 1,200 tokens in"),
        "the usage panel is off screen:\n{screen}"
    );
    tmux.keys(&["C-q"]);
}
