//! The terminal's sandbox, against real processes: a writer disguised as a reader fails
//! harmlessly read-only, Heartwood's state and hidden locations cannot be read, the parent's
//! environment cannot be read through `/proc`, and an ordinary command still runs (so none of
//! this passes by running nothing). Unsandboxed, the same probes succeed: the tests can fail.

mod support;

use std::path::Path;

use heartwood_agent::tools::sandbox::{Sandbox, support};
use heartwood_agent::tools::{SandboxLevel, Terminal, TerminalLimits};
use support::run;

/// The secret this test process holds (set for every test by `.cargo/config.toml`).
const SECRET: &str = "sk-test-secret-123";

/// A project with a table, Heartwood's state and a git history, plus a hidden folder outside.
fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let project = tempfile::tempdir().expect("project");
    let p = project.path();
    std::fs::write(p.join("input"), "b\na\na\n").expect("input");
    std::fs::create_dir(p.join(".heartwood")).expect("state");
    std::fs::write(p.join(".heartwood/token"), "HEARTWOOD-STATE-TOKEN").expect("token");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(p)
            .output()
            .expect("git");
        assert!(out.status.success(), "{out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "input"]);
    git(&["commit", "-q", "-m", "first"]);
    let outside = tempfile::tempdir_in(std::env::var("HOME").unwrap_or("/root".into()))
        .or_else(|_| tempfile::tempdir())
        .expect("outside");
    std::fs::write(outside.path().join("signin.json"), "SIGNIN-TOKEN").expect("signin");
    (project, outside)
}

fn terminal(project: &Path, hidden: &Path) -> Terminal {
    Terminal::new(project, TerminalLimits::default())
        .with_sandbox(Sandbox::new(project).hiding([hidden.to_owned()]))
}

fn require_sandbox() -> bool {
    let found = support();
    if !found.enforcing && std::env::var_os("HEARTWOOD_REQUIRE_SANDBOX").is_some() {
        panic!("the sandbox is required here: {}", found.detail);
    }
    if !found.enforcing {
        eprintln!("SKIPPED: no sandbox on this machine: {}", found.detail);
    }
    found.enforcing
}

#[tokio::test]
async fn read_only_commands_cannot_write_read_secrets_or_see_the_parent() {
    if !require_sandbox() {
        return;
    }
    let (project, outside) = project();
    let p = project.path();
    let mut term = terminal(p, outside.path());
    let parent = std::process::id();
    for level in [SandboxLevel::ReadOnly, SandboxLevel::ProjectWrite] {
        let said = run(&mut term, "echo still-runs", level).await;
        assert!(said.contains("still-runs\n"), "{level:?}: {said}");
        for probe in [
            "cat .heartwood/token".to_owned(),
            format!("cat {}/signin.json", outside.path().display()),
            format!("cat /proc/{parent}/environ"),
            "cat /proc/*/environ".to_owned(),
        ] {
            let said = run(&mut term, &probe, level).await;
            assert!(
                !said.contains("TOKEN") && !said.contains(SECRET),
                "{level:?}: {probe}: {said}"
            );
        }
    }
    for writer in [
        "sort -o victim input",
        "uniq input copy",
        "git log --output=log",
    ] {
        let said = run(&mut term, writer, SandboxLevel::ReadOnly).await;
        assert!(!said.ends_with("[exit Some(0)]"), "{writer}: {said}");
    }
    for written in ["victim", "copy", "log"] {
        assert!(!p.join(written).exists(), "{written} was written read-only");
    }
    let net = run(
        &mut term,
        "bash -c 'echo > /dev/tcp/127.0.0.1/9' 2>&1",
        SandboxLevel::ReadOnly,
    )
    .await;
    assert!(!net.ends_with("[exit Some(0)]"), "{net}");
    term.stop().await;
}

#[tokio::test]
async fn project_write_writes_the_project_only_and_keeps_git_history_read_only() {
    if !require_sandbox() {
        return;
    }
    let (project, outside) = project();
    let p = project.path();
    let mut term = terminal(p, outside.path());
    let said = run(
        &mut term,
        "sort -o sorted input && cat sorted",
        SandboxLevel::ProjectWrite,
    )
    .await;
    assert!(said.starts_with("a\na\nb\n"), "{said}");
    let escape = run(
        &mut term,
        &format!("echo x > {}/escaped", outside.path().display()),
        SandboxLevel::ProjectWrite,
    )
    .await;
    assert!(!escape.ends_with("[exit Some(0)]"), "{escape}");
    assert!(!outside.path().join("escaped").exists());
    let rewrite = run(
        &mut term,
        "git commit -q --allow-empty -m x",
        SandboxLevel::ProjectWrite,
    )
    .await;
    assert!(!rewrite.ends_with("[exit Some(0)]"), "{rewrite}");
    let state = run(
        &mut term,
        "echo x > .heartwood/forged",
        SandboxLevel::ProjectWrite,
    )
    .await;
    assert!(!state.ends_with("[exit Some(0)]"), "{state}");
    assert!(!p.join(".heartwood/forged").exists());
    term.stop().await;
}

#[tokio::test]
async fn unsandboxed_the_same_probes_succeed() {
    let (project, outside) = project();
    let p = project.path();
    let mut term = terminal(p, outside.path());
    let token = run(&mut term, "cat .heartwood/token", SandboxLevel::Unsandboxed).await;
    assert!(token.contains("HEARTWOOD-STATE-TOKEN"), "{token}");
    let environ = run(
        &mut term,
        &format!("tr '\\0' '\\n' < /proc/{}/environ", std::process::id()),
        SandboxLevel::Unsandboxed,
    )
    .await;
    assert!(environ.contains(SECRET), "{environ}");
    run(&mut term, "sort -o victim input", SandboxLevel::Unsandboxed).await;
    assert!(p.join("victim").exists());
    term.stop().await;
}

#[tokio::test]
async fn a_command_at_another_level_gets_a_fresh_shell_and_says_so() {
    if !require_sandbox() {
        return;
    }
    let (project, outside) = project();
    let mut term = terminal(project.path(), outside.path());
    run(&mut term, "export KEPT=1", SandboxLevel::ProjectWrite).await;
    let same = run(&mut term, "echo kept=$KEPT", SandboxLevel::ProjectWrite).await;
    assert!(same.starts_with("kept=1"), "{same}");
    let other = run(&mut term, "echo kept=$KEPT", SandboxLevel::ReadOnly).await;
    assert!(
        other.contains("a new shell started") && other.contains("kept=\n"),
        "{other}"
    );
    term.stop().await;
}

#[tokio::test]
async fn reached_directories_stay_reachable_and_writable_only_when_declared() {
    if !require_sandbox() {
        return;
    }
    let (project, outside) = project();
    let p = project.path();
    // An active skill's verified copy lives under the hidden `.heartwood/`.
    let skill = p.join(".heartwood/skills/s");
    std::fs::create_dir_all(&skill).expect("skill");
    std::fs::write(skill.join("SKILL.md"), "SKILL-TEXT").expect("skill file");
    let mount = tempfile::tempdir().expect("mount");
    let sandbox = Sandbox::new(p)
        .hiding([outside.path().to_owned()])
        .reaching([(skill.clone(), false), (mount.path().to_owned(), true)]);
    let mut term = Terminal::new(p, TerminalLimits::default()).with_sandbox(sandbox);
    for level in [SandboxLevel::ReadOnly, SandboxLevel::ProjectWrite] {
        let read = run(
            &mut term,
            &format!("cat {}/SKILL.md", skill.display()),
            level,
        )
        .await;
        assert!(read.contains("SKILL-TEXT"), "{level:?}: {read}");
        let hidden = run(&mut term, "cat .heartwood/token", level).await;
        assert!(!hidden.contains("TOKEN"), "{level:?}: {hidden}");
    }
    let write = |level| format!("echo x > {}/{level:?}", mount.path().display());
    run(
        &mut term,
        &write(SandboxLevel::ReadOnly),
        SandboxLevel::ReadOnly,
    )
    .await;
    run(
        &mut term,
        &write(SandboxLevel::ProjectWrite),
        SandboxLevel::ProjectWrite,
    )
    .await;
    assert!(!mount.path().join("ReadOnly").exists());
    assert!(mount.path().join("ProjectWrite").exists());
    let skill_write = run(
        &mut term,
        &format!("echo x > {}/SKILL.md", skill.display()),
        SandboxLevel::ProjectWrite,
    )
    .await;
    assert!(!skill_write.ends_with("[exit Some(0)]"), "{skill_write}");
    term.stop().await;
}
