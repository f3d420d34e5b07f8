//! How pending sets read in a terminal. Rendering only: what an event means for the
//! session comes from the gateway's projection.

use heartwood_events::{ActionSet, Preview, Review, SessionId};

/// Colour for a terminal: only when standard output is one and `NO_COLOR` is not set.
struct Paint(bool);

impl Paint {
    fn detect() -> Self {
        use std::io::IsTerminal;
        Paint(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none())
    }

    fn wrap(&self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

/// Prints a pending set whole, as the gateway's review shows it (every line of every command,
/// the whole new file, the diff of an edit), and the exact commands that answer it.
pub fn pending_set(session: &SessionId, set: &ActionSet, review: &Review) {
    let paint = Paint::detect();
    say!(
        "\nThe agent proposes {} action{} (set {}, revision {}). Nothing runs until you decide:",
        set.members.len(),
        if set.members.len() == 1 { "" } else { "s" },
        set.set_id,
        set.revision
    );
    for member in &set.members {
        if let Some(thought) = &member.thought {
            say!("\n  agent: {}", heartwood_gateway::shortened(thought, 400));
        }
        let Some(reviewed) = review
            .members
            .iter()
            .find(|m| m.action_id == member.action_id)
        else {
            continue;
        };
        let predicted = reviewed
            .predicted_risk
            .as_deref()
            .map(|r| format!(" (model predicts {})", r.to_lowercase()))
            .unwrap_or_default();
        say!(
            "\n  #{} {} [{} risk]{predicted}",
            member.action_id,
            paint.wrap("1", &reviewed.headline),
            reviewed.risk.as_str()
        );
        print_preview(&paint, &reviewed.preview);
    }
    decide_commands(session, set);
}

/// The exact commands that answer `set`.
pub fn decide_commands(session: &SessionId, set: &ActionSet) {
    let base = format!(
        "heartwood decide {session} --set {} --revision {}",
        set.set_id, set.revision
    );
    say!("\nAllow all of them once:  {base} allow");
    say!("Reject all of them:      {base} reject --reason \"why\"");
}

fn print_preview(paint: &Paint, preview: &Preview) {
    let omitted = |n: usize| {
        if n > 0 {
            say!("      … {n} more lines not shown");
        }
    };
    match preview {
        Preview::Command {
            command,
            input,
            context,
            ..
        } => {
            say!("      {}", paint.wrap("2", context));
            for line in heartwood_events::shell_lines(command) {
                let prompt = line.prompt(*input);
                say!(
                    "      {}",
                    paint.wrap("36", &format!("{prompt}{}", line.text))
                );
            }
        }
        Preview::Create {
            path,
            content,
            lines,
            omitted_lines,
        } => {
            say!("      new file {path} ({lines} lines):");
            for line in content.lines() {
                say!("      {}", paint.wrap("32", &format!("+ {line}")));
            }
            omitted(*omitted_lines);
        }
        Preview::Diff {
            path,
            unified,
            added,
            removed,
            omitted_lines,
            ..
        } => {
            if unified.is_empty() {
                say!("      {path}: goes back to the agent's copy from before its last edit");
                return;
            }
            say!("      {path}: +{added} -{removed}");
            for line in unified.lines() {
                let code = match line.as_bytes().first() {
                    _ if line.starts_with("+++") || line.starts_with("---") => "2",
                    Some(b'+') => "32",
                    Some(b'-') => "31",
                    Some(b'@') => "36",
                    _ => "0",
                };
                say!("      {}", paint.wrap(code, line));
            }
            omitted(*omitted_lines);
        }
        Preview::Read { path, range } => {
            let range = range
                .as_ref()
                .map(|r| format!(" lines {r:?}"))
                .unwrap_or_default();
            say!("      reads {path}{range}; changes nothing");
        }
        Preview::Plan { tasks } => {
            say!("      the task plan becomes:");
            for task in tasks {
                say!("        - {}", task.title);
            }
        }
        Preview::Note { text } => {
            for line in text.lines() {
                say!("      {line}");
            }
        }
        Preview::WouldFail { reason } => {
            say!(
                "      {}",
                paint.wrap("31", &format!("would fail: {reason}"))
            );
        }
    }
}
