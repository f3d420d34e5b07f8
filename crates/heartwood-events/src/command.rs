//! Commands: what an interface asks the gateway to do, each with a caller-chosen id so that a
//! retry is recognised and answered from its receipt instead of acting twice.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CommandId, SessionId};

/// One request from an interface to a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Command {
    /// Chosen by the caller; retrying with the same id returns the original outcome.
    pub command_id: CommandId,
    /// The session the command acts on.
    pub session: SessionId,
    /// What to do; its `type` tag sits beside the fields above.
    #[serde(flatten)]
    pub kind: CommandKind,
}

/// What a [`Command`] asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CommandKind {
    /// Write a self-contained export bundle and record it as an event.
    Export,
    /// Close the session and release its writer lease.
    Close,
}

impl CommandKind {
    /// This command's `type` tag.
    pub fn name(&self) -> &'static str {
        match self {
            CommandKind::Export => "export",
            CommandKind::Close => "close",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_flat_internally_tagged_json() {
        let cmd = Command {
            command_id: CommandId::parse("c-1").expect("id"),
            session: SessionId::parse("s1").expect("id"),
            kind: CommandKind::Export,
        };
        let value = serde_json::to_value(&cmd).expect("serialize");
        assert_eq!(
            value,
            serde_json::json!({"command_id": "c-1", "session": "s1", "type": "export"})
        );
        assert_eq!(value["type"], cmd.kind.name());
        assert_eq!(
            serde_json::from_value::<Command>(value).expect("parse"),
            cmd
        );
    }

    #[test]
    fn a_command_with_a_bad_session_id_does_not_parse() {
        let json = r#"{"command_id":"c","session":"../x","type":"close"}"#;
        assert!(serde_json::from_str::<Command>(json).is_err());
    }
}
