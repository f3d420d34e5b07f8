//! The embedding example (`examples/embed.rs`) runs against the scripted model server: it
//! follows the session's update stream, shows the proposed set, decides it, the action runs once, and the terminal hash it prints is
//! the session's.

use std::path::PathBuf;

use heartwood_gateway::{ProjectContext, SessionAdmin};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;

/// `target/<profile>/examples/embed`, which `cargo test` builds beside this test.
fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    profile_dir.join("examples").join("embed")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_embedding_example_decides_a_set_and_prints_the_terminal_hash() {
    let binary = example();
    assert!(
        binary.exists(),
        "{} is missing: `cargo test` builds examples",
        binary.display()
    );
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("data.csv"), "id,y\n1,2\n2,3\n").expect("data");
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": "wc -l < data.csv > count.txt"}),
        )]),
        Turn::calls(&[("finish", json!({"message": "wrote count.txt"}))]),
    ]))
    .await
    .expect("server");
    let out = tokio::process::Command::new(&binary)
        .arg(project.path())
        .arg(server.base_url())
        .output()
        .await
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("proposes:"), "{stdout}");
    assert!(stdout.contains("wc -l < data.csv"), "{stdout}");
    assert!(stdout.contains("Finished."), "{stdout}");
    // The run was followed on the update stream: the events came as they were recorded, in
    // order, the first one the task's.
    let seqs: Vec<u64> = stdout
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("event ")?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert!(
        seqs.len() > 3 && seqs.windows(2).all(|w| w[0] < w[1]),
        "{stdout}"
    );
    assert!(stdout.contains("event 1 session_registered"), "{stdout}");
    let count = std::fs::read_to_string(project.path().join("count.txt")).expect("count");
    assert_eq!(count.trim(), "3");

    let line = stdout
        .lines()
        .find(|l| l.contains("terminal hash"))
        .expect("terminal hash line");
    let session = line
        .strip_prefix("session ")
        .and_then(|rest| rest.split(':').next())
        .expect("session id");
    let (verified, _) =
        SessionAdmin::new(&ProjectContext::at(project.path()).expect("a UTF-8 project path"))
            .verify(session, None)
            .expect("verify");
    assert!(line.ends_with(&verified.terminal_hash.to_hex()), "{line}");
}
