//! The README's quick start, run line by line as a newcomer would, in a fresh folder, with the
//! real binary on PATH and the scripted model server where the README names a local one. A
//! README that drifts from what the commands do fails here.

mod support;

use std::path::Path;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;
use support::text;

/// The README's base URL for a local model server, replaced by the scripted one's.
const README_MODEL_URL: &str = "http://localhost:11434/v1";
/// The README's model name for that server, replaced by the scripted server's.
const README_MODEL: &str = "qwen2.5-coder";

/// The quick start's commands, each with the exit code its comment promises (`exit N`), else 0.
fn quick_start() -> Vec<(String, i32)> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    let block = readme
        .split("<!-- quick-start:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- quick-start:end -->").next())
        .expect("the README marks its quick start");
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("```"))
        .map(|line| {
            let (command, comment) = split_comment(line);
            let expected = comment
                .split("exit ")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            (command.trim().to_owned(), expected)
        })
        .collect()
}

/// A shell line's command and its trailing `# comment` (a `#` outside quotes).
fn split_comment(line: &str) -> (&str, &str) {
    let mut quoted = None;
    for (i, c) in line.char_indices() {
        match (c, quoted) {
            ('"' | '\'', None) => quoted = Some(c),
            (c, Some(q)) if c == q => quoted = None,
            ('#', None) => return (&line[..i], &line[i + 1..]),
            _ => {}
        }
    }
    (line, "")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_command_of_the_readme_quick_start_works_in_a_fresh_folder() {
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "ls"}))]),
        Turn::calls(&[("finish", json!({"message": "The folder holds notes.txt."}))]),
    ]))
    .await
    .expect("server");
    let folder = tempfile::tempdir().expect("folder");
    std::fs::write(folder.path().join("notes.txt"), "a note\n").expect("a file");
    let bin = Path::new(env!("CARGO_BIN_EXE_heartwood"))
        .parent()
        .expect("the binary's folder")
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let commands = quick_start();
    assert!(commands.len() >= 5, "{commands:?}");
    for (command, expected) in commands {
        // The scripted server stands in for the README's local server, and lists its own
        // model, which `model connect` checks the chosen one against.
        let line = command
            .replace(README_MODEL_URL, &server.base_url())
            .replace(README_MODEL, "scripted");
        let out = tokio::process::Command::new("sh")
            .args(["-c", &line])
            .current_dir(folder.path())
            .env("PATH", &path)
            .output()
            .await
            .expect("sh");
        assert_eq!(
            out.status.code(),
            Some(expected),
            "`{command}` exited {:?}:\n{}{}",
            out.status.code(),
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    // The quick start did what it says: the listed folder's file is in the transcript.
    let transcript =
        std::fs::read_to_string(folder.path().join("transcript.md")).expect("transcript.md");
    assert!(
        transcript.contains("The folder holds notes.txt."),
        "{transcript}"
    );
    assert_eq!(server.remaining_turns(), 0);

    // The independent verifier, as the README words it, from the project folder.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    let verifier = readme
        .split('`')
        .find(|part| part.starts_with("python3 ") && part.contains("verify_session.py"))
        .expect("the README gives the verifier's command");
    let session = std::fs::read_dir(folder.path().join(".heartwood/sessions"))
        .expect("sessions")
        .flatten()
        .next()
        .expect("one session")
        .file_name();
    let line = verifier.replace(
        "sessions/ID",
        &format!("sessions/{}", session.to_string_lossy()),
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = tokio::process::Command::new("sh")
        .args(["-c", &line])
        .current_dir(folder.path())
        .env("HEARTWOOD_SRC", src)
        .output()
        .await
        .expect("sh");
    assert!(
        out.status.success(),
        "`{verifier}`: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn comments_are_split_outside_quotes_only() {
    assert_eq!(split_comment(r#"a "b # c" # d"#), (r#"a "b # c" "#, " d"));
    assert_eq!(split_comment("a"), ("a", ""));
}
