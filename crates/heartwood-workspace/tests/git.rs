//! Changes and diffs in real Git repositories built by the test (the `git` program is the
//! oracle that builds them), and in a project without Git.

use std::path::Path;
use std::process::Command;

use heartwood_workspace::{
    ChangeKind, ChangeLimits, ChangeSource, DiffLimits, DiffStatus, ProjectPath, Workspace,
};

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

/// A repository with one commit, then every kind of change.
fn changed_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    write(d, "a.txt", b"one\ntwo\nthree\n");
    write(d, "b.txt", b"gone soon\n");
    write(d, "clean.txt", b"untouched\n");
    write(
        d,
        "old name.txt",
        b"the same content for a rename\nline two\nline three\n",
    );
    write(d, "bin.dat", &[0, 1, 2, 3]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    write(d, "a.txt", b"one\nTWO\nthree\n");
    std::fs::remove_file(d.join("b.txt")).expect("rm");
    git(d, &["mv", "old name.txt", "new name.txt"]);
    write(d, "added.txt", b"staged\n");
    git(d, &["add", "added.txt"]);
    write(d, "notes/untracked.md", b"# notes\n");
    write(d, "bin.dat", &[0, 9, 9, 9]);
    write(d, ".heartwood/sessions/s/events.jsonl", b"{}\n");
    dir
}

#[test]
fn git_changes_cover_every_kind_and_leave_the_index_alone() {
    let repo = changed_repo();
    let index = repo.path().join(".git/index");
    let index_before = std::fs::read(&index).expect("index");
    let mtime_before = std::fs::metadata(&index)
        .expect("meta")
        .modified()
        .expect("mtime");

    let ws = Workspace::open(repo.path()).expect("open");
    assert!(ws.is_git());
    let changes = ws.changes(&[], ChangeLimits::default()).expect("changes");
    assert_eq!(changes.source, ChangeSource::Git);
    let found: Vec<(String, ChangeKind, Option<String>)> = changes
        .changes
        .iter()
        .map(|c| {
            (
                c.path.as_str().to_owned(),
                c.kind,
                c.from.as_ref().map(|f| f.as_str().to_owned()),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("a.txt".into(), ChangeKind::Modified, None),
            ("added.txt".into(), ChangeKind::Added, None),
            ("b.txt".into(), ChangeKind::Deleted, None),
            ("bin.dat".into(), ChangeKind::Modified, None),
            (
                "new name.txt".into(),
                ChangeKind::Renamed,
                Some("old name.txt".into())
            ),
            ("notes/untracked.md".into(), ChangeKind::Untracked, None),
        ]
    );
    // `.heartwood/` is in none of the changes above: where `git` runs confined it cannot even
    // see the folder (the sandbox hides it), elsewhere the workspace excludes what it reports.
    assert!(
        changes.excluded >= 1 || heartwood_sandbox::support().enforcing,
        ".heartwood/ was not excluded: {changes:?}"
    );
    assert_eq!(
        std::fs::read(&index).expect("index"),
        index_before,
        "git rewrote the index"
    );
    assert_eq!(
        std::fs::metadata(&index)
            .expect("meta")
            .modified()
            .expect("mtime"),
        mtime_before
    );

    let bounded = ws
        .changes(&[], ChangeLimits { max_paths: 2 })
        .expect("changes");
    assert_eq!(bounded.changes.len(), 2);
    assert!(bounded.truncated);
}

#[test]
fn diffs_against_head_for_text_binary_new_deleted_and_clean_files() {
    let repo = changed_repo();
    let ws = Workspace::open(repo.path()).expect("open");
    let diff = |p: &str| {
        ws.diff(&ProjectPath::parse(p).expect("path"), DiffLimits::default())
            .expect("diff")
    };
    let modified = diff("a.txt");
    assert_eq!(modified.status, DiffStatus::Changed);
    assert!(
        modified.unified.contains("--- a/a.txt\n+++ b/a.txt\n"),
        "{}",
        modified.unified
    );
    assert!(
        modified.unified.contains("-two\n+TWO\n"),
        "{}",
        modified.unified
    );
    assert_eq!(diff("bin.dat").status, DiffStatus::Binary);
    assert_eq!(diff("clean.txt").status, DiffStatus::Unchanged);
    let untracked = diff("notes/untracked.md");
    assert!(
        untracked
            .unified
            .starts_with("--- /dev/null\n+++ b/notes/untracked.md\n@@"),
        "{}",
        untracked.unified
    );
    assert!(
        untracked.unified.ends_with("\n+# notes\n"),
        "{}",
        untracked.unified
    );
    let deleted = diff("b.txt");
    assert!(
        deleted
            .unified
            .starts_with("--- a/b.txt\n+++ /dev/null\n@@"),
        "{}",
        deleted.unified
    );
    assert!(
        deleted.unified.ends_with("\n-gone soon\n"),
        "{}",
        deleted.unified
    );
    let small = ws
        .diff(
            &ProjectPath::parse("a.txt").expect("path"),
            DiffLimits {
                max_bytes: 4,
                max_lines: 100,
            },
        )
        .expect("diff");
    assert_eq!(small.status, DiffStatus::TooLarge);
}

#[test]
fn a_repositorys_own_configuration_cannot_run_a_program() {
    let repo = changed_repo();
    let marker = repo.path().join("../fsmonitor-ran");
    let _ = std::fs::remove_file(&marker);
    let hook = format!("touch {}", marker.display());
    git(repo.path(), &["config", "core.fsmonitor", &hook]);
    git(repo.path(), &["config", "diff.external", &hook]);
    let ws = Workspace::open(repo.path()).expect("open");
    ws.changes(&[], ChangeLimits::default()).expect("changes");
    ws.diff(
        &ProjectPath::parse("a.txt").expect("path"),
        DiffLimits::default(),
    )
    .expect("diff");
    assert!(!marker.exists(), "a configured program ran");
}

/// A clean filter is named by an attribute and a configuration key, neither of which the
/// hardening flags can list in advance: the agent plants both, and `heartwood workspace
/// changes` must not run it on the host (where it could write anywhere and reach the network).
#[test]
fn a_planted_clean_filter_never_runs_on_the_host() {
    if !heartwood_sandbox::required_by_test() {
        return;
    }
    let repo = changed_repo();
    let outside = tempfile::tempdir().expect("outside");
    let marker = outside.path().join("filter-ran");
    let filter = format!("sh -c 'touch {}; cat'", marker.display());
    git(repo.path(), &["config", "filter.evil.clean", &filter]);
    write(repo.path(), ".gitattributes", b"* filter=evil\n");
    write(repo.path(), "a.txt", b"one\nchanged again\nthree\n");
    // The control: the researcher's own `git status` runs it, so the plant works.
    git(repo.path(), &["status", "--porcelain"]);
    assert!(marker.exists(), "the planted filter runs under plain git");
    std::fs::remove_file(&marker).expect("rm");
    write(repo.path(), "a.txt", b"one\nchanged a third time\nthree\n");
    let ws = Workspace::open(repo.path()).expect("open");
    let changes = ws.changes(&[], ChangeLimits::default()).expect("changes");
    assert!(changes.changes.iter().any(|c| c.path.as_str() == "a.txt"));
    ws.diff(
        &ProjectPath::parse("a.txt").expect("path"),
        DiffLimits::default(),
    )
    .expect("diff");
    assert!(!marker.exists(), "the planted filter ran on the host");
}

#[test]
fn a_project_inside_a_larger_repository_sees_only_its_own_paths() {
    let repo = changed_repo();
    write(repo.path(), "notes/more.md", b"more\n");
    let ws = Workspace::open(repo.path().join("notes")).expect("open");
    let changes = ws.changes(&[], ChangeLimits::default()).expect("changes");
    let paths: Vec<&str> = changes.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["more.md", "untracked.md"]);
}

#[test]
fn without_git_changes_are_the_sessions_file_edits_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "reports/readiness.md", b"# Readiness\n");
    write(dir.path(), "touched-by-terminal.txt", b"x\n");
    let ws = Workspace::open(dir.path()).expect("open");
    assert!(!ws.is_git());
    let edits = [
        "reports/readiness.md".to_owned(),
        "../escape.txt".to_owned(),
        "gone.txt".to_owned(),
    ];
    let changes = ws
        .changes(&edits, ChangeLimits::default())
        .expect("changes");
    assert_eq!(changes.source, ChangeSource::SessionEdits);
    let found: Vec<(&str, ChangeKind)> = changes
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.kind))
        .collect();
    assert_eq!(
        found,
        [
            ("gone.txt", ChangeKind::Deleted),
            ("reports/readiness.md", ChangeKind::Edited)
        ]
    );
    assert_eq!(changes.excluded, 1);
    let diff = ws
        .diff(
            &ProjectPath::parse("reports/readiness.md").expect("path"),
            DiffLimits::default(),
        )
        .expect("diff");
    assert_eq!(diff.status, DiffStatus::NotGit);
}

#[test]
fn a_commits_files_are_written_out_and_nothing_but_a_commit_id_reaches_git() {
    let repo = changed_repo();
    let workspace = Workspace::open(repo.path()).expect("open");
    let head = {
        let out = Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(repo.path())
            .output()
            .expect("git");
        String::from_utf8(out.stdout)
            .expect("utf8")
            .trim()
            .to_owned()
    };
    let out = tempfile::tempdir().expect("tempdir");
    let into = out.path().join("copy");
    std::fs::create_dir(&into).expect("mkdir");
    workspace.export_commit(&head, &into).expect("export");
    // The committed files, as committed, and nothing the work tree changed since.
    assert_eq!(
        std::fs::read(into.join("a.txt")).expect("a"),
        b"one\ntwo\nthree\n"
    );
    assert!(into.join("b.txt").exists() && into.join("old name.txt").exists());
    assert!(!into.join("added.txt").exists() && !into.join(".heartwood").exists());

    // An option or a ref name in place of an id is refused before git runs.
    let planted = out.path().join("planted");
    for hostile in [
        format!("--output={}", planted.display()),
        "HEAD".to_owned(),
        head.to_uppercase(),
    ] {
        let empty = out.path().join("empty");
        std::fs::create_dir_all(&empty).expect("mkdir");
        assert!(
            workspace.export_commit(&hostile, &empty).is_err(),
            "{hostile}"
        );
        assert!(!planted.exists());
    }
    // A folder that is not empty is refused.
    assert!(workspace.export_commit(&head, &into).is_err());
}
