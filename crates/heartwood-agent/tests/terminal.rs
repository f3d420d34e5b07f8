//! The terminal tool against a real bash: persistence, exit codes, timeouts, input to a running
//! program, bounded output, the hard limit, and reset.

use std::time::Duration;

use heartwood_agent::tools::{Terminal, TerminalLimits};
use serde_json::json;

fn args(value: serde_json::Value) -> heartwood_agent::tools::ToolCallRequest {
    heartwood_agent::tools::ToolCallRequest::parse("terminal", &value.to_string())
        .expect("valid args")
}

async fn run(term: &mut Terminal, value: serde_json::Value) -> heartwood_agent::tools::Observation {
    match args(value) {
        heartwood_agent::tools::ToolCallRequest::Terminal(a) => {
            term.run(&a, heartwood_agent::tools::SandboxLevel::ProjectWrite)
                .await
        }
        other => panic!("not a terminal call: {other:?}"),
    }
}

fn terminal(dir: &std::path::Path, limits: TerminalLimits) -> Terminal {
    Terminal::new(dir, limits)
}

#[tokio::test]
async fn the_shell_persists_state_and_reports_exit_codes_with_merged_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("data")).expect("mkdir");
    let mut term = terminal(dir.path(), TerminalLimits::default());
    let first = run(&mut term, json!({"command": "cd data && export ANSWER=42"})).await;
    assert_eq!(first.exit_code, Some(0), "{}", first.content);
    let second = run(
        &mut term,
        json!({"command": "basename \"$PWD\"; echo $ANSWER; echo oops >&2"}),
    )
    .await;
    assert_eq!(second.exit_code, Some(0));
    assert!(
        second.content.starts_with("data\n42\noops\n"),
        "{:?}",
        second.content
    );
    let failed = run(&mut term, json!({"command": "ls no-such-file"})).await;
    assert!(failed.is_error && failed.exit_code == Some(2), "{failed:?}");
    assert!(
        failed.content.contains("No such file"),
        "{}",
        failed.content
    );
    term.stop().await;
}

#[tokio::test]
async fn a_slow_command_returns_minus_one_and_can_be_waited_for_or_answered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut term = terminal(dir.path(), TerminalLimits::default());
    let slow = run(
        &mut term,
        json!({"command": "echo started; sleep 1; echo finished", "timeout": 0.3}),
    )
    .await;
    assert_eq!(slow.exit_code, Some(-1));
    assert!(
        slow.content.contains("started") && slow.content.contains("still running"),
        "{}",
        slow.content
    );
    let busy = run(&mut term, json!({"command": "echo other"})).await;
    assert!(
        busy.is_error && busy.content.contains("still running"),
        "{}",
        busy.content
    );
    let waited = run(
        &mut term,
        json!({"command": "", "is_input": true, "timeout": 5}),
    )
    .await;
    assert_eq!(waited.exit_code, Some(0), "{}", waited.content);
    assert!(waited.content.contains("finished"));

    let asking = run(
        &mut term,
        json!({"command": "read -r name; echo \"hello $name\"", "timeout": 0.3}),
    )
    .await;
    assert_eq!(asking.exit_code, Some(-1));
    let answered = run(
        &mut term,
        json!({"command": "Ada", "is_input": true, "timeout": 5}),
    )
    .await;
    assert_eq!(answered.exit_code, Some(0), "{}", answered.content);
    assert!(
        answered.content.contains("hello Ada"),
        "{}",
        answered.content
    );
    term.stop().await;
}

#[tokio::test]
async fn a_program_reading_stdin_does_not_swallow_the_end_marker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut term = terminal(dir.path(), TerminalLimits::default());
    let out = run(
        &mut term,
        json!({"command": "head -c 5 </dev/stdin | wc -c", "timeout": 0.3}),
    )
    .await;
    assert_eq!(out.exit_code, Some(-1), "{}", out.content);
    let done = run(
        &mut term,
        json!({"command": "abcde", "is_input": true, "timeout": 5}),
    )
    .await;
    assert_eq!(done.exit_code, Some(0), "{}", done.content);
    assert!(done.content.contains('5'), "{}", done.content);
    let next = run(&mut term, json!({"command": "echo still here"})).await;
    assert!(next.content.contains("still here"));
    term.stop().await;
}

#[tokio::test]
async fn unparsable_commands_are_refused_without_wedging_the_shell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut term = terminal(dir.path(), TerminalLimits::default());
    let bad = run(&mut term, json!({"command": "echo \"unterminated"})).await;
    assert!(
        bad.is_error && bad.exit_code == Some(2) && bad.content.contains("cannot parse"),
        "{bad:?}"
    );
    let good = run(&mut term, json!({"command": "echo fine"})).await;
    assert_eq!(good.exit_code, Some(0));
    term.stop().await;
}

#[tokio::test]
async fn long_output_keeps_the_head_and_the_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = TerminalLimits {
        head_bytes: 2000,
        tail_bytes: 4096,
        ..TerminalLimits::default()
    };
    let mut term = terminal(dir.path(), limits);
    let out = run(&mut term, json!({"command": "seq 1 200000"})).await;
    assert_eq!(out.exit_code, Some(0));
    assert!(
        out.content.starts_with("1\n2\n3\n"),
        "{}",
        &out.content[..40]
    );
    assert!(out.content.contains("bytes of output omitted"));
    assert!(out.content.contains("199999\n200000\n"), "tail missing");
    assert!(
        out.content.len() < 12_000,
        "kept {} bytes",
        out.content.len()
    );
    term.stop().await;
}

#[tokio::test]
async fn the_hard_limit_kills_the_command_and_its_children() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = TerminalLimits {
        hard_limit: Duration::from_millis(700),
        ..TerminalLimits::default()
    };
    let mut term = terminal(dir.path(), limits);
    let out = run(
        &mut term,
        json!({"command": "sleep 29.8765 & sleep 29.8765", "timeout": 5}),
    )
    .await;
    assert!(
        out.is_error && out.content.contains("hard limit"),
        "{}",
        out.content
    );
    let alive = || heartwood_testkit::processes_running("sleep\u{0}29.8765");
    let waited = std::time::Instant::now();
    while !alive().is_empty() && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        alive().is_empty(),
        "the command's children survived: {:?}",
        alive()
    );
    let after = run(&mut term, json!({"command": "echo fresh shell"})).await;
    assert!(after.content.contains("fresh shell"));
    term.stop().await;
}

#[tokio::test]
async fn reset_and_exit_give_a_fresh_shell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut term = terminal(dir.path(), TerminalLimits::default());
    run(&mut term, json!({"command": "export KEPT=yes"})).await;
    let reset = run(&mut term, json!({"command": "", "reset": true})).await;
    assert!(reset.content.contains("reset"));
    let gone = run(&mut term, json!({"command": "echo \"[$KEPT]\""})).await;
    assert!(gone.content.contains("[]"), "{}", gone.content);
    let exited = run(&mut term, json!({"command": "exit 3"})).await;
    assert!(
        exited.is_error && exited.content.contains("shell exited"),
        "{}",
        exited.content
    );
    let again = run(&mut term, json!({"command": "echo back"})).await;
    assert!(again.content.contains("back"));
    term.stop().await;
}
