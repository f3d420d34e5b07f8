//! `heartwood workspace`, end to end: a Git project, and a project without Git whose changes are
//! the file edits a real agent session made (and never what a terminal command wrote).

mod support;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};
use support::{connect_scripted, heartwood, heartwood_async, text};

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

#[test]
fn tree_show_changes_and_diff_in_a_git_project() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("data")).expect("mkdir");
    std::fs::write(d.join("data/cohort.csv"), "id,y\n1,2\n").expect("write");
    git(d, &["init", "-q", "-b", "main"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    std::fs::write(d.join("data/cohort.csv"), "id,y\n1,3\n").expect("write");
    std::os::unix::fs::symlink("/etc", d.join("etc-link")).expect("symlink");

    let tree = heartwood(d, &["workspace", "tree"]);
    let listing = text(&tree.stdout);
    assert!(listing.contains("cohort.csv  (9 B)"), "{listing}");
    assert!(
        listing.contains("etc-link  (symbolic link, not followed)"),
        "{listing}"
    );
    assert!(!listing.contains(".git"), "{listing}");

    let shown = heartwood(d, &["workspace", "show", "data/cohort.csv"]);
    assert_eq!(text(&shown.stdout), "id,y\n1,3\n");
    let escaped = heartwood(d, &["workspace", "show", "../outside"]);
    assert!(!escaped.status.success());
    assert!(
        text(&escaped.stderr).contains("not normalized"),
        "{}",
        text(&escaped.stderr)
    );
    let link = heartwood(d, &["workspace", "show", "etc-link/passwd"]);
    assert!(
        text(&link.stderr).contains("symbolic link"),
        "{}",
        text(&link.stderr)
    );

    let changes = heartwood(d, &["workspace", "changes", "--json"]);
    let report: Value = serde_json::from_slice(&changes.stdout).expect("json");
    assert_eq!(report["source"], "git");
    let paths: Vec<(&str, &str)> = report["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap_or(""),
                c["kind"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        paths,
        [("data/cohort.csv", "modified"), ("etc-link", "untracked")]
    );
    assert_eq!(report["limits"]["max_paths"], 5000);

    let diff = heartwood(d, &["workspace", "diff", "data/cohort.csv"]);
    assert!(
        text(&diff.stdout).contains("-1,2\n+1,3\n"),
        "{}",
        text(&diff.stdout)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_git_the_changes_are_the_sessions_file_edits() {
    let project = tempfile::tempdir().expect("project");
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[
            (
                "file_editor",
                json!({"command": "create", "path": "reports/readiness.md", "file_text": "# Ready\n"}),
            ),
            ("terminal", json!({"command": "echo x > by-terminal.txt"})),
        ]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await
    .expect("server");
    connect_scripted(project.path(), &server.base_url());
    let run = heartwood_async(
        project.path(),
        &["exec", "--session", "w", "write the report"],
    )
    .await;
    assert_eq!(run.status.code(), Some(3), "{}", text(&run.stderr));
    let (set, revision) = pending(project.path());
    let decide = heartwood_async(
        project.path(),
        &[
            "decide",
            "w",
            "--set",
            &set,
            "--revision",
            &revision,
            "allow",
        ],
    )
    .await;
    assert!(
        decide.status.success(),
        "{}{}",
        text(&decide.stdout),
        text(&decide.stderr)
    );
    assert!(project.path().join("by-terminal.txt").exists());

    let changes = heartwood(project.path(), &["workspace", "changes"]);
    let out = text(&changes.stdout);
    assert!(
        out.contains("files written by session w's file edits"),
        "{out}"
    );
    assert!(out.contains("E reports/readiness.md"), "{out}");
    assert!(
        !out.contains("by-terminal.txt"),
        "terminal text was taken as evidence: {out}"
    );
    let diff = heartwood(
        project.path(),
        &["workspace", "diff", "reports/readiness.md"],
    );
    assert!(
        text(&diff.stdout).contains("not a Git project")
            && text(&diff.stdout).contains("workspace diff --session"),
        "{}",
        text(&diff.stdout)
    );
    // What the session's edits changed, from its verified record: the created file whole; the
    // terminal's write is no edit of the editor's and is not claimed.
    let edits = heartwood(project.path(), &["workspace", "diff", "--session"]);
    let said = text(&edits.stdout);
    assert!(edits.status.success(), "{said}{}", text(&edits.stderr));
    assert!(
        said.contains("session w: 1 file edit, in the order they ran")
            && said.contains("create reports/readiness.md · +1 −0")
            && said.contains("@@ new file @@\n+# Ready\n"),
        "{said}"
    );
    assert!(!said.contains("by-terminal"), "{said}");
    let none = heartwood(
        project.path(),
        &["workspace", "diff", "--session", "w", "other.md"],
    );
    assert!(
        text(&none.stdout).contains("session w made no file edits of other.md"),
        "{}",
        text(&none.stdout)
    );
}

/// Session `w`'s pending set and revision, read through `sessions show --json`.
fn pending(project: &std::path::Path) -> (String, String) {
    let shown = heartwood(project, &["sessions", "show", "w", "--json"]);
    let view: Value = serde_json::from_slice(&shown.stdout).expect("json");
    let set = &view["projection"]["pending"];
    (
        set["set_id"].as_str().expect("set id").to_owned(),
        set["revision"].to_string(),
    )
}

#[test]
fn odd_paths_get_plain_answers_not_false_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("data")).expect("mkdir");
    std::fs::write(d.join("a.txt"), "a\n").expect("write");
    std::fs::write(d.join("data/x.csv"), "x\n").expect("write");
    git(d, &["init", "-q", "-b", "main"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);

    // A file that is nowhere is not "unchanged since HEAD".
    for missing in ["nonexist", "A.TXT"] {
        let out = heartwood(d, &["workspace", "diff", missing]);
        assert!(!out.status.success(), "{}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains("does not exist"),
            "{}",
            text(&out.stderr)
        );
        assert!(
            !text(&out.stdout).contains("unchanged"),
            "{}",
            text(&out.stdout)
        );
    }
    // A directory is named as one, with no Git error text.
    let out = heartwood(d, &["workspace", "diff", "data"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("is a directory"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !text(&out.stderr).contains("fatal"),
        "{}",
        text(&out.stderr)
    );
    // A file path with a trailing slash is refused.
    let out = heartwood(d, &["workspace", "show", "a.txt/"]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("names a directory"),
        "{}",
        text(&out.stderr)
    );
    // A deleted committed file still diffs.
    std::fs::remove_file(d.join("a.txt")).expect("rm");
    let out = heartwood(d, &["workspace", "diff", "a.txt"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("-a"), "{}", text(&out.stdout));

    // Names no project path can spell are counted where they would have been listed.
    std::fs::write(d.join("new\nline.txt"), "n\n").expect("write");
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"bad-\xff.txt");
        std::fs::write(d.join(name), "b\n").expect("write");
    }
    let tree = heartwood(d, &["workspace", "tree"]);
    assert!(
        text(&tree.stdout).contains("2 name(s) not shown"),
        "{}",
        text(&tree.stdout)
    );
    let changes = heartwood(d, &["workspace", "changes"]);
    assert!(
        text(&changes.stdout).contains("not shown"),
        "{}",
        text(&changes.stdout)
    );
}

/// The paths of a `workspace changes --json` report, or of an `exec --json` summary's
/// `files_changed`.
fn paths_of(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|c| c["path"].as_str().or(c.as_str()).unwrap_or("").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn in_git_a_sessions_changes_are_its_own_edits_not_other_work() {
    let project = tempfile::tempdir().expect("project");
    let d = project.path();
    std::fs::write(d.join("notes.md"), "base\n").expect("write");
    git(d, &["init", "-q", "-b", "main"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    // Other work, uncommitted before the session starts.
    std::fs::write(d.join("notes.md"), "someone else's edit\n").expect("write");
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[
            (
                "file_editor",
                json!({"command": "create", "path": "reports/readiness.md", "file_text": "# Ready\n"}),
            ),
            ("terminal", json!({"command": "echo x > by-terminal.txt"})),
        ]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await
    .expect("server");
    connect_scripted(d, &server.base_url());
    let run = heartwood_async(d, &["exec", "--session", "w", "write the report"]).await;
    assert_eq!(run.status.code(), Some(3), "{}", text(&run.stderr));
    let (set, revision) = pending(d);
    let decided = heartwood_async(
        d,
        &[
            "decide",
            "w",
            "--set",
            &set,
            "--revision",
            &revision,
            "allow",
            "--json",
        ],
    )
    .await;
    assert!(decided.status.success(), "{}", text(&decided.stderr));
    let summary: Value = serde_json::from_str(
        text(&decided.stdout)
            .lines()
            .last()
            .expect("a summary line"),
    )
    .expect("json");
    assert_eq!(summary["type"], "summary", "{summary}");
    assert_eq!(
        paths_of(&summary["files_changed"]),
        ["reports/readiness.md"],
        "{summary}"
    );

    let mine = heartwood(d, &["workspace", "changes", "--session", "w", "--json"]);
    let report: Value = serde_json::from_slice(&mine.stdout).expect("json");
    assert_eq!(report["session"], "w", "{report}");
    assert_eq!(
        paths_of(&report["changes"]),
        ["reports/readiness.md"],
        "{report}"
    );
    // Without a session, every change against HEAD, whoever made it.
    let all = heartwood(d, &["workspace", "changes", "--json"]);
    let report: Value = serde_json::from_slice(&all.stdout).expect("json");
    let every = paths_of(&report["changes"]);
    for path in ["by-terminal.txt", "notes.md"] {
        assert!(every.iter().any(|p| p == path), "{report}");
    }
}
