//! `heartwood workspace`: the project's files through the gateway's read-only workspace service.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::workspace::{
    ChangeLimits, DiffLimits, DiffStatus, EntryKind, TextLimits, TextStatus, TreeLimits,
    WorkspaceService,
};
use serde::Serialize;

/// `heartwood workspace …`
#[derive(Subcommand)]
pub enum WorkspaceCommand {
    /// List the project's files (links are shown, never followed).
    Tree {
        /// Where to start (default: the whole project).
        path: Option<String>,
        /// Most entries to list.
        #[arg(long, default_value_t = TreeLimits::default().max_entries)]
        max_entries: usize,
        /// Deepest level to list.
        #[arg(long, default_value_t = TreeLimits::default().max_depth)]
        depth: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a UTF-8 text file.
    Show {
        /// The file, relative to the project folder.
        path: String,
        /// First line to show.
        #[arg(long, default_value_t = 1)]
        from: usize,
        /// Most lines to show.
        #[arg(long, default_value_t = TextLimits::default().max_lines)]
        lines: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// What changed: against HEAD in a Git project, else the session's file edits; with
    /// --session, what that session's file edits changed (in Git too).
    Changes {
        /// The session whose file edits count (without Git the default is the latest; in Git,
        /// without it every change against HEAD is listed).
        #[arg(long)]
        session: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One file's changes against HEAD, as a unified diff; with --session, what a session's
    /// file edits changed, edit by edit (for projects that are not Git repositories).
    Diff {
        /// The file, relative to the project folder (with --session: only its edits).
        #[arg(required_unless_present = "session")]
        path: Option<String>,
        /// Show a session's edits from its verified record instead (default: the latest).
        #[arg(long, value_name = "SESSION", num_args = 0..=1, default_missing_value = "last")]
        session: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a workspace command.
pub fn run(project: &ProjectContext, command: WorkspaceCommand) -> Result<ExitCode> {
    let service = WorkspaceService::open(project)?;
    match command {
        WorkspaceCommand::Tree {
            path,
            max_entries,
            depth,
            json,
        } => tree(&service, path.as_deref(), max_entries, depth, json),
        WorkspaceCommand::Show {
            path,
            from,
            lines,
            json,
        } => show(&service, &path, from, lines, json),
        WorkspaceCommand::Changes { session, json } => changes(&service, session.as_deref(), json),
        WorkspaceCommand::Diff {
            path,
            session: Some(session),
            json,
        } => session_diff(&service, &session, path.as_deref(), json),
        WorkspaceCommand::Diff {
            path: Some(path),
            session: None,
            json,
        } => diff(&service, &path, json),
        WorkspaceCommand::Diff {
            path: None,
            session: None,
            ..
        } => anyhow::bail!("name a file, or give --session to see a session's edits"),
    }
}

/// `workspace tree`: the project's files as an indented list, within the limits given.
fn tree(
    service: &WorkspaceService,
    path: Option<&str>,
    max_entries: usize,
    depth: usize,
    json: bool,
) -> Result<ExitCode> {
    let limits = TreeLimits {
        max_entries,
        max_depth: depth,
    };
    let tree = service.tree(path.unwrap_or(""), limits)?;
    if json {
        return print_json(&tree);
    }
    for entry in &tree.entries {
        let depth = entry.path.components().count() - tree.root.components().count();
        let name = entry.path.components().last().unwrap_or_default();
        let indent = "  ".repeat(depth.saturating_sub(1));
        match (entry.kind, entry.size) {
            (EntryKind::Dir, _) => say!("{indent}{name}/"),
            (EntryKind::File, Some(size)) => say!("{indent}{name}  ({size} B)"),
            (EntryKind::File, None) => say!("{indent}{name}"),
            (EntryKind::Symlink, _) => {
                say!("{indent}{name}  (symbolic link, not followed)")
            }
            (EntryKind::Special, _) => say!("{indent}{name}  (special file, not read)"),
        }
    }
    say!(
        "\n{} entries (limits: {} entries, depth {}){}{}{}",
        tree.entries.len(),
        tree.limits.max_entries,
        tree.limits.max_depth,
        if tree.truncated {
            "; more entries not shown"
        } else {
            ""
        },
        if tree.depth_limited > 0 {
            format!(
                "; {} directories deeper than the limit not listed",
                tree.depth_limited
            )
        } else {
            String::new()
        },
        if tree.unsupported_names > 0 {
            format!(
                "; {} name(s) not shown: not UTF-8, or holding a control character or a \
                 backslash",
                tree.unsupported_names
            )
        } else {
            String::new()
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `workspace show`: a text file's lines from `from`, bounded.
fn show(
    service: &WorkspaceService,
    path: &str,
    from: usize,
    lines: usize,
    json: bool,
) -> Result<ExitCode> {
    let limits = TextLimits {
        max_lines: lines,
        ..TextLimits::default()
    };
    let file = service.text(path, from, limits)?;
    if json {
        return print_json(&file);
    }
    if file.status == TextStatus::Binary {
        say!(
            "{} is binary ({} bytes); it is not shown",
            file.path,
            file.size
        );
        return Ok(ExitCode::SUCCESS);
    }
    say_raw!("{}", file.content);
    if file.truncated {
        eprintln!(
            "[lines {}–{} shown; the file goes on (limits: {} lines, {} bytes); use --from]",
            file.first_line,
            file.first_line + file.lines.saturating_sub(1),
            file.limits.max_lines,
            file.limits.max_bytes
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `workspace changes`: what changed since the last commit (or in a session without Git).
fn changes(service: &WorkspaceService, session: Option<&str>, json: bool) -> Result<ExitCode> {
    let report = service.changes(session, ChangeLimits::default())?;
    if json {
        return print_json(&report);
    }
    say!("{}:", report.summary);
    for change in &report.changes.changes {
        let mark = change.kind.mark();
        match &change.from {
            Some(from) => say!("{mark} {from} -> {}", change.path),
            None => say!("{mark} {}", change.path),
        }
    }
    if report.changes.truncated {
        say!(
            "(more changes not shown; limit {} paths)",
            report.changes.limits.max_paths
        );
    }
    if report.changes.excluded > 0 {
        say!(
            "({} changed path(s) not shown: inside .heartwood/, outside the project, or \
             with a name that is not UTF-8 or holds a control character)",
            report.changes.excluded
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `workspace diff PATH`: one file against its committed version.
fn diff(service: &WorkspaceService, path: &str, json: bool) -> Result<ExitCode> {
    let diff = service.diff(path, DiffLimits::default())?;
    if json {
        return print_json(&diff);
    }
    match diff.status {
        DiffStatus::Changed => {
            say_raw!("{}", diff.unified);
            if diff.truncated {
                eprintln!("[diff cut at {} lines]", diff.limits.max_lines);
            }
        }
        DiffStatus::Unchanged => say!("{} is unchanged since HEAD", diff.path),
        DiffStatus::Binary => say!("{} is binary; no line diff", diff.path),
        DiffStatus::TooLarge => say!(
            "{} is larger than {} bytes; no line diff",
            diff.path,
            diff.limits.max_bytes
        ),
        DiffStatus::NotGit => say!(
            "not a Git project: there is no committed version of {} to compare with; \
             `heartwood workspace diff --session` shows what a session's edits changed",
            diff.path
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what a session's file edits changed, edit by edit.
fn session_diff(
    service: &WorkspaceService,
    session: &str,
    path: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let (id, edits) = service.session_diff(session, path)?;
    if json {
        return print_json(&serde_json::json!({"session": id, "edits": edits}));
    }
    let what = path.map(|p| format!(" of {p}")).unwrap_or_default();
    if edits.is_empty() {
        say!("session {id} made no file edits{what}");
        return Ok(ExitCode::SUCCESS);
    }
    say!(
        "session {id}: {} file edit{}{what}, in the order they ran",
        edits.len(),
        if edits.len() == 1 { "" } else { "s" }
    );
    for edit in &edits {
        say!("\n{}", edit.heading());
        say_raw!("{}", edit.unified);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_json(value: &impl Serialize) -> Result<ExitCode> {
    say!("{}", serde_json::to_string_pretty(value)?);
    Ok(ExitCode::SUCCESS)
}
