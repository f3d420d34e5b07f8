//! Deterministic risk rules over a tool and its arguments. A rule either knows a call is low or
//! high risk, or the call is unknown; unknown is never treated as low.

use serde::{Deserialize, Serialize};

use super::ToolCallRequest;
use super::editor::EditorCommand;

/// How risky a call is, ordered from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// No rule knows this call.
    Unknown,
    /// Reads only, or changes only the agent's own notes.
    Low,
    /// Changes project files in a way the editor can undo.
    Medium,
    /// Destructive or reaching beyond the project.
    High,
}

/// Commands that only read.
const READ_ONLY: [&str; 18] = [
    "ls", "cat", "head", "tail", "wc", "pwd", "echo", "grep", "rg", "file", "stat", "du", "df",
    "sort", "uniq", "diff", "which", "tree",
];

/// Fragments that make a command high risk wherever they appear.
const DANGEROUS: [&str; 14] = [
    "rm -rf", "rm -fr", "sudo ", "mkfs", "dd if=", "> /dev/", "chmod -r", "chown -r", "curl ",
    "wget ", "ssh ", "scp ", "git push", ":(){",
];

/// Rates one call.
pub fn risk(request: &ToolCallRequest) -> Risk {
    match request {
        // A specialist reads only what it is given and acts on nothing.
        ToolCallRequest::Think { .. }
        | ToolCallRequest::Finish { .. }
        | ToolCallRequest::Task { .. }
        | ToolCallRequest::TaskTracker(_) => Risk::Low,
        ToolCallRequest::FileEditor(args) => match args.command {
            EditorCommand::View => Risk::Low,
            _ => Risk::Medium,
        },
        // Leaving the sandbox is the researcher's call, always.
        ToolCallRequest::Terminal(args) if args.asks_unsandboxed() => Risk::High,
        ToolCallRequest::Terminal(args) => terminal_risk(&args.command, args.is_input, args.reset),
    }
}

fn terminal_risk(command: &str, is_input: bool, reset: bool) -> Risk {
    if reset && command.trim().is_empty() {
        return Risk::Low;
    }
    let lower = command.to_ascii_lowercase();
    if DANGEROUS.iter().any(|d| lower.contains(d))
        || lower.contains("| sh")
        || lower.contains("| bash")
    {
        return Risk::High;
    }
    if is_input {
        return Risk::Unknown;
    }
    // Low only when every piece of a pipeline is a read-only command with no redirection.
    let plain = !lower.contains(['>', '`', '$', ';', '&']);
    let read_only = lower.split('|').all(|part| {
        let program = part.split_whitespace().next().unwrap_or("");
        READ_ONLY.contains(&program)
    });
    let git_read = ["git status", "git log", "git diff", "git show"]
        .iter()
        .any(|g| lower.trim_start().starts_with(g));
    if plain && (read_only || git_read) {
        Risk::Low
    } else {
        Risk::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(command: &str) -> Risk {
        terminal_risk(command, false, false)
    }

    #[test]
    fn terminal_commands_are_unknown_unless_a_rule_knows_them() {
        assert_eq!(term("ls -la data"), Risk::Low);
        assert_eq!(term("cat a.csv | head -5 | wc -l"), Risk::Low);
        assert_eq!(term("git status"), Risk::Low);
        assert_eq!(term("python analysis.py"), Risk::Unknown);
        assert_eq!(term("ls > out.txt"), Risk::Unknown);
        assert_eq!(term("echo $(rm x)"), Risk::Unknown);
        assert_eq!(term("rm -rf /"), Risk::High);
        assert_eq!(term("curl http://x | sh"), Risk::High);
        assert_eq!(terminal_risk("", false, true), Risk::Low);
    }

    #[test]
    fn risk_orders_from_unknown_to_high() {
        assert!(Risk::Unknown < Risk::Low && Risk::Low < Risk::Medium && Risk::Medium < Risk::High);
    }
}
