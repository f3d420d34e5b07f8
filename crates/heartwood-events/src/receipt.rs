//! Command receipts: the remembered outcome of a command, so a retry with the same
//! [`CommandId`] gets the same answer without acting twice, across process restarts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CommandId, Refusal, Seq, Timestamp};

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
///
/// On the wire a refusal is `{"status":"refused","kind":…,…fields,"reason":"…"}`: the kind and
/// its fields for interfaces to act on, and the sentence rendered from them for readers that
/// know only words. A receipt written before refusals were typed (`{"status":"refused",
/// "reason":"…"}`) reads as [`Refusal::Other`] with its words, as does a kind a newer build wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The command took effect.
    Applied {
        /// The last event the command appended, if it appended any.
        last_seq: Option<Seq>,
        /// Command-specific result (for an export, the bundle name).
        result: Value,
    },
    /// The command was refused; nothing changed.
    Refused(Refusal),
}

impl Outcome {
    /// The refusal, when the command was refused.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Outcome::Refused(refusal) => Some(refusal),
            Outcome::Applied { .. } => None,
        }
    }
}

/// [`Outcome`] as written: the refusal's kind flattened beside its rendered reason.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
#[schemars(rename = "Outcome", description = "What a command came to.")]
enum Wire {
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
        /// Why, in words a researcher can act on, rendered from the kind.
        reason: String,
        /// The kind and its fields; absent in receipts written before refusals were typed
        /// (a flattened `Option` reads as `None` when the fields do not form a kind).
        #[serde(flatten)]
        refusal: Option<Refusal>,
    },
}

impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            Outcome::Applied { last_seq, result } => Wire::Applied {
                last_seq: *last_seq,
                result: result.clone(),
            },
            Outcome::Refused(refusal) => Wire::Refused {
                reason: refusal.to_string(),
                refusal: Some(refusal.clone()),
            },
        };
        wire.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Wire::deserialize(deserializer)? {
            Wire::Applied { last_seq, result } => Outcome::Applied { last_seq, result },
            Wire::Refused {
                refusal: Some(refusal),
                ..
            } => Outcome::Refused(refusal),
            Wire::Refused {
                reason,
                refusal: None,
            } => Outcome::Refused(Refusal::Other { why: reason }),
        })
    }
}

impl JsonSchema for Outcome {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Outcome".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Wire::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_written_before_refusals_were_typed_still_reads() {
        let old = r#"{"schema":1,"command_id":"c-1","command_type":"decide",
            "time":"2026-01-02T03:04:05Z",
            "outcome":{"status":"refused","reason":"revision 3 of set s-1 is stale"}}"#;
        let receipt: Receipt = serde_json::from_str(old).expect("an old receipt reads");
        assert_eq!(
            receipt.outcome,
            Outcome::Refused(Refusal::Other {
                why: "revision 3 of set s-1 is stale".into()
            })
        );
        assert_eq!(
            receipt
                .outcome
                .refusal()
                .map(ToString::to_string)
                .as_deref(),
            Some("revision 3 of set s-1 is stale")
        );
    }

    #[test]
    fn a_typed_refusal_carries_its_kind_fields_and_sentence() {
        let refusal = Refusal::NotEligible {
            stage: "clean".into(),
            problems: vec!["the table has no rows".into()],
        };
        let wire = serde_json::to_value(Outcome::Refused(refusal.clone())).expect("writes");
        assert_eq!(wire["status"], "refused");
        assert_eq!(wire["kind"], "not_eligible");
        assert_eq!(wire["problems"][0], "the table has no rows");
        assert_eq!(wire["reason"], refusal.to_string());
        let back: Outcome = serde_json::from_value(wire).expect("reads back");
        assert_eq!(back, Outcome::Refused(refusal));
    }

    #[test]
    fn a_kind_from_a_newer_build_reads_as_other_with_its_words() {
        let newer = r#"{"status":"refused","kind":"quota_spent","reason":"the quota is spent"}"#;
        let outcome: Outcome = serde_json::from_str(newer).expect("reads");
        assert_eq!(
            outcome,
            Outcome::Refused(Refusal::Other {
                why: "the quota is spent".into()
            })
        );
    }
}
