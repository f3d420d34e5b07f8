//! A session's file edits as diffs, read off its verified journal alone: what each completed
//! editor action changed, in order. A project without Git has nothing else to diff against,
//! and in any project it is the session's own account of what it wrote.

use heartwood_events::{ActionState, SessionProjection};
use serde::Serialize;

/// One completed edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionEdit {
    /// The action that made it.
    pub action_id: u64,
    /// The project-relative path it wrote.
    pub path: String,
    /// The editor command: `create`, `str_replace`, `insert` or `undo_edit`.
    pub command: String,
    /// The change as a unified diff. An edit records the text it replaced, not the file
    /// around it, so hunks carry no line numbers but an insert's position.
    pub unified: String,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

impl SessionEdit {
    /// The edit's head line, as every listing of a session's edits starts it.
    pub fn heading(&self) -> String {
        format!(
            "# action #{} · {} {} · +{} −{}",
            self.action_id, self.command, self.path, self.added, self.removed
        )
    }
}

/// Every completed edit of `projection` (those of `path` alone when one is named).
pub fn session_edits(projection: &SessionProjection, path: Option<&str>) -> Vec<SessionEdit> {
    projection
        .actions
        .iter()
        .filter(|a| a.proposal.tool == "file_editor" && a.state == ActionState::Completed)
        .filter_map(|a| {
            let written = a.changed_path.clone()?;
            if path.is_some_and(|p| p != written) {
                return None;
            }
            let args: serde_json::Value = serde_json::from_str(&a.proposal.arguments).ok()?;
            let text = |name: &str| args[name].as_str().unwrap_or_default().to_owned();
            let command = text("command");
            let mut edit = SessionEdit {
                action_id: a.proposal.action_id,
                unified: format!("--- a/{written}\n+++ b/{written}\n"),
                path: written,
                command: command.clone(),
                added: 0,
                removed: 0,
            };
            match command.as_str() {
                "create" => {
                    edit.unified.push_str("@@ new file @@\n");
                    push_lines(&mut edit, "", &text("file_text"));
                }
                "str_replace" => {
                    edit.unified.push_str("@@ replaced @@\n");
                    push_lines(&mut edit, &text("old_str"), &text("new_str"));
                }
                "insert" => {
                    let after = args["insert_line"].as_u64().unwrap_or(0);
                    edit.unified
                        .push_str(&format!("@@ after line {after} @@\n"));
                    push_lines(&mut edit, "", &text("new_str"));
                }
                _ => edit.unified.push_str(
                    "@@ reverted to the editor's saved copy from before its last edit @@\n",
                ),
            }
            Some(edit)
        })
        .collect()
}

/// The lines of `old` removed and those of `new` added, unchanged lines between them kept as
/// context.
fn push_lines(edit: &mut SessionEdit, old: &str, new: &str) {
    let diff = similar::TextDiff::from_lines(old, new);
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Insert => {
                edit.added += 1;
                '+'
            }
            similar::ChangeTag::Delete => {
                edit.removed += 1;
                '-'
            }
            similar::ChangeTag::Equal => ' ',
        };
        edit.unified.push(sign);
        edit.unified.push_str(change.value());
        if change.missing_newline() {
            edit.unified.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heartwood_events::{ActionProposal, Event, RecordedEvent, RiskLevel, Seq, SessionId};

    fn edit(id: u64, arguments: serde_json::Value, path: &str) -> Vec<Event> {
        vec![
            Event::ActionProposed {
                action: ActionProposal {
                    action_id: id,
                    response_id: "r".into(),
                    tool: "file_editor".into(),
                    arguments: arguments.to_string(),
                    risk: RiskLevel::Medium,
                    thought: None,
                    sandbox: None,
                },
            },
            Event::ActionUpdated {
                action_id: id,
                version: 2,
                state: ActionState::Completed,
                detail: None,
                exit_code: None,
                changed_path: Some(path.into()),
            },
        ]
    }

    #[test]
    fn each_completed_edit_is_its_change_and_a_failed_one_is_not_there() {
        let mut events = Vec::new();
        events.extend(edit(
            1,
            serde_json::json!({"command": "create", "path": "plan.md", "file_text": "# Plan\nOLS\n"}),
            "plan.md",
        ));
        events.extend(edit(
            2,
            serde_json::json!({"command": "str_replace", "path": "plan.md",
                "old_str": "# Plan\nOLS\n", "new_str": "# Plan\nOLS by site\n"}),
            "plan.md",
        ));
        events.extend(edit(
            3,
            serde_json::json!({"command": "insert", "path": "notes.md", "insert_line": 4,
                "new_str": "checked\n"}),
            "notes.md",
        ));
        let mut failed = edit(
            4,
            serde_json::json!({"command": "create", "path": "x.md", "file_text": "x"}),
            "x.md",
        );
        if let Event::ActionUpdated { state, .. } = &mut failed[1] {
            *state = ActionState::Failed;
        }
        events.extend(failed);
        let recorded: Vec<RecordedEvent> = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| RecordedEvent::new(Seq::new(i as u64 + 1).expect("seq"), None, e))
            .collect();
        let projection = crate::reducer::replay(SessionId::parse("s1").expect("id"), &recorded);

        let all = session_edits(&projection, None);
        assert_eq!(
            all.iter().map(|e| e.action_id).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!((all[0].added, all[0].removed), (2, 0));
        assert!(
            all[0].unified.ends_with("@@ new file @@\n+# Plan\n+OLS\n"),
            "{}",
            all[0].unified
        );
        assert_eq!((all[1].added, all[1].removed), (1, 1));
        assert!(
            all[1].unified.contains(" # Plan\n-OLS\n+OLS by site\n"),
            "{}",
            all[1].unified
        );
        assert!(all[2].unified.contains("@@ after line 4 @@\n+checked\n"));
        let one = session_edits(&projection, Some("notes.md"));
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].path, "notes.md");
    }
}
