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
        Turn::calls(&[("terminal", json!({"command": "wc -l < data/cohort.csv"}))]),
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
    let compare = heartwood(&original, &["replay", "r", "--into", into, "--compare"]);
    let report = text(&compare.stdout);
    assert!(compare.status.success(), "{report}");
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
        report.contains("differs  terminal $ wc -l < data/cohort.csv"),
        "{report}"
    );
    assert!(report.contains("missing"), "{report}");
}
