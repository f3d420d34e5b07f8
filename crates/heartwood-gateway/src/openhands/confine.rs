//! The project's bound for OpenHands' file editor, kept by Heartwood before a set runs: an
//! allowed set in which the editor would reach a path outside the project is refused whole
//! (OpenHands confirms a set whole), so the review's preview, which says such an edit would
//! fail, is what happens. The launcher's editor refuses such a path again when the edit runs
//! (a link made by an earlier member of the set is only there by then), and the sandbox the
//! server runs in holds it to the project whatever either check says: these two keep the
//! preview and the outcome in agreement, the kernel keeps the boundary.

use std::path::{Component, Path, PathBuf};

use camino::Utf8Path;
use heartwood_agent::conversation::{AgentEvent, EventKind};

/// Directories inside the project the editor never reaches (the native engine's rule).
const RESERVED: [&str; 2] = [".heartwood", ".git"];

/// How a refusal's reason starts: the log records the set as failed by Heartwood's rule, not
/// as rejected by the researcher.
pub(super) const REFUSED: &str = "Heartwood refused the set";

/// The reason to refuse `waiting` with, if the file editor would reach outside `project` in
/// any of its actions. Reads the file system (links on the way), so it runs on the blocking
/// pool; a check that cannot run refuses (fail closed).
pub(super) async fn refusal(project: &Utf8Path, waiting: &[&AgentEvent]) -> Option<String> {
    let paths: Vec<String> = waiting.iter().filter_map(|a| editor_path(a)).collect();
    if paths.is_empty() {
        return None;
    }
    let project = project.to_path_buf();
    let all = paths.clone();
    let outside = tokio::task::spawn_blocking(move || {
        paths
            .into_iter()
            .filter(|p| is_outside(project.as_std_path(), p))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or(all);
    (!outside.is_empty()).then(|| {
        format!(
            "{REFUSED}: the file editor may not reach {}, outside the project (or in its \
             .heartwood/ or .git/); nothing in the set ran",
            outside.join(", ")
        )
    })
}

/// The path a file editor action names.
fn editor_path(action: &AgentEvent) -> Option<String> {
    match &action.kind {
        EventKind::Action {
            tool, arguments, ..
        } if tool == "file_editor" => {
            let arguments: serde_json::Value = serde_json::from_str(arguments).ok()?;
            arguments["path"].as_str().map(str::to_owned)
        }
        _ => None,
    }
}

/// Whether `path` lies outside `project` (or in its `.heartwood/` or `.git/`), with the links
/// of its longest existing ancestor resolved. A relative path is the editor's to refuse (it takes absolute paths only).
fn is_outside(project: &Path, path: &str) -> bool {
    let path = Path::new(path);
    if !path.is_absolute() {
        return false;
    }
    let Ok(root) = std::fs::canonicalize(project) else {
        return true;
    };
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    let mut existing = normal.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let full = rest.iter().rev().fold(real, |full, part| full.join(part));
            // Heartwood's state and git's are not the editor's, as in the native engine.
            return full.strip_prefix(&root).map_or(true, |inside| {
                inside
                    .components()
                    .any(|part| RESERVED.iter().any(|r| part.as_os_str() == *r))
            });
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_outside_when_it_or_a_link_on_its_way_leaves_the_project() {
        let project = tempfile::tempdir().expect("test fixture");
        let elsewhere = tempfile::tempdir().expect("test fixture");
        let root = project.path();
        std::os::unix::fs::symlink(elsewhere.path(), root.join("out")).expect("test fixture");
        let inside = |p: &Path| !is_outside(root, p.to_str().expect("UTF-8"));
        assert!(inside(&root.join("new/dir/file.txt")));
        assert!(inside(&root.join("a/../b.txt")));
        assert!(!inside(&root.join("../escaped.txt")));
        assert!(!inside(&elsewhere.path().join("x.txt")));
        assert!(!inside(&root.join("out/x.txt")), "through a link");
        assert!(!inside(&root.join(".heartwood/sessions/s/events.jsonl")));
        assert!(!inside(&root.join("sub/.git/config")));
        assert!(!is_outside(root, "relative.txt"), "the editor's to refuse");
    }
}
