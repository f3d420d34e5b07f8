//! The OpenHands backend through the real binary: a `heartwood decide` process killed with
//! SIGKILL while the allowed command runs takes its agent server with it, and the next process
//! recovers the session without running the command again. Needs the pinned OpenHands
//! environment; without it the test says so and passes, unless `HEARTWOOD_REQUIRE_OPENHANDS`
//! is set (as CI does).

mod support;

use std::time::{Duration, Instant};

use heartwood_testkit::{Script, Turn};
use serde_json::json;
use support::{code, heartwood, heartwood_async, project_with, session_of, text};

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_heartwood_process_is_recovered_by_the_next_without_a_double_run() {
    let (project, _model) = project_with(Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": "echo start >> ran.txt; sleep 20; echo end >> ran.txt"}),
        )]),
        Turn::text("The command was cut off; I leave it there."),
        Turn::text("Nothing more to do."),
    ]))
    .await;
    if !support::use_openhands(project.path()) {
        return;
    }

    let out = heartwood_async(project.path(), &["exec", "run the slow command"]).await;
    assert_eq!(code(&out), 3, "{}{}", text(&out.stdout), text(&out.stderr));
    let session = session_of(&out);

    // What the deciding process said goes to a file, to be shown if the command never starts.
    let said = project.path().join("decide.log");
    let log = std::fs::File::create(&said).expect("log");
    let mut deciding = std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["decide", &session, "allow"])
        .current_dir(project.path())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("decide");
    let ran = project.path().join("ran.txt");
    let started = Instant::now();
    while !std::fs::read_to_string(&ran).is_ok_and(|t| t.contains("start")) {
        if started.elapsed() > Duration::from_secs(240)
            || deciding.try_wait().is_ok_and(|s| s.is_some())
        {
            let shown = heartwood(project.path(), &["sessions", "show", &session]);
            panic!(
                "the allowed command never started; decide said:\n{}\nthe session:\n{}\n\
                 the agent server's log ends:\n{}",
                std::fs::read_to_string(&said).unwrap_or_default(),
                text(&shown.stdout),
                support::agent_server_log_tail(project.path())
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    deciding.kill().expect("SIGKILL");
    let _ = deciding.wait();

    let next = heartwood_async(project.path(), &["exec", "--session", &session, "go on"]).await;
    assert_eq!(
        code(&next),
        0,
        "{}{}",
        text(&next.stdout),
        text(&next.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&ran).expect("ran"),
        "start\n",
        "the cut-off command never ran again"
    );
    let verified = heartwood(project.path(), &["sessions", "verify", &session]);
    assert!(
        verified.status.success(),
        "{}{}",
        text(&verified.stdout),
        text(&verified.stderr)
    );
    let shown = text(&heartwood(project.path(), &["sessions", "show", &session]).stdout);
    assert!(shown.contains("without running it again"), "{shown}");
}
