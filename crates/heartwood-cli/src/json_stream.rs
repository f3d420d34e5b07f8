//! `exec --json` and `decide --json`: one JSON object per line, each naming its session, that a
//! script can act on without the docs. Events as the journal holds them, with every tool call's
//! arguments as JSON (not JSON text inside JSON); when the run stops at a set, the set, its
//! review (each member's preview) and the commands that decide it; and a closing `summary`.

use anyhow::Result;
use heartwood_events::{RecordedEvent, SessionId, Snapshot};
use serde_json::{Value, json};

/// An event as one JSON line, with the session it belongs to.
pub fn event_line(session: &SessionId, event: &RecordedEvent) -> Result<String> {
    let mut value = serde_json::to_value(event)?;
    decode_arguments(&mut value);
    if let Some(object) = value.as_object_mut() {
        object.insert("session".to_owned(), json!(session));
    }
    Ok(serde_json::to_string(&value)?)
}

/// Every `arguments` field holding JSON text (as a model sends a tool call's arguments) becomes
/// the JSON it holds; text that is not JSON is kept as it is.
fn decode_arguments(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if key == "arguments"
                    && let Value::String(text) = field
                    && let Ok(parsed @ (Value::Object(_) | Value::Array(_))) =
                        serde_json::from_str::<Value>(text)
                {
                    *field = parsed;
                    continue;
                }
                decode_arguments(field);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(decode_arguments),
        _ => {}
    }
}

/// The closing lines: the pending set with its review and decide commands (when the run waits
/// for one), then the summary: outcome, exit code, status, usage, and the files changed.
pub fn closing_lines(
    snapshot: &Snapshot,
    exit_code: u8,
    files_changed: &[String],
) -> Result<Vec<String>> {
    let p = &snapshot.projection;
    let mut lines = Vec::new();
    if let Some(set) = &p.pending {
        let base = format!(
            "heartwood decide {} --set {} --revision {}",
            p.session, set.set_id, set.revision
        );
        let mut value = json!({
            "session": p.session,
            "type": "pending_set",
            "set": set,
            "review": snapshot.review,
            "decide": {
                "allow": format!("{base} allow"),
                "reject": format!("{base} reject --reason \"why\""),
            },
        });
        decode_arguments(&mut value);
        lines.push(serde_json::to_string(&value)?);
    }
    lines.push(serde_json::to_string(&json!({
        "session": p.session,
        "type": "summary",
        "outcome": p.lifecycle,
        "exit_code": exit_code,
        "status": p.status_line,
        "usage": p.usage.total,
        "usage_summary": p.usage.summary,
        "files_changed": files_changed,
    }))?);
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::decode_arguments;
    use serde_json::json;

    #[test]
    fn arguments_are_json_once_and_other_text_stays() {
        let mut v = json!({"proposal": {"arguments": "{\"command\":\"ls\"}"},
                           "members": [{"arguments": "not json"}], "text": "{\"a\":1}"});
        decode_arguments(&mut v);
        assert_eq!(v["proposal"]["arguments"]["command"], "ls");
        assert_eq!(v["members"][0]["arguments"], "not json");
        assert_eq!(
            v["text"], "{\"a\":1}",
            "only `arguments` fields are decoded"
        );
    }
}
