//! What a hostile probe of the `heartwood` binary found, each as the process-level reproduction
//! that failed before its fix: a second task that ran unrecorded, a huge reply that panicked
//! the condenser for good, a full disk that hung `decide`, a forged or deleted engine log that
//! was sealed into the record, double Ctrl-C that did not stop, and routes `status` calls
//! unusable that `exec` still tried.

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::json;
use support::{
    code, connect_scripted, finish, heartwood, heartwood_async, project_with, session_of, text,
    two_actions,
};

fn both(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The words of the `heartwood decide … allow` line `exec` printed, without `heartwood`.
fn printed_allow(out: &Output) -> Vec<String> {
    let stdout = text(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("heartwood decide") && l.trim_end().ends_with(" allow"))
        .unwrap_or_else(|| panic!("no decide command printed:\n{stdout}"));
    line[line.find("heartwood decide").expect("command")..]
        .split_whitespace()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

async fn run(project: &Path, words: &[String]) -> Output {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    heartwood_async(project, &words).await
}

/// Runs the binary, failing the test if it has not ended after a minute (the probe's hangs).
async fn bounded(project: &Path, words: &[&str]) -> Output {
    tokio::time::timeout(Duration::from_secs(60), heartwood_async(project, words))
        .await
        .unwrap_or_else(|_| panic!("`heartwood {}` did not end", words.join(" ")))
}

fn journal_kinds(project: &Path, session: &str) -> Vec<String> {
    let path = project
        .join(".heartwood/sessions")
        .join(session)
        .join("events.jsonl");
    std::fs::read_to_string(path)
        .expect("journal")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("event line");
            v["type"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_task_on_a_finished_session_is_followed_and_recorded() {
    let (project, server) = project_with(Script::of(vec![
        Turn::text("First done."),
        two_actions(),
        finish("second done"),
    ]))
    .await;
    let first = bounded(project.path(), &["exec", "first"]).await;
    assert_eq!(code(&first), 0, "{}", both(&first));
    let session = session_of(&first);

    let second = bounded(
        project.path(),
        &["exec", "--session", &session, "second task"],
    )
    .await;
    assert_eq!(
        code(&second),
        3,
        "exec reports the set it waits on: {}",
        both(&second)
    );
    assert!(
        text(&second.stdout).contains("echo one"),
        "{}",
        both(&second)
    );
    assert!(
        !text(&second.stdout).contains("give the next task"),
        "{}",
        both(&second)
    );
    // The journal has the second run's set now, not when a later process opens the session.
    let kinds = journal_kinds(project.path(), &session);
    assert_eq!(
        kinds.iter().filter(|k| *k == "action_set_pending").count(),
        1,
        "{kinds:?}"
    );

    let decided = run(project.path(), &printed_allow(&second)).await;
    assert_eq!(code(&decided), 0, "{}", both(&decided));
    assert!(
        text(&decided.stdout).contains("agent: second done"),
        "{}",
        both(&decided)
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_reply_neither_panics_nor_bricks_the_session() {
    let huge = Turn {
        content: Some("word ".repeat(120_000)),
        ..Turn::calls(&[("terminal", json!({"command": "echo big >> ran.txt"}))])
    };
    let (project, server) = project_with(Script::of(vec![
        huge,
        finish("handled"),
        Turn::text("still here"),
    ]))
    .await;
    let out = bounded(project.path(), &["exec", "go"]).await;
    assert_eq!(code(&out), 3, "{}", both(&out));
    let session = session_of(&out);
    let decided = run(project.path(), &printed_allow(&out)).await;
    assert_eq!(code(&decided), 0, "{}", both(&decided));
    assert!(!both(&decided).contains("panicked"), "{}", both(&decided));
    assert!(
        text(&decided.stdout).contains("agent: handled"),
        "{}",
        both(&decided)
    );
    // The session continues afterwards.
    let again = bounded(project.path(), &["exec", "--session", &session, "more"]).await;
    assert_eq!(code(&again), 0, "{}", both(&again));
    assert!(
        text(&again.stdout).contains("agent: still here"),
        "{}",
        both(&again)
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_or_deleted_engine_log_is_refused_not_sealed() {
    let (project, server) = project_with(Script::of(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
    ]))
    .await;
    let first = bounded(project.path(), &["exec", "first"]).await;
    assert_eq!(code(&first), 0, "{}", both(&first));
    let session = session_of(&first);
    let backend = project
        .path()
        .join(".heartwood/sessions")
        .join(&session)
        .join("backend");
    let log = backend.join("events.jsonl");
    let original = std::fs::read(&log).expect("engine log");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&backend), 0o700, "backend/ is private");
        assert_eq!(mode(&log), 0o600, "the engine log is private");
    }

    // A forged agent message appended to the engine's log.
    let count = original.iter().filter(|b| **b == b'\n').count();
    let forged = format!(
        "{}\n",
        json!({"id": count + 1, "kind": "message", "speaker": "agent", "text": "FORGED"})
    );
    let mut bytes = original.clone();
    bytes.extend_from_slice(forged.as_bytes());
    std::fs::write(&log, &bytes).expect("forge");
    let refused = bounded(project.path(), &["exec", "--session", &session, "second"]).await;
    // Refused: the agent cannot be served (exit 8).
    assert_eq!(code(&refused), 8, "{}", both(&refused));
    assert!(
        both(&refused).contains("does not match"),
        "{}",
        both(&refused)
    );
    assert!(!both(&refused).contains("FORGED"), "{}", both(&refused));
    assert!(
        !std::fs::read_to_string(
            project
                .path()
                .join(".heartwood/sessions")
                .join(&session)
                .join("events.jsonl")
        )
        .expect("journal")
        .contains("FORGED"),
        "the forged message entered the record"
    );

    // The engine's log deleted: the old task must not be sent again.
    std::fs::remove_file(&log).expect("delete");
    let refused = bounded(project.path(), &["exec", "--session", &session, "third"]).await;
    assert_eq!(code(&refused), 8, "{}", both(&refused));
    assert!(
        both(&refused).contains("does not match"),
        "{}",
        both(&refused)
    );
    assert_eq!(
        server.requests().len(),
        1,
        "no model call after the first task"
    );

    // Put back as it was, the session continues.
    std::fs::write(&log, &original).expect("restore");
    let ok = bounded(project.path(), &["exec", "--session", &session, "second"]).await;
    assert_eq!(code(&ok), 0, "{}", both(&ok));
    assert!(text(&ok.stdout).contains("agent: two"), "{}", both(&ok));
}

#[tokio::test(flavor = "multi_thread")]
async fn unusable_routes_are_refused_before_any_attempt_and_register_nothing() {
    let server = ScriptedModelServer::start(Script::of(vec![Turn::text("never")]))
        .await
        .expect("server");
    let project = tempfile::tempdir().expect("project");
    // No model at all: refused, and no empty session is left behind.
    let out = bounded(project.path(), &["exec", "hello"]).await;
    // Refused: the agent cannot be served (exit 8).
    assert_eq!(code(&out), 8, "{}", both(&out));
    assert!(
        both(&out).contains("heartwood model connect"),
        "{}",
        both(&out)
    );
    assert!(!project.path().join(".heartwood/sessions").exists());

    // A route edited by hand into one `status` calls unusable.
    connect_scripted(project.path(), &server.base_url());
    let config = project.path().join(".heartwood/config.toml");
    let edited = std::fs::read_to_string(&config)
        .expect("config")
        .replace(&server.base_url(), "ftp://example.invalid/v1");
    std::fs::write(&config, edited).expect("edit");
    let out = bounded(project.path(), &["exec", "hello"]).await;
    assert_eq!(code(&out), 8, "{}", both(&out));
    assert!(both(&out).contains("http://"), "{}", both(&out));
    assert_eq!(server.requests().len(), 0);
    let listed = heartwood(project.path(), &["sessions", "ls"]);
    assert!(!text(&listed.stdout).contains("s20"), "{}", both(&listed));
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_twice_stops_a_run_waiting_on_a_silent_model_at_once() {
    let (project, server) = project_with(Script::of(vec![
        Turn::text("never").with_fault(Fault::Silent),
    ]))
    .await;
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["exec", "wait for a silent model"])
        .current_dir(project.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id().expect("pid").to_string();
    // Let it reach the model call (the server has the request: exec follows the run by then,
    // its Ctrl-C handler in place, however loaded the machine), then press Ctrl-C twice.
    let sessions = project.path().join(".heartwood/sessions");
    let asked = std::time::Instant::now();
    while server.requests().is_empty() {
        assert!(
            asked.elapsed() < Duration::from_secs(60),
            "the model was never asked"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let interrupt = || {
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .expect("kill")
    };
    interrupt();
    tokio::time::sleep(Duration::from_millis(300)).await;
    interrupt();
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the second Ctrl-C stops exec")
        .expect("output");
    assert_eq!(code(&out), 1, "{}", both(&out));
    assert!(
        both(&out).contains("stopped by the researcher"),
        "{}",
        both(&out)
    );
    let session = std::fs::read_dir(&sessions)
        .expect("sessions")
        .next()
        .expect("one session")
        .expect("entry")
        .file_name()
        .to_string_lossy()
        .into_owned();
    let kinds = journal_kinds(project.path(), &session);
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run_interrupted"),
        "{kinds:?}"
    );
    let verify = heartwood(project.path(), &["sessions", "verify", &session]);
    assert!(verify.status.success(), "{}", both(&verify));
}

/// A small tmpfs mounted over a fresh folder, unmounted on drop; `None` where this process may
/// not mount (not root), and the test then says it was skipped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(bytes: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Fills the disk holding `dir` until `leave` bytes or fewer are free; returns the filler.
fn fill(dir: &Path, leave: u64) -> std::path::PathBuf {
    use std::io::Write;
    let filler = dir.join("filler.bin");
    let mut file = std::fs::File::create(&filler).expect("filler");
    let block = vec![0u8; 4096];
    while file.write_all(&block).is_ok() {}
    let _ = file.sync_all();
    let len = std::fs::metadata(&filler).expect("meta").len();
    file.set_len(len.saturating_sub(leave)).expect("shrink");
    filler
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_fails_decide_with_the_error_and_recover_completes_once_space_returns() {
    let Some(disk) = SmallDisk::mount(2 * 1024 * 1024) else {
        // A root-only test: CI runs as root, so there a failed mount is a failure, not a skip.
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and a 2 MiB tmpfs could not be mounted (this test needs root)"
        );
        eprintln!("skipped: this test needs root (it mounts a 2 MiB tmpfs to fill)");
        return;
    };
    let project = disk.path().join("project");
    std::fs::create_dir(&project).expect("project");
    let many: Vec<(&str, serde_json::Value)> = (0..40)
        .map(|i| {
            (
                "terminal",
                json!({"command": format!("echo {i} >> ran.txt")}),
            )
        })
        .collect();
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&many),
        finish("done"),
        Turn::text("continued"),
    ]))
    .await
    .expect("server");
    connect_scripted(&project, &server.base_url());
    let out = bounded(&project, &["exec", "write"]).await;
    assert_eq!(code(&out), 3, "{}", both(&out));
    let session = session_of(&out);

    let filler = fill(disk.path(), 24 * 1024);
    let decided = bounded(&project, &args_of(&printed_allow(&out))).await;
    assert_ne!(
        code(&decided),
        0,
        "a full disk is not success: {}",
        both(&decided)
    );
    assert_ne!(code(&decided), 3, "{}", both(&decided));
    assert!(
        both(&decided).contains("No space left on device"),
        "the error is shown: {}",
        both(&decided)
    );

    std::fs::remove_file(filler).expect("free space");
    let recovered = bounded(&project, &["sessions", "recover", &session]).await;
    assert!(recovered.status.success(), "{}", both(&recovered));
    let verify = bounded(&project, &["sessions", "verify", &session]).await;
    assert!(verify.status.success(), "{}", both(&verify));
    // The session continues from the CLI: whatever the engine did is caught up, nothing runs
    // twice, and a new task is accepted once the interrupted run is settled.
    let shown = bounded(&project, &["sessions", "show", &session]).await;
    assert!(shown.status.success(), "{}", both(&shown));
    let next = bounded(&project, &["exec", "--session", &session, "go on"]).await;
    assert!(
        matches!(code(&next), 0 | 3),
        "the session continues: {}",
        both(&next)
    );
    let ran = std::fs::read_to_string(project.join("ran.txt")).unwrap_or_default();
    let lines: Vec<&str> = ran.lines().collect();
    let unique: std::collections::BTreeSet<&str> = lines.iter().copied().collect();
    assert_eq!(lines.len(), unique.len(), "an action ran twice: {ran}");
}

fn args_of(words: &[String]) -> Vec<&str> {
    words.iter().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn damaged_receipts_are_reported_by_verify_and_rebuilt_by_recover() {
    let (project, server) = project_with(Script::of(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
        Turn::text("four"),
    ]))
    .await;
    let first = bounded(
        project.path(),
        &["exec", "--command-id", "first-task", "first"],
    )
    .await;
    assert_eq!(code(&first), 0, "{}", both(&first));
    let session = session_of(&first);
    let receipts = project
        .path()
        .join(".heartwood/sessions")
        .join(&session)
        .join("receipts.jsonl");
    let original = std::fs::read(&receipts).expect("receipts");

    let garbage = |bytes: &[u8]| {
        let mut b = bytes.to_vec();
        b.extend_from_slice(b"{\"not\":\"a receipt\"}\n");
        b
    };
    let cut = |bytes: &[u8]| bytes[..bytes.len() - 10].to_vec();
    let cases: [(&str, Option<Vec<u8>>); 3] = [
        ("garbage appended", Some(garbage(&original))),
        ("10 bytes cut", Some(cut(&original))),
        ("deleted", None),
    ];
    for (case, damaged) in cases {
        match &damaged {
            Some(bytes) => std::fs::write(&receipts, bytes).expect("damage"),
            None => std::fs::remove_file(&receipts).expect("delete"),
        }
        // verify, and every command that acts, agree: the session needs recovery.
        let verify = bounded(project.path(), &["sessions", "verify", &session]).await;
        assert!(
            !verify.status.success(),
            "{case}: verify passed: {}",
            both(&verify)
        );
        assert!(
            both(&verify).contains("receipts.jsonl"),
            "{case}: {}",
            both(&verify)
        );
        let exec = bounded(project.path(), &["exec", "--session", &session, "more"]).await;
        assert_eq!(code(&exec), 1, "{case}: {}", both(&exec));

        let recovered = bounded(project.path(), &["sessions", "recover", &session]).await;
        assert!(recovered.status.success(), "{case}: {}", both(&recovered));
        assert!(
            both(&recovered).contains("rebuilt the command receipts"),
            "{case}: {}",
            both(&recovered)
        );
        assert!(
            !both(&recovered).contains("nothing to recover"),
            "{case}: it just recovered something: {}",
            both(&recovered)
        );
        let verify = bounded(project.path(), &["sessions", "verify", &session]).await;
        assert!(verify.status.success(), "{case}: {}", both(&verify));
    }
    // The rebuilt receipt still answers a retry: the first task does not run again.
    let retried = bounded(
        project.path(),
        &[
            "exec",
            "--session",
            &session,
            "--command-id",
            "first-task",
            "first",
        ],
    )
    .await;
    assert_eq!(code(&retried), 0, "{}", both(&retried));
    assert_eq!(
        server.requests().len(),
        1,
        "the retried command acted again"
    );
    // The same id with other words is not a retry: refused, not answered with the old receipt.
    let changed = bounded(
        project.path(),
        &[
            "exec",
            "--session",
            &session,
            "--command-id",
            "first-task",
            "something else",
        ],
    )
    .await;
    assert_eq!(code(&changed), 1, "{}", both(&changed));
    assert!(
        both(&changed).contains("already used"),
        "{}",
        both(&changed)
    );
    assert_eq!(server.requests().len(), 1);
    let next = bounded(project.path(), &["exec", "--session", &session, "second"]).await;
    assert_eq!(code(&next), 0, "{}", both(&next));
    assert!(text(&next.stdout).contains("agent: two"), "{}", both(&next));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_commands_racing_for_a_session_take_turns_instead_of_giving_up() {
    let (project, _server) = project_with(Script::of(vec![two_actions(), finish("done")])).await;
    let out = bounded(project.path(), &["exec", "write"]).await;
    assert_eq!(code(&out), 3, "{}", both(&out));
    let words = printed_allow(&out);
    let mut first = words.clone();
    first.extend(["--command-id".to_owned(), "racer-1".to_owned()]);
    let mut second = words;
    second.extend(["--command-id".to_owned(), "racer-2".to_owned()]);
    let (a, b) = tokio::join!(run(project.path(), &first), run(project.path(), &second));
    // Exactly one decision acted; the other waited its turn and was then refused for the
    // real reason (no set is waiting any more), never because the other held the session.
    let codes = [code(&a), code(&b)];
    assert!(codes.contains(&0), "{codes:?}\n{}\n{}", both(&a), both(&b));
    let loser = if code(&a) == 0 { &b } else { &a };
    assert!(
        both(loser).contains("no action set waiting"),
        "{}",
        both(loser)
    );
    let ran = std::fs::read_to_string(project.path().join("ran.txt")).expect("ran");
    assert_eq!(ran, "one\ntwo\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn odd_model_replies_leave_a_trace_and_an_empty_reply_is_an_error() {
    let (project, _server) = project_with(Script::of(vec![
        Turn::calls(&[("", json!({}))]),
        Turn::text(""),
        Turn::text("fine"),
    ]))
    .await;
    let out = bounded(project.path(), &["exec", "go"]).await;
    // A reply with no text and no tool call is a model error, not "Finished."
    assert_eq!(code(&out), 1, "{}", both(&out));
    assert!(both(&out).contains("empty reply"), "{}", both(&out));
    let session = session_of(&out);
    let journal = std::fs::read_to_string(
        project
            .path()
            .join(".heartwood/sessions")
            .join(&session)
            .join("events.jsonl"),
    )
    .expect("journal");
    // The nameless tool call is in the record, resolved as failed.
    let nameless = journal
        .lines()
        .find(|l| l.contains("\"action_proposed\"") && l.contains("\"tool\":\"\""));
    assert!(nameless.is_some(), "{journal}");
    assert!(journal.contains("\"state\":\"failed\""), "{journal}");
    let again = bounded(project.path(), &["exec", "--session", &session, "again"]).await;
    assert_eq!(code(&again), 0, "{}", both(&again));
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_session_whose_process_was_killed_mid_run_takes_the_next_task() {
    let (project, server) = project_with(Script::of(vec![
        Turn::text("never").with_fault(Fault::Silent),
        Turn::text("carried on"),
    ]))
    .await;
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["exec", "a task that will be cut off"])
        .current_dir(project.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id().expect("pid").to_string();
    // Kill it while it waits on the model.
    for _ in 0..200 {
        if !server.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(server.requests().len(), 1, "the run reached the model");
    std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .expect("kill");
    let killed = child.wait_with_output().await.expect("wait");
    let session = session_of(&killed);

    // No process serves the session now; the next task is taken, not refused as "active".
    let next = bounded(project.path(), &["exec", "--session", &session, "go on"]).await;
    assert_eq!(code(&next), 0, "{}", both(&next));
    assert!(
        text(&next.stdout).contains("agent: carried on"),
        "{}",
        both(&next)
    );
    let kinds = journal_kinds(project.path(), &session);
    assert!(kinds.contains(&"run_interrupted".to_owned()), "{kinds:?}");
    let verify = heartwood(project.path(), &["sessions", "verify", &session]);
    assert!(verify.status.success(), "{}", both(&verify));
}

/// SIGKILLs `exec` at spread-out moments of a run that proposes, waits, runs and finishes, and
/// checks that every session it leaves verifies and continues with the CLI: a new instruction
/// is taken (or a set it left waiting can be decided), never refused for a state no process is
/// in.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn every_session_a_kill_leaves_continues_with_the_cli() {
    const KILLS: u64 = 10;
    for round in 0..KILLS {
        let mut turns = Vec::new();
        for i in 0..3 {
            turns.push(
                Turn::calls(&[("think", json!({"thought": format!("step {i}")}))])
                    .with_fault(Fault::ChunkDelayMs(4)),
            );
        }
        turns.push(Turn::calls(&[(
            "terminal",
            json!({"command": "echo ran >> ran.txt"}),
        )]));
        turns.push(finish("done"));
        // Whatever the kill cut off, the continuation gets plain answers.
        for _ in 0..6 {
            turns.push(Turn::text("carrying on"));
        }
        let (project, _server) = project_with(Script::of(turns)).await;
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
            .args(["exec", "work in steps"])
            .current_dir(project.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let pid = child.id().expect("pid").to_string();
        // Spread the kills over the run (it takes some tens of milliseconds).
        tokio::time::sleep(Duration::from_millis(8 + round * 8)).await;
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
        let out = child.wait_with_output().await.expect("wait");
        let Some(session) = text(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("session "))
            .map(|s| s.trim().to_owned())
        else {
            continue; // killed before the session existed
        };
        // The next command completes an append the kill interrupted, as opening a writer does.
        let next = bounded(project.path(), &["exec", "--session", &session, "go on"]).await;
        eprintln!(
            "round {round}: killed exec exited {:?}; next exec {}",
            out.status.code(),
            code(&next)
        );
        match code(&next) {
            0 => {}
            3 => {
                let decided = run(project.path(), &printed_allow(&next)).await;
                assert!(
                    matches!(code(&decided), 0 | 3),
                    "round {round}: {}",
                    both(&decided)
                );
            }
            // A set the kill left waiting: the next instruction is refused until it is
            // decided, and the refusal says so; deciding it continues the session.
            1 if both(&next).contains("decide the pending action set first") => {
                let shown = heartwood(project.path(), &["sessions", "show", &session]);
                assert!(
                    text(&shown.stdout).contains("Waiting for your decision"),
                    "round {round}: {}",
                    both(&shown)
                );
            }
            _ => panic!("round {round}: {}", both(&next)),
        }
        let verify = bounded(project.path(), &["sessions", "verify", &session]).await;
        assert!(verify.status.success(), "round {round}: {}", both(&verify));
        let ran = std::fs::read_to_string(project.path().join("ran.txt")).unwrap_or_default();
        assert!(ran.lines().count() <= 1, "round {round}: ran twice: {ran}");
    }
}
