//! A batch resumed after its worker was killed mid-run: the worker (this test binary, run
//! again as a child that drives the item in process) is SIGKILLed while the model's reply
//! streams; the batch's status says the item was cut off, and driving it again continues the
//! same session from its journal, the interruption recorded once.

mod support;

use std::time::{Duration, Instant};

use heartwood_batch::Phase;
use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use support::{drive_one, event_types, load, manifest, marker};

/// Set in the child: the manifest whose item 0 it drives.
const CHILD_MANIFEST: &str = "HEARTWOOD_BATCH_TEST_MANIFEST";
const TEST: &str =
    "a_batch_resumed_after_its_worker_was_killed_continues_the_item_from_its_journal";

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_resumed_after_its_worker_was_killed_continues_the_item_from_its_journal() {
    if let Some(path) = std::env::var_os(CHILD_MANIFEST) {
        // The child: a worker driving item 0, until it is killed.
        drive_one(&load(std::path::Path::new(&path)), 0).await;
        return;
    }
    let root = tempfile::tempdir().expect("root");
    std::fs::create_dir_all(root.path().join("template")).expect("template");
    std::fs::write(root.path().join("template/data.txt"), "a\n").expect("data");
    let server = ScriptedModelServer::start(Script::of(vec![]))
        .await
        .expect("server");
    server.push_lane(
        &marker(0),
        [
            Turn::text(&"slowly ".repeat(600)).with_fault(Fault::ChunkDelayMs(50)),
            Turn::text("item 0 is done"),
        ],
    );
    let items = vec![format!("task = \"{} read data.txt\"", marker(0))];
    let path = manifest(
        root.path(),
        "task = \"read\"\npolicy = \"always-review\"",
        &server.base_url(),
        &items,
    );
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_MANIFEST, &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the worker");
    // Killed once its slow reply streams.
    let started = Instant::now();
    while server.remaining_in_lane(&marker(0)) == 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never got going"
        );
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the worker ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    let m = load(&path);
    let status = heartwood_batch::status::gather(&m).expect("status");
    let row = &status.items[0];
    assert_eq!(row.phase, Phase::Interrupted, "{row:?}");
    assert!(row.detail.contains("is gone"), "{row:?}");

    // Resumed in this process: the same session goes on, the cut-off run recorded once.
    let resumed = drive_one(&m, 0).await;
    assert_eq!(
        (resumed.phase, resumed.attempts),
        (Phase::Done, 2),
        "{resumed:?}"
    );
    let types = event_types(&resumed.project, &resumed.session);
    assert_eq!(
        types.iter().filter(|t| *t == "run_interrupted").count(),
        1,
        "{types:?}"
    );
    assert_eq!(server.remaining_in_lane(&marker(0)), 0);
}
