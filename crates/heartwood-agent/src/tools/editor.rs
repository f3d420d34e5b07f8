//! `file_editor`: view files (with line numbers) and directories (two levels), create files,
//! replace one exact occurrence of a string, insert after a line, and undo the last edit.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use heartwood_sandbox::beneath::{Beneath, Entry};
use serde::{Deserialize, Serialize};

use super::refusal::EditRefused;
use super::{Observation, ProjectPaths};

/// Largest file the editor reads or writes.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Most characters of a view returned to the model.
const MAX_VIEW_CHARS: usize = 40_000;
/// Undo steps kept per file.
const MAX_UNDO: usize = 10;

/// What the editor is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditorCommand {
    /// Show a file or a directory.
    View,
    /// Create a new file.
    Create,
    /// Replace exactly one occurrence of `old_str` with `new_str`.
    StrReplace,
    /// Insert `new_str` after line `insert_line` (0 inserts at the top).
    Insert,
    /// Revert the last edit of the file.
    UndoEdit,
}

/// `file_editor`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditorArgs {
    /// The command.
    pub command: EditorCommand,
    /// The file or directory.
    pub path: String,
    /// Content for `create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_text: Option<String>,
    /// Text to replace for `str_replace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_str: Option<String>,
    /// Replacement or inserted text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_str: Option<String>,
    /// Line after which `insert` inserts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert_line: Option<u64>,
    /// `[start, end]` lines for `view` (1-based, `end` -1 for the end of the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view_range: Option<Vec<i64>>,
}

/// The editor and its undo history.
pub struct FileEditor {
    paths: ProjectPaths,
    history: HashMap<PathBuf, Vec<Option<String>>>,
}

impl FileEditor {
    /// An editor confined to `paths`.
    pub fn new(paths: ProjectPaths) -> Self {
        FileEditor {
            paths,
            history: HashMap::new(),
        }
    }

    /// Runs one command.
    pub fn run(&mut self, args: &EditorArgs) -> Observation {
        match self.try_run(args) {
            Ok(observation) => observation,
            Err(refused) => Observation::error(refused.to_string()),
        }
    }

    fn try_run(&mut self, args: &EditorArgs) -> Result<Observation, EditRefused> {
        let (path, shown) = match args.command {
            EditorCommand::View => self.paths.resolve_for_reading(&args.path)?,
            _ => self.paths.resolve_for_writing(&args.path)?,
        };
        let edited = |content: String| Observation {
            changed_path: Some(shown.clone()),
            ..Observation::ok(content)
        };
        match args.command {
            EditorCommand::View => {
                let (dir, rest) = self.paths.beneath(&path, true)?;
                view(&dir, &rest, &shown, args.view_range.as_deref())
            }
            EditorCommand::Create => {
                let text = args.file_text.as_deref().ok_or(EditRefused::Missing {
                    command: "create",
                    argument: "file_text",
                })?;
                let (dir, rest) = self.paths.beneath(&path, false)?;
                if std::fs::symlink_metadata(&path).is_ok() {
                    return Err(EditRefused::Exists(shown));
                }
                if let Some(parent) = rest.parent() {
                    dir.create_dir_all(parent)
                        .map_err(|source| EditRefused::Io {
                            action: "create the folder for",
                            shown: shown.clone(),
                            source,
                        })?;
                }
                write(&dir, &rest, &shown, text)?;
                self.remember(&path, None);
                Ok(edited(format!(
                    "Created {shown} ({} lines).",
                    text.lines().count()
                )))
            }
            EditorCommand::StrReplace => {
                let old = args.old_str.as_deref().unwrap_or_default();
                let new = args.new_str.as_deref().unwrap_or("");
                let (dir, rest) = self.paths.beneath(&path, false)?;
                let text = read(&dir, &rest, &shown)?;
                let (updated, at) = replace_once(&text, old, new, &shown)?;
                write(&dir, &rest, &shown, &updated)?;
                self.remember(&path, Some(text));
                let line = line_of(&updated, at);
                Ok(edited(format!(
                    "Edited {shown}: replaced one occurrence at line {line}.\n{}",
                    snippet(&updated, line)
                )))
            }
            EditorCommand::Insert => {
                let line = args.insert_line.ok_or(EditRefused::Missing {
                    command: "insert",
                    argument: "insert_line",
                })?;
                let new = args.new_str.as_deref().ok_or(EditRefused::Missing {
                    command: "insert",
                    argument: "new_str",
                })?;
                let (dir, rest) = self.paths.beneath(&path, false)?;
                let text = read(&dir, &rest, &shown)?;
                let updated = insert_after(&text, line, new, &shown)?;
                let line = usize::try_from(line).unwrap_or(usize::MAX);
                write(&dir, &rest, &shown, &updated)?;
                self.remember(&path, Some(text));
                Ok(edited(format!(
                    "Inserted {} line(s) after line {line} of {shown}.\n{}",
                    new.lines().count().max(1),
                    snippet(&updated, line + 1)
                )))
            }
            EditorCommand::UndoEdit => {
                let previous = self
                    .history
                    .get_mut(&path)
                    .and_then(Vec::pop)
                    .ok_or_else(|| EditRefused::NothingToUndo(shown.clone()))?;
                let (dir, rest) = self.paths.beneath(&path, false)?;
                match previous {
                    Some(text) => write(&dir, &rest, &shown, &text)?,
                    None => dir.remove_file(&rest).map_err(|source| EditRefused::Io {
                        action: "remove",
                        shown: shown.clone(),
                        source,
                    })?,
                }
                Ok(edited(format!("Undid the last edit of {shown}.")))
            }
        }
    }

    fn remember(&mut self, path: &Path, previous: Option<String>) {
        let stack = self.history.entry(path.to_owned()).or_default();
        stack.push(previous);
        if stack.len() > MAX_UNDO {
            stack.remove(0);
        }
    }
}

/// `text` with the one occurrence of `old` replaced by `new`, and where it was; refused when
/// `old` occurs never or more than once. The editor and the review preview share it, so what a
/// researcher reviews is what the edit writes.
pub fn replace_once(
    text: &str,
    old: &str,
    new: &str,
    shown: &str,
) -> Result<(String, usize), EditRefused> {
    if old.is_empty() {
        return Err(EditRefused::EmptyOldStr);
    }
    let starts: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
    match starts.as_slice() {
        [] => Err(EditRefused::OldStrMissing(shown.to_owned())),
        [at] => Ok((
            format!("{}{new}{}", &text[..*at], &text[at + old.len()..]),
            *at,
        )),
        many => {
            let lines: Vec<String> = many.iter().map(|i| line_of(text, *i).to_string()).collect();
            Err(EditRefused::OldStrRepeated {
                shown: shown.to_owned(),
                count: many.len(),
                lines: lines.join(", "),
            })
        }
    }
}

/// `text` with `new` inserted after line `line` (0: at the top), as its own line(s). Shared
/// with the review preview, like [`replace_once`].
pub fn insert_after(text: &str, line: u64, new: &str, shown: &str) -> Result<String, EditRefused> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let line = usize::try_from(line).unwrap_or(usize::MAX);
    if line > lines.len() {
        return Err(EditRefused::LineOutOfRange {
            shown: shown.to_owned(),
            lines: lines.len(),
        });
    }
    let mut inserted = new.to_owned();
    if !inserted.ends_with('\n') {
        inserted.push('\n');
    }
    let mut before: String = lines[..line].concat();
    if !before.is_empty() && !before.ends_with('\n') {
        before.push('\n');
    }
    Ok(format!("{before}{inserted}{}", lines[line..].concat()))
}

fn read(dir: &Beneath, rest: &Path, shown: &str) -> Result<String, EditRefused> {
    let unreadable = |source| EditRefused::Io {
        action: "read",
        shown: shown.to_owned(),
        source,
    };
    let meta = dir.metadata(rest).map_err(unreadable)?;
    if meta.is_symlink() {
        // A link that stays in the project: what it names is read, as the kernel resolves it.
        let file = dir.open_read(rest).map_err(unreadable)?;
        let target = file.metadata().map_err(unreadable)?;
        if !target.is_file() {
            return Err(EditRefused::NotFile(shown.to_owned()));
        }
    } else if !meta.is_file() {
        return Err(EditRefused::NotFile(shown.to_owned()));
    }
    let bytes = dir.read(rest, MAX_FILE_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::FileTooLarge {
            EditRefused::TooLarge {
                shown: shown.to_owned(),
                limit: MAX_FILE_BYTES,
            }
        } else {
            unreadable(e)
        }
    })?;
    String::from_utf8(bytes).map_err(|_| EditRefused::NotText(shown.to_owned()))
}

fn write(dir: &Beneath, rest: &Path, shown: &str, text: &str) -> Result<(), EditRefused> {
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(EditRefused::ContentTooLarge(MAX_FILE_BYTES));
    }
    dir.write(rest, text.as_bytes())
        .map_err(|source| EditRefused::Io {
            action: "write",
            shown: shown.to_owned(),
            source,
        })
}

fn view(
    dir: &Beneath,
    rest: &Path,
    shown: &str,
    range: Option<&[i64]>,
) -> Result<Observation, EditRefused> {
    let is_dir = dir
        .open_read(rest)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.is_dir());
    if is_dir {
        return Ok(Observation::ok(list_dir(dir, rest, shown)));
    }
    let text = read(dir, rest, shown)?;
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = match range {
        None => (1, lines.len()),
        Some([start, end]) => {
            let end = if *end == -1 { lines.len() as i64 } else { *end };
            if *start < 1 || end < *start || end > lines.len() as i64 {
                return Err(EditRefused::ViewRange(lines.len()));
            }
            (*start as usize, end as usize)
        }
        Some(_) => return Err(EditRefused::ViewRangeShape),
    };
    let mut out = format!("{shown}, lines {start}-{end} of {}:\n", lines.len());
    for (i, line) in lines.iter().enumerate().take(end).skip(start - 1) {
        out.push_str(&format!("{:>6}\t{line}\n", i + 1));
        if out.len() > MAX_VIEW_CHARS {
            out.push_str(&format!(
                "[view truncated at line {}; use view_range to see the rest]\n",
                i + 1
            ));
            break;
        }
    }
    Ok(Observation::ok(out))
}

fn list_dir(dir: &Beneath, rest: &Path, shown: &str) -> String {
    let mut out =
        format!("Files and directories in {shown}, two levels deep (hidden entries left out):\n");
    for entry in visible_entries(dir, rest).iter().take(500) {
        let name = entry.name.to_string_lossy();
        if entry.is_dir {
            out.push_str(&format!("{name}/\n"));
            for child in visible_entries(dir, &rest.join(&entry.name))
                .iter()
                .take(200)
            {
                let slash = if child.is_dir { "/" } else { "" };
                out.push_str(&format!(
                    "  {name}/{}{slash}\n",
                    child.name.to_string_lossy()
                ));
            }
        } else {
            out.push_str(&format!("{name}\n"));
        }
    }
    out
}

/// The entries of `rest` that are not hidden, sorted by name.
fn visible_entries(dir: &Beneath, rest: &Path) -> Vec<Entry> {
    dir.read_dir(rest)
        .map(|entries| {
            entries
                .into_iter()
                .filter(|e| !e.name.to_string_lossy().starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

/// The 1-based line number of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

fn snippet(text: &str, around: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let from = around.saturating_sub(3).max(1);
    let to = (around + 3).min(lines.len());
    (from..=to)
        .filter_map(|n| lines.get(n - 1).map(|l| format!("{n:>6}\t{l}\n")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn editor() -> (tempfile::TempDir, FileEditor) {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = ProjectPaths::new(dir.path()).expect("paths");
        (dir, FileEditor::new(paths))
    }

    fn args(command: EditorCommand, path: &str) -> EditorArgs {
        EditorArgs {
            command,
            path: path.into(),
            file_text: None,
            old_str: None,
            new_str: None,
            insert_line: None,
            view_range: None,
        }
    }

    /// A link committed in the project that names a place outside it (dangling, so nothing
    /// resolves it first) or Heartwood's own state: an approved `create` or edit must not
    /// write through it.
    #[test]
    fn edits_never_write_through_a_link_dangling_or_not() {
        let (dir, mut ed) = editor();
        let outside = tempfile::tempdir().expect("outside");
        let planted = outside.path().join("planted.txt");
        std::os::unix::fs::symlink(&planted, dir.path().join("report.md")).expect("link");
        std::fs::create_dir(dir.path().join(".heartwood")).expect("state");
        std::os::unix::fs::symlink(".heartwood/new.json", dir.path().join("state.json"))
            .expect("link");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).expect("link");
        for path in ["report.md", "state.json", "out/x.txt"] {
            let created = ed.run(&EditorArgs {
                file_text: Some("written".into()),
                ..args(EditorCommand::Create, path)
            });
            assert!(created.is_error, "{path}: {}", created.content);
        }
        assert!(!planted.exists(), "nothing was written outside the project");
        assert!(!outside.path().join("x.txt").exists());
        assert!(!dir.path().join(".heartwood/new.json").exists());
        // The control: an ordinary create beside them works.
        let ok = ed.run(&EditorArgs {
            file_text: Some("fine".into()),
            ..args(EditorCommand::Create, "notes.md")
        });
        assert!(!ok.is_error, "{}", ok.content);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.md")).expect("read"),
            "fine"
        );
    }

    #[test]
    fn create_replace_insert_view_and_undo() {
        let (dir, mut ed) = editor();
        let created = ed.run(&EditorArgs {
            file_text: Some("a\nb\nb\n".into()),
            ..args(EditorCommand::Create, "notes/x.txt")
        });
        assert!(!created.is_error, "{}", created.content);
        assert_eq!(created.changed_path.as_deref(), Some("notes/x.txt"));
        let again = ed.run(&EditorArgs {
            file_text: Some("z".into()),
            ..args(EditorCommand::Create, "notes/x.txt")
        });
        assert!(again.is_error && again.content.contains("already exists"));

        let twice = ed.run(&EditorArgs {
            old_str: Some("b".into()),
            new_str: Some("c".into()),
            ..args(EditorCommand::StrReplace, "notes/x.txt")
        });
        assert!(
            twice.is_error
                && twice.content.contains("2 times")
                && twice.content.contains("lines 2, 3"),
            "{}",
            twice.content
        );
        let none = ed.run(&EditorArgs {
            old_str: Some("q".into()),
            new_str: Some("c".into()),
            ..args(EditorCommand::StrReplace, "notes/x.txt")
        });
        assert!(none.is_error && none.content.contains("does not occur"));
        let once = ed.run(&EditorArgs {
            old_str: Some("a\n".into()),
            new_str: Some("A\n".into()),
            ..args(EditorCommand::StrReplace, "notes/x.txt")
        });
        assert!(!once.is_error, "{}", once.content);
        let inserted = ed.run(&EditorArgs {
            insert_line: Some(1),
            new_str: Some("inserted".into()),
            ..args(EditorCommand::Insert, "notes/x.txt")
        });
        assert!(!inserted.is_error, "{}", inserted.content);
        let file = dir.path().join("notes/x.txt");
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            "A\ninserted\nb\nb\n"
        );

        let view = ed.run(&EditorArgs {
            view_range: Some(vec![2, -1]),
            ..args(EditorCommand::View, "notes/x.txt")
        });
        assert!(
            view.content.contains("     2\tinserted\n     3\tb\n"),
            "{}",
            view.content
        );
        let listing = ed.run(&args(EditorCommand::View, "."));
        assert!(
            listing.content.contains("notes/\n  notes/x.txt\n"),
            "{}",
            listing.content
        );

        for expected in ["A\nb\nb\n", "a\nb\nb\n"] {
            assert!(
                !ed.run(&args(EditorCommand::UndoEdit, "notes/x.txt"))
                    .is_error
            );
            assert_eq!(std::fs::read_to_string(&file).expect("read"), expected);
        }
        assert!(
            !ed.run(&args(EditorCommand::UndoEdit, "notes/x.txt"))
                .is_error
        );
        assert!(!file.exists(), "undoing the create removes the file");
        assert!(
            ed.run(&args(EditorCommand::UndoEdit, "notes/x.txt"))
                .is_error
        );
    }

    #[test]
    fn private_state_and_outside_paths_are_refused() {
        let (_dir, mut ed) = editor();
        for path in [
            ".heartwood/sessions/x/events.jsonl",
            ".git/config",
            "../outside.txt",
            "/etc/passwd",
        ] {
            let out = ed.run(&EditorArgs {
                file_text: Some("x".into()),
                ..args(EditorCommand::Create, path)
            });
            assert!(out.is_error, "{path} was accepted");
        }
    }
}
