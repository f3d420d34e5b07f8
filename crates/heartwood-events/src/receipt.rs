//! Command receipts: the remembered outcome of a command, so a retry with the same
//! [`CommandId`] gets the same answer without acting twice, across process restarts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CommandId, Seq, Timestamp};

/// The recorded outcome of one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Receipt {
    /// The format version the writer used.
    pub schema: u32,
    /// The command this answers.
    pub command_id: CommandId,
    /// The command's `type` tag; a retry with the same id but another type is refused.
    pub command_type: String,
    /// When the command completed.
    pub time: Timestamp,
    /// What happened.
    pub outcome: Outcome,
    /// SHA-256 (hex) of what the command said, so a retry that changed it is refused rather
    /// than answered with the first outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_sha256: Option<String>,
    /// Who the command acted for, as the interface that took it established (the browser
    /// API's launch capability, say); absent for the local user's own terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

impl Receipt {
    /// The command this answers, when this build knows its type (a receipt remade by
    /// recovery for a command its events do not name says `unknown`). The journal keeps the
    /// type as the name it was given: it records commands, it does not interpret them.
    pub fn command(&self) -> Option<crate::CommandName> {
        crate::CommandName::from_tag(&self.command_type)
    }

    /// The receipt of `command_id` (a `command_type` command) with `outcome`, stamped now, in
    /// this build's format.
    pub fn new(command_id: CommandId, command_type: &str, outcome: Outcome) -> Self {
        Receipt {
            schema: crate::SCHEMA_VERSION,
            command_id,
            command_type: command_type.to_owned(),
            time: Timestamp::now(),
            outcome,
            content_sha256: None,
            actor: None,
        }
    }
}

/// What a command came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The command took effect.
    Applied {
        /// The last event the command appended, if it appended any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_seq: Option<Seq>,
        /// Command-specific result (for an export, the bundle name).
        #[serde(default, skip_serializing_if = "Value::is_null")]
        result: Value,
    },
    /// The command was refused; nothing changed.
    Refused {
        /// Why, in words a researcher can act on.
        reason: String,
    },
}
