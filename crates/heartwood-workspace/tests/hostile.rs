//! Hostile paths and trees: links out of and into the project, loops, `..` everywhere,
//! look-alikes, special files, a file swapped for a link between listing and reading, and the
//! private directories. Nothing outside the project and nothing private is ever read.

use std::os::unix::fs::symlink;

use heartwood_workspace::{
    AccessError, EntryKind, PathError, ProjectPath, TextLimits, TreeLimits, Workspace,
    WorkspaceError,
};
use proptest::prelude::*;

const SECRET: &str = "SECRET-OUTSIDE";
const PRIVATE: &str = "PRIVATE-STATE";

struct Hostile {
    _dir: tempfile::TempDir,
    project: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn hostile() -> Hostile {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = dir.path().join("outside");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("secret.txt"), SECRET).expect("write");
    let p = |rel: &str| project.join(rel);
    std::fs::create_dir_all(p("data")).expect("mkdir");
    std::fs::create_dir_all(p("sub/.heartwood")).expect("mkdir");
    std::fs::create_dir_all(p("sub/.git")).expect("mkdir");
    std::fs::create_dir_all(p(".heartwood/sessions")).expect("mkdir");
    std::fs::create_dir_all(p(".git")).expect("mkdir");
    std::fs::create_dir_all(p("․․")).expect("mkdir"); // U+2024 ONE DOT LEADER, twice
    std::fs::write(p("data/ok.csv"), "id,y\n1,2\n").expect("write");
    std::fs::write(p(".heartwood/sessions/x"), PRIVATE).expect("write");
    std::fs::write(p(".git/config"), PRIVATE).expect("write");
    std::fs::write(p("sub/.heartwood/y"), PRIVATE).expect("write");
    std::fs::write(p("sub/.git/z"), PRIVATE).expect("write");
    std::fs::write(p("․․/look-alike.txt"), "inside").expect("write");
    symlink("../outside/secret.txt", p("link_out")).expect("symlink");
    symlink(outside.join("secret.txt"), p("link_abs")).expect("symlink");
    symlink("../outside", p("link_dir_out")).expect("symlink");
    symlink("data/ok.csv", p("link_in")).expect("symlink");
    symlink("data", p("link_dir_in")).expect("symlink");
    symlink("loop_b", p("loop_a")).expect("symlink");
    symlink("loop_a", p("loop_b")).expect("symlink");
    symlink("../../outside", p("data/up")).expect("symlink");
    let fifo = std::process::Command::new("mkfifo")
        .arg(p("fifo"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    let _socket = std::os::unix::net::UnixListener::bind(p("socket")).expect("socket");
    // A device node needs root; this machine's CI runs as root. Elsewhere the case is skipped.
    let _ = std::process::Command::new("mknod")
        .args([p("device").to_str().expect("utf-8"), "c", "1", "3"])
        .status();
    Hostile {
        _dir: dir,
        project,
        outside,
    }
}

fn read(ws: &Workspace, path: &str) -> Result<String, WorkspaceError> {
    let path = ProjectPath::parse(path)?;
    Ok(ws.text(&path, 1, TextLimits::default())?.content)
}

#[test]
fn hostile_paths_are_refused_for_the_right_reason() {
    let h = hostile();
    let ws = Workspace::open(&h.project).expect("open");
    let symlink = |p: &str| {
        matches!(
            read(&ws, p),
            Err(WorkspaceError::Access(AccessError::Symlink(_)))
        )
    };
    let special = |p: &str| {
        matches!(
            read(&ws, p),
            Err(WorkspaceError::Access(AccessError::Special(_)))
        )
    };
    let path_error = |p: &str| match read(&ws, p) {
        Err(WorkspaceError::Path(e)) => Some(e),
        _ => None,
    };
    for link in [
        "link_out",
        "link_abs",
        "link_dir_out/secret.txt",
        "link_in",
        "link_dir_in/ok.csv",
        "loop_a",
        "loop_b/x",
        "data/up/secret.txt",
    ] {
        assert!(
            symlink(link),
            "{link} was not refused as a link: {:?}",
            read(&ws, link)
        );
    }
    assert!(special("fifo"), "{:?}", read(&ws, "fifo"));
    assert!(special("socket"));
    if h.project.join("device").exists() {
        assert!(special("device"));
    }
    for (path, expected) in [
        ("../outside/secret.txt", "not normalized"),
        ("data/../../outside/secret.txt", "not normalized"),
        ("data/..", "not normalized"),
        ("..", "not normalized"),
        ("./data/ok.csv", "not normalized"),
        ("data/./ok.csv", "not normalized"),
        ("data//ok.csv", "not normalized"),
        ("", "empty"),
        (".", "empty"),
        ("/etc/passwd", "absolute"),
        (
            h.outside.join("secret.txt").to_str().expect("utf-8"),
            "absolute",
        ),
        ("data\\..\\..\\outside", "contains"),
        ("data/ok.csv\0", "contains"),
        (".git/config", "inside .git/"),
        (".heartwood/sessions/x", "inside .heartwood/"),
        ("sub/.heartwood/y", "inside .heartwood/"),
        ("sub/.git/z", "inside .git/"),
    ] {
        let error = path_error(path).unwrap_or_else(|| panic!("{path:?} was accepted"));
        assert!(error.to_string().contains(expected), "{path:?}: {error}");
    }
    // Encoded or look-alike dots are ordinary names, looked up inside the project.
    assert!(matches!(
        read(&ws, "%2e%2e/outside/secret.txt"),
        Err(WorkspaceError::Access(AccessError::Missing(_)))
    ));
    assert_eq!(read(&ws, "․․/look-alike.txt").expect("inside"), "inside");
    assert!(matches!(
        ProjectPath::parse(&"a/".repeat(70)),
        Err(PathError::TooLong)
    ));
}

#[test]
fn the_tree_shows_links_and_special_files_as_such_and_never_private_state() {
    let h = hostile();
    let ws = Workspace::open(&h.project).expect("open");
    let tree = ws
        .tree(&ProjectPath::root(), TreeLimits::default())
        .expect("tree");
    let kind = |p: &str| {
        tree.entries
            .iter()
            .find(|e| e.path.as_str() == p)
            .map(|e| e.kind)
            .unwrap_or_else(|| panic!("{p} not listed"))
    };
    assert_eq!(kind("link_dir_out"), EntryKind::Symlink);
    assert_eq!(kind("loop_a"), EntryKind::Symlink);
    assert_eq!(kind("fifo"), EntryKind::Special);
    assert_eq!(kind("socket"), EntryKind::Special);
    assert_eq!(kind("data/ok.csv"), EntryKind::File);
    for entry in &tree.entries {
        let p = entry.path.as_str();
        assert!(
            !p.split('/').any(|c| c == ".git" || c == ".heartwood"),
            "listed private {p}"
        );
        assert!(
            !p.starts_with("link_dir_out/") && !p.starts_with("data/up/"),
            "followed a link: {p}"
        );
    }
    let json = serde_json::to_string(&tree).expect("json");
    assert!(!json.contains("secret.txt"), "{json}");
    assert!(tree.limits.max_entries > 0 && !tree.truncated);

    let small = ws
        .tree(
            &ProjectPath::root(),
            TreeLimits {
                max_entries: 3,
                max_depth: 1,
            },
        )
        .expect("tree");
    assert_eq!(small.entries.len(), 3);
    assert!(small.truncated);
    assert!(matches!(
        ws.tree(
            &ProjectPath::parse("link_dir_out").expect("path"),
            TreeLimits::default()
        ),
        Err(AccessError::Symlink(_))
    ));
}

#[test]
fn a_file_swapped_for_a_link_after_listing_is_refused_not_followed() {
    let h = hostile();
    let ws = Workspace::open(&h.project).expect("open");
    let path = ProjectPath::parse("data/ok.csv").expect("path");
    let tree = ws
        .tree(&ProjectPath::root(), TreeLimits::default())
        .expect("tree");
    assert!(
        tree.entries
            .iter()
            .any(|e| e.path == path && e.kind == EntryKind::File)
    );
    let before = ws
        .snapshot(std::slice::from_ref(&path), Some("my notes"))
        .expect("snapshot");

    std::fs::remove_file(h.project.join("data/ok.csv")).expect("rm");
    symlink(h.outside.join("secret.txt"), h.project.join("data/ok.csv")).expect("swap");

    assert!(matches!(
        ws.text(&path, 1, TextLimits::default()),
        Err(AccessError::Symlink(_))
    ));
    assert!(matches!(ws.digest(&path), Err(AccessError::Symlink(_))));
    let checks = ws.check(&before);
    let json = serde_json::to_string(&checks).expect("json");
    assert!(
        json.contains("unreadable") && json.contains("symbolic link"),
        "{json}"
    );
    assert!(!json.contains(SECRET));
}

#[test]
fn evidence_checks_name_changed_and_vanished_files() {
    let h = hostile();
    let ws = Workspace::open(&h.project).expect("open");
    std::fs::write(h.project.join("data/b.txt"), "b").expect("write");
    std::fs::write(h.project.join("data/c.txt"), "c").expect("write");
    let paths: Vec<ProjectPath> = ["data/ok.csv", "data/b.txt", "data/c.txt"]
        .iter()
        .map(|p| ProjectPath::parse(p).expect("path"))
        .collect();
    let snapshot = ws.snapshot(&paths, None).expect("snapshot");
    assert_eq!(snapshot.files[0].bytes, 9);
    std::fs::write(h.project.join("data/b.txt"), "B!").expect("write");
    std::fs::remove_file(h.project.join("data/c.txt")).expect("rm");
    let states: Vec<String> = ws
        .check(&snapshot)
        .iter()
        .map(|c| {
            serde_json::to_value(c).expect("json")["state"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(states, ["unchanged", "changed", "vanished"]);
}

#[test]
fn text_is_bounded_and_binary_is_not_shown() {
    let h = hostile();
    let ws = Workspace::open(&h.project).expect("open");
    let lines: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    std::fs::write(h.project.join("data/long.txt"), &lines).expect("write");
    std::fs::write(h.project.join("data/bin.dat"), [0u8, 159, 146, 150]).expect("write");
    let long = ProjectPath::parse("data/long.txt").expect("path");
    let limits = TextLimits {
        max_bytes: 1024,
        max_lines: 10,
    };
    let shown = ws.text(&long, 5, limits).expect("text");
    assert_eq!(shown.lines, 10);
    assert!(shown.content.starts_with("line 5\n") && shown.truncated);
    let cut = ws
        .text(
            &long,
            1,
            TextLimits {
                max_bytes: 20,
                max_lines: 100,
            },
        )
        .expect("text");
    assert!(cut.truncated && cut.content.len() <= 20);
    let binary = ws
        .text(
            &ProjectPath::parse("data/bin.dat").expect("path"),
            1,
            limits,
        )
        .expect("text");
    assert_eq!(serde_json::to_value(binary.status).expect("json"), "binary");
    assert!(binary.content.is_empty());
}

fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "..",
        ".",
        "",
        "\\",
        "\0",
        "a",
        ".git",
        ".heartwood",
        "%2e%2e",
        "․․",
        "link_out",
        "link_dir_out",
        "link_dir_in",
        "loop_a",
        "secret.txt",
        "outside",
        "data",
        "ok.csv",
        "up",
        "fifo",
        "socket",
        "device",
        "/",
        "sub",
        "x",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the path, nothing outside the project and nothing private is returned, and a
    /// path that parses never holds a traversal or private component.
    #[test]
    fn no_path_reads_outside_the_project_or_private_state(
        pieces in prop::collection::vec(piece(), 1..6),
        absolute in any::<bool>(),
    ) {
        let h = shared();
        let ws = Workspace::open(&h.project).expect("open");
        let mut path = pieces.join("/");
        if absolute {
            path.insert(0, '/');
        }
        if let Ok(parsed) = ProjectPath::parse(&path) {
            for c in parsed.components() {
                prop_assert!(c != ".." && c != "." && !c.is_empty() && c != ".git" && c != ".heartwood");
            }
            if let Ok(text) = ws.text(&parsed, 1, TextLimits::default()) {
                prop_assert!(!text.content.contains(SECRET) && !text.content.contains(PRIVATE));
            }
            if let Ok(tree) = ws.tree(&parsed, TreeLimits::default()) {
                let json = serde_json::to_string(&tree).expect("json");
                prop_assert!(!json.contains("secret.txt") && !json.contains(".heartwood"));
            }
            let _ = ws.digest(&parsed);
        }
    }
}

/// One hostile project for all property cases (creating hundreds would dominate the run).
fn shared() -> &'static Hostile {
    static SHARED: std::sync::OnceLock<Hostile> = std::sync::OnceLock::new();
    SHARED.get_or_init(hostile)
}
