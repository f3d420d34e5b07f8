//! The review of a pending set: each member's headline (the one every interface shows) and a
//! preview of exactly what it would do, computed once when the set is shown and never by
//! running anything.
//!
//! Edits are previewed with the editor's own edit functions
//! ([`heartwood_agent::tools::replace_once`], [`heartwood_agent::tools::insert_after`]) over the
//! file's current bytes read through the confined workspace reader, so what a researcher reviews
//! is what the edit would write. A diff records the digest of the bytes it was computed against;
//! [`stale`] says when the file has changed since, and the gateway then shows the set again.

use heartwood_agent::tools::{
    EditRefused, EditorArgs, EditorCommand, ProjectPaths, TaskTrackerArgs, TerminalArgs,
    ToolCallRequest, insert_after, replace_once,
};
use heartwood_events::{
    ActionProposal, ActionSet, MemberReview, PlanStatus, PlanTask, Preview, Review, SandboxLevel,
};
use heartwood_workspace::{EvidenceError, ProjectPath, Workspace};

/// The most lines of a created file or a diff a preview carries; the rest is counted.
pub const PREVIEW_LINES: usize = 400;

/// The largest file an edit preview reads (the editor's own limit).
pub const PREVIEW_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The line every interface shows for an action: the model's own summary when it gave one,
/// else what the call does, on one line.
pub fn headline(tool: &str, arguments: &str) -> String {
    visible(&described(tool, arguments))
}

/// `text` with every character that could move the cursor, recolour or rewrite a terminal
/// line, or reorder what a reader sees (control characters but the newline and tab, and the
/// bidirectional and zero-width format characters) written as a visible escape (`\e`, `\r`,
/// `\u{202e}`): what a researcher is asked to allow is shown as it will run, never as it
/// would paint.
pub fn visible(text: &str) -> String {
    let hidden = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    if !text.chars().any(hidden) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| match c {
            '\u{1b}' => "\\e".to_owned(),
            '\r' => "\\r".to_owned(),
            c if hidden(c) => format!("\\u{{{:x}}}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

fn described(tool: &str, arguments: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    let field = |k: &str| value.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    let summary = field(heartwood_agent::tools::SUMMARY_ARGUMENT).trim();
    if !summary.is_empty() {
        return one_line(summary, 160);
    }
    let described = match tool {
        "terminal" => {
            let command = field("command");
            let lines = command.lines().count();
            let first = command.lines().next().unwrap_or_default();
            if lines > 1 {
                format!("run `{first}` … ({lines} lines)")
            } else {
                format!("run `{first}`")
            }
        }
        "file_editor" => {
            let path = field("path");
            match field("command") {
                "view" => format!("read {path}"),
                "create" => format!(
                    "create {path} ({} lines)",
                    field("file_text").lines().count()
                ),
                "str_replace" => format!("edit {path}"),
                "insert" => format!("insert into {path}"),
                "undo_edit" => format!("undo the last edit of {path}"),
                other => format!("file_editor {other} {path}"),
            }
        }
        "task_tracker" => match value.get("task_list").and_then(|v| v.as_array()) {
            Some(tasks) => format!("plan {} steps", tasks.len()),
            None => "show the task plan".to_owned(),
        },
        // Markdown in a one-line label would show as markup: its text only.
        "finish" => format!("finish: {}", plain_text(field("message"))),
        "think" => format!("think: {}", plain_text(field("thought"))),
        "task" => format!(
            "ask the {} specialist: {}",
            field("subagent_type"),
            field("description")
        ),
        other => format!("{other} {arguments}"),
    };
    one_line(&described, 160)
}

/// The text of some Markdown, without its markup.
fn plain_text(markdown: &str) -> String {
    crate::markdown::blocks(markdown)
        .iter()
        .map(|block| match block {
            heartwood_events::Block::Heading { spans, .. }
            | heartwood_events::Block::Paragraph { spans }
            | heartwood_events::Block::Quote { spans } => {
                spans.iter().map(|s| s.text.as_str()).collect::<String>()
            }
            heartwood_events::Block::List { items, .. } => items
                .iter()
                .map(|item| item.iter().map(|s| s.text.as_str()).collect::<String>())
                .collect::<Vec<_>>()
                .join("; "),
            heartwood_events::Block::Code { text, .. } => text.clone(),
            heartwood_events::Block::Rule => String::new(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` on one line, at most `max` characters (an ellipsis marks a cut).
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// The review of `set` against the project's files now.
pub fn review(
    project: &camino::Utf8Path,
    workspace: Option<&Workspace>,
    set: &ActionSet,
) -> Review {
    let paths = ProjectPaths::new(project.as_std_path()).ok();
    let hosts = reachable_hosts(project);
    Review {
        set_id: set.set_id.clone(),
        revision: set.revision,
        members: set
            .members
            .iter()
            .map(|member| MemberReview {
                action_id: member.action_id,
                tool: member.tool.clone(),
                headline: headline(&member.tool, &member.arguments),
                risk: member.risk,
                predicted_risk: predicted_risk(member),
                sandbox: member.sandbox,
                preview: preview(paths.as_ref(), workspace, &hosts, member),
            })
            .collect(),
    }
}

/// The review of `set` against `project`'s files now, opening the project's confined reader
/// for it (an interface that already serves the session gets reviews in its snapshots).
pub fn review_in(project: &crate::ProjectContext, set: &ActionSet) -> Review {
    let workspace = Workspace::open(project.root()).ok();
    review(project.root(), workspace.as_ref(), set)
}

/// The hosts this project's confined commands may reach: the project's and its platform's
/// `network` lists, read as the terminal tool's environment reads them (none where the
/// configuration cannot be read: the tool then has no network either).
fn reachable_hosts(project: &camino::Utf8Path) -> Vec<String> {
    let Ok(context) = heartwood_project::ProjectContext::at(project.as_std_path()) else {
        return Vec::new();
    };
    let Ok(config) = heartwood_project::config::ProjectConfig::load(&context) else {
        return Vec::new();
    };
    let Ok(platform) = config.platform() else {
        return Vec::new();
    };
    config.tool_env(&platform).network().hosts().to_vec()
}

fn predicted_risk(member: &ActionProposal) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(&member.arguments).ok()?;
    value
        .get(heartwood_agent::tools::SECURITY_RISK_ARGUMENT)?
        .as_str()
        .map(str::to_owned)
}

fn preview(
    paths: Option<&ProjectPaths>,
    workspace: Option<&Workspace>,
    hosts: &[String],
    member: &ActionProposal,
) -> Preview {
    let request = match ToolCallRequest::parse(&member.tool, &member.arguments) {
        Ok(request) => request,
        Err(refused) => {
            return Preview::WouldFail {
                reason: refused.to_string(),
            };
        }
    };
    match request {
        ToolCallRequest::Terminal(TerminalArgs {
            command,
            is_input,
            timeout,
            reset,
            ..
        }) => {
            let timeout_secs = timeout.map(|t| t.max(0.0).round() as u64);
            let mut context = vec![
                "in the project folder (an earlier cd in this shell still applies)".to_owned(),
            ];
            // Where it runs is part of what is allowed: every interface shows it with the command.
            if let Some(level) = member.sandbox {
                context.push(level.label().to_owned());
            }
            // What it may reach is allowed with it; an unsandboxed command's label says it has
            // the whole network.
            let confined = member
                .sandbox
                .is_some_and(|level| level != SandboxLevel::Unsandboxed);
            let hosts = if confined { hosts.to_vec() } else { Vec::new() };
            if confined {
                context.push(match hosts.as_slice() {
                    [] => "named hosts: none".to_owned(),
                    named => format!(
                        "named hosts: {} (through Heartwood's proxy)",
                        named.join(", ")
                    ),
                });
            }
            if is_input {
                context.push("sent to the program already running".to_owned());
            }
            if reset {
                context.push("after restarting the shell".to_owned());
            }
            if let Some(t) = timeout_secs {
                context.push(format!("waits up to {t} s"));
            }
            if visible(&command) != command {
                context.push(
                    "the command holds control or invisible characters, shown escaped".to_owned(),
                );
            }
            Preview::Command {
                command: visible(&command),
                working_directory: ".".to_owned(),
                input: is_input,
                reset,
                timeout_secs,
                hosts,
                context: context.join(" · "),
            }
        }
        ToolCallRequest::FileEditor(args) => match (paths, workspace) {
            (Some(paths), Some(workspace)) => edit_preview(paths, workspace, &args),
            _ => Preview::WouldFail {
                reason: "the project folder cannot be read, so the edit cannot be previewed"
                    .to_owned(),
            },
        },
        ToolCallRequest::TaskTracker(TaskTrackerArgs::View) => Preview::Read {
            path: "the task plan".to_owned(),
            range: None,
        },
        ToolCallRequest::TaskTracker(TaskTrackerArgs::Plan { task_list }) => Preview::Plan {
            tasks: task_list
                .iter()
                .map(|t| PlanTask {
                    title: t.title.clone(),
                    notes: t.notes.clone(),
                    status: match t.status {
                        heartwood_agent::tools::TaskStatus::Todo => PlanStatus::Todo,
                        heartwood_agent::tools::TaskStatus::InProgress => PlanStatus::InProgress,
                        heartwood_agent::tools::TaskStatus::Done => PlanStatus::Done,
                    },
                })
                .collect(),
        },
        ToolCallRequest::Think { thought } => Preview::Note {
            text: visible(&thought),
        },
        ToolCallRequest::Finish { message, .. } => Preview::Note {
            text: visible(&message),
        },
        // The whole prompt: it is all the specialist will see, and it leaves the project.
        ToolCallRequest::Task {
            subagent_type,
            prompt,
            ..
        } => Preview::Note {
            text: format!(
                "The {subagent_type} specialist (advisory, no tools, the same model route) \
                 is sent this and nothing else:\n\n{prompt}"
            ),
        },
    }
}

fn edit_preview(paths: &ProjectPaths, workspace: &Workspace, args: &EditorArgs) -> Preview {
    let fail = |reason: String| Preview::WouldFail { reason };
    let (absolute, shown) = match paths.resolve(&args.path) {
        Ok(resolved) => resolved,
        Err(refused) => return fail(refused.to_string()),
    };
    match args.command {
        EditorCommand::View => Preview::Read {
            path: shown,
            range: args.view_range.clone(),
        },
        EditorCommand::Create => {
            let Some(text) = args.file_text.as_deref() else {
                return fail("`create` needs `file_text`".to_owned());
            };
            if absolute.exists() {
                return fail(format!(
                    "{shown} already exists; `create` refuses to replace a file"
                ));
            }
            let (content, omitted_lines) = first_lines(text, PREVIEW_LINES);
            Preview::Create {
                path: shown,
                content,
                lines: text.lines().count(),
                omitted_lines,
            }
        }
        EditorCommand::StrReplace | EditorCommand::Insert => {
            let (current, sha256) = match read_current(workspace, &shown) {
                Ok(read) => read,
                Err(unreadable) => return fail(unreadable.to_string()),
            };
            let updated = match args.command {
                EditorCommand::StrReplace => replace_once(
                    &current,
                    args.old_str.as_deref().unwrap_or_default(),
                    args.new_str.as_deref().unwrap_or_default(),
                    &shown,
                )
                .map(|(text, _)| text),
                _ => match (args.insert_line, args.new_str.as_deref()) {
                    (Some(line), Some(new)) => insert_after(&current, line, new, &shown),
                    (None, _) => Err(EditRefused::Missing {
                        command: "insert",
                        argument: "insert_line",
                    }),
                    (_, None) => Err(EditRefused::Missing {
                        command: "insert",
                        argument: "new_str",
                    }),
                },
            };
            match updated {
                Ok(updated) => diff_preview(shown, sha256, &current, &updated),
                Err(refused) => fail(refused.to_string()),
            }
        }
        EditorCommand::UndoEdit => match read_current(workspace, &shown) {
            // The text it goes back to is in the agent's own undo history, not in the project.
            Ok((_, sha256)) => Preview::Diff {
                path: shown,
                sha256,
                unified: String::new(),
                added: 0,
                removed: 0,
                omitted_lines: 0,
            },
            Err(unreadable) => fail(unreadable.to_string()),
        },
    }
}

/// Why a preview could not read the file an edit would change (the preview then says the edit
/// would fail, and why).
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    /// Not a file path of the project.
    #[error(transparent)]
    Path(#[from] heartwood_workspace::PathError),
    /// The confined reader refused it or failed.
    #[error("{shown} cannot be read: {source}")]
    Read {
        shown: String,
        source: EvidenceError,
    },
    /// Not text.
    #[error("{0} is not UTF-8 text, so the editor cannot change it")]
    NotText(String),
}

/// The file's current text and the digest of its bytes, through the confined reader.
fn read_current(workspace: &Workspace, shown: &str) -> Result<(String, String), Unreadable> {
    let path = ProjectPath::parse_file(shown)?;
    let (bytes, digest) = workspace
        .read_evidence(&path, PREVIEW_FILE_BYTES)
        .map_err(|source| Unreadable::Read {
            shown: shown.to_owned(),
            source,
        })?;
    let text = String::from_utf8(bytes).map_err(|_| Unreadable::NotText(shown.to_owned()))?;
    Ok((text, digest.sha256))
}

/// Lines of context around each change in a diff.
const CONTEXT: usize = 3;

fn diff_preview(path: String, sha256: String, current: &str, updated: &str) -> Preview {
    // An edit changes a few lines of a file that may be large: diff only the window between
    // the common first and last lines (with context), and number its lines from where it sits.
    let (skipped, old, new) = window(current, updated, CONTEXT);
    let diff = similar::TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    let mut unified = format!("--- a/{path}\n+++ b/{path}\n");
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (old_from, old_to) = (first.old_range().start, last.old_range().end);
        let (new_from, new_to) = (first.new_range().start, last.new_range().end);
        unified.push_str(&format!(
            "@@ -{} +{} @@\n",
            hunk_range(skipped + old_from, old_to - old_from),
            hunk_range(skipped + new_from, new_to - new_from)
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Insert => {
                        added += 1;
                        '+'
                    }
                    similar::ChangeTag::Delete => {
                        removed += 1;
                        '-'
                    }
                    similar::ChangeTag::Equal => ' ',
                };
                unified.push(sign);
                unified.push_str(change.value());
                if change.missing_newline() {
                    unified.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    let (unified, omitted_lines) = first_lines(&unified, PREVIEW_LINES);
    Preview::Diff {
        path,
        sha256,
        unified,
        added,
        removed,
        omitted_lines,
    }
}

/// A unified diff's range: the first line (1-based; the line before an empty range) and the
/// count.
fn hunk_range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

/// The lines where `old` and `new` differ, with `context` unchanged lines each side: how many
/// whole lines come before the window, and the window of each.
fn window<'a>(old: &'a str, new: &'a str, context: usize) -> (usize, &'a str, &'a str) {
    let common_prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    // Back to the start of the line the first difference is on, then `context` lines more.
    let mut start = old[..common_prefix].rfind('\n').map_or(0, |i| i + 1);
    for _ in 0..context {
        if start == 0 {
            break;
        }
        start = old[..start - 1].rfind('\n').map_or(0, |i| i + 1);
    }
    let room = old.len().min(new.len()) - start;
    let common_suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    // Forward to the end of the line the last difference is on, then `context` lines more.
    let mut old_end = old.len() - common_suffix;
    let mut new_end = new.len() - common_suffix;
    for _ in 0..=context {
        match old[old_end..].find('\n') {
            Some(i) => {
                old_end += i + 1;
                new_end += i + 1;
            }
            _ => {
                new_end += old.len() - old_end;
                old_end = old.len();
                break;
            }
        }
        if old_end == old.len() {
            break;
        }
    }
    let skipped = old[..start].matches('\n').count();
    (skipped, &old[start..old_end], &new[start..new_end])
}

/// The first `max` lines of `text` and how many were left out.
fn first_lines(text: &str, max: usize) -> (String, usize) {
    let total = text.lines().count();
    if total <= max {
        return (text.to_owned(), 0);
    }
    let kept: String = text.split_inclusive('\n').take(max).collect();
    (kept, total - max)
}

/// The files whose bytes changed since `review` previewed them (a diff computed against other
/// bytes would mislead the decision).
pub fn stale(workspace: Option<&Workspace>, review: &Review) -> Vec<String> {
    let Some(workspace) = workspace else {
        return Vec::new();
    };
    review
        .members
        .iter()
        .filter_map(|m| match &m.preview {
            Preview::Diff { path, sha256, .. } => {
                let now = ProjectPath::parse_file(path)
                    .ok()
                    .and_then(|p| workspace.digest(&p).ok());
                (now.map(|d| d.sha256).as_ref() != Some(sha256)).then(|| path.clone())
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command that paints over itself (a carriage return and an erase-line after the part
    /// that does harm) is shown as it runs, in its headline and its preview.
    #[test]
    fn control_characters_are_shown_escaped_never_painted() {
        let arguments = serde_json::json!({
            "command": "echo safe; touch EVIL\r\u{1b}[2Kls -la # \u{202e}list"
        })
        .to_string();
        let line = headline("terminal", &arguments);
        assert!(
            line.contains("touch EVIL \\e[2Kls") && line.contains("\\u{202e}"),
            "{line}"
        );
        assert!(!line.contains('\u{1b}') && !line.contains('\r'), "{line:?}");
        assert_eq!(visible("plain text\n\tok"), "plain text\n\tok");
        assert_eq!(visible("a\rb\u{7}"), "a\\rb\\u{7}");
    }

    #[test]
    fn the_models_summary_is_the_headline_and_long_commands_say_how_long_they_are() {
        assert_eq!(
            headline(
                "terminal",
                r#"{"command": "ls", "summary": "list  the\nproject"}"#
            ),
            "list the project"
        );
        assert_eq!(
            headline("terminal", r#"{"command": "cd data\nrm -rf raw"}"#),
            "run `cd data` … (2 lines)"
        );
        assert_eq!(
            headline(
                "file_editor",
                r#"{"command": "create", "path": "a.md", "file_text": "x\ny\n"}"#
            ),
            "create a.md (2 lines)"
        );
        assert!(
            headline(
                "think",
                &format!(r#"{{"thought": "{}"}}"#, "a ".repeat(200))
            )
            .ends_with('…')
        );
    }

    /// A confined command's preview names the hosts it may reach, as a field and in the line
    /// every interface shows; none is said as none; an unsandboxed one lists none.
    #[test]
    fn a_confined_commands_preview_names_the_hosts_it_may_reach() {
        let member = |sandbox| ActionProposal {
            action_id: 1,
            response_id: "r".into(),
            tool: "terminal".into(),
            arguments: r#"{"command": "pip download pandas"}"#.into(),
            risk: heartwood_events::RiskLevel::Unknown,
            thought: None,
            sandbox: Some(sandbox),
        };
        let hosts = vec!["pypi.org".to_owned()];
        let shown = |level, hosts: &[String]| match preview(None, None, hosts, &member(level)) {
            Preview::Command { hosts, context, .. } => (hosts, context),
            other => panic!("a command preview: {other:?}"),
        };
        let (named, context) = shown(SandboxLevel::ReadOnly, &hosts);
        assert_eq!(named, hosts);
        assert!(
            context.ends_with("named hosts: pypi.org (through Heartwood's proxy)"),
            "{context}"
        );
        let (named, context) = shown(SandboxLevel::ProjectWrite, &[]);
        assert!(named.is_empty());
        assert!(context.ends_with("named hosts: none"), "{context}");
        let (named, context) = shown(SandboxLevel::Unsandboxed, &hosts);
        assert!(named.is_empty());
        assert!(!context.contains("named hosts"), "{context}");
    }

    /// The diff of the window agrees with a diff of the whole files, line numbers included.
    #[test]
    fn a_windowed_diff_is_the_whole_files_diff() {
        let base: String = (1..=60).map(|i| format!("line {i}\n")).collect();
        let cases = [
            base.replace("line 30\n", "line thirty\n"),
            base.replace("line 1\n", "first\n"),
            base.replace("line 60\n", "last\n"),
            base.replace("line 10\n", ""),
            base.replace("line 20\n", "line 20\nnew a\nnew b\n"),
            base.replace("line 5\n", "five\n")
                .replace("line 50\n", "fifty\n"),
            format!("{base}tail without newline"),
            base.trim_end().to_owned(),
        ];
        for updated in cases {
            let Preview::Diff { unified, .. } =
                diff_preview("f".into(), String::new(), &base, &updated)
            else {
                panic!("a diff");
            };
            let whole = similar::TextDiff::from_lines(base.as_str(), updated.as_str())
                .unified_diff()
                .context_radius(CONTEXT)
                .header("a/f", "b/f")
                .to_string();
            assert_eq!(unified, whole, "for {updated:?}");
        }
    }
}
