//! Commands: what an interface asks the gateway to do, each with a caller-chosen id so that a
//! retry is recognised and answered from its receipt instead of acting twice.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::decode::{Head, Required, decode_versioned};
use crate::{
    ActionPolicy, ActionSetId, CommandId, Decision, DecodeError, SCHEMA_VERSION, SessionId,
};

/// One request from an interface to a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Command {
    /// The format version the sender used; absent means this build's version.
    #[serde(default = "current_schema")]
    pub schema: u32,
    /// Chosen by the caller; retrying with the same id returns the original outcome.
    pub command_id: CommandId,
    /// The session the command acts on.
    pub session: SessionId,
    /// Who the command acts for, set by the interface that took it (never trusted from a
    /// request body: the browser API writes it from the capability); recorded on the receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// What to do; its `type` tag sits beside the fields above.
    #[serde(flatten)]
    pub kind: CommandKind,
}

/// What a [`Command`] asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CommandKind {
    /// Give the agent a task; refused while another task is active.
    SubmitTask {
        /// The task, in the researcher's words.
        text: String,
        /// When proposed action sets wait for a decision.
        #[serde(default)]
        policy: ActionPolicy,
    },
    /// Add guidance to the active task; the agent reads it before its next model call.
    SendGuidance {
        /// The guidance.
        text: String,
    },
    /// Pause the running task at its next step.
    Pause,
    /// Stop now: kill the running tool's whole process group, record the action as
    /// interrupted with its partial output, and pause.
    Interrupt,
    /// Continue a paused task.
    Resume,
    /// Decide the pending action set, bound to the set and revision the researcher saw.
    Decide {
        /// The set shown.
        set_id: ActionSetId,
        /// The revision shown.
        revision: u64,
        /// `allow_once` or `reject_all`.
        decision: Decision,
        /// Why, if the researcher wants the record (and, on rejection, the model) to know.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Write an export (a bundle by default, a transcript or an RO-Crate) and record it as
    /// an event that names its form and destination.
    Export(crate::ExportRequest),
    /// Close the session and release its writer lease.
    Close,
    /// Give the session a title of the researcher's choosing (it starts as the first task's
    /// first line).
    Rename {
        /// The new title (its first line, at most 80 characters, is kept).
        title: String,
    },
    /// Start a research workflow run in this unused session: the definition, the researcher's
    /// question, and any input locations that differ from the definition's.
    WorkflowStart {
        /// The definition's id (`heartwood workflow catalog` lists them).
        definition: String,
        /// The research question, in the researcher's words.
        question: String,
        /// Input locations chosen instead of the definition's: input id → project path.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        inputs: std::collections::BTreeMap<String, String>,
    },
    /// Run the current stage as an agent turn.
    WorkflowRun {
        /// The run revision shown.
        revision: u64,
    },
    /// Run the current stage's independent checks now.
    WorkflowEvaluate {
        /// The run revision shown.
        revision: u64,
    },
    /// Accept the current stage, bound to the revision and the assessment fingerprint shown.
    WorkflowAccept {
        /// The run revision shown.
        revision: u64,
        /// The fingerprint of the assessment shown.
        fingerprint: String,
    },
    /// Cancel the run (only while no work is active and no set waits).
    WorkflowCancel {
        /// The run revision shown.
        revision: u64,
    },
    /// Have the current stage's files reviewed by the review specialist: the files are
    /// captured by digest, a turn asks the reviewer, and the gateway verifies its proposals.
    WorkflowReview {
        /// The run revision shown.
        revision: u64,
    },
    /// Consent to run the pending review batch at once, exactly as previewed (the preview's
    /// digest); the batch still runs only once the set is allowed, and only if the gateway
    /// finds the preview still true when it dispatches.
    WorkflowReviewParallel {
        /// The run revision shown.
        revision: u64,
        /// The digest of the preview shown.
        preview: String,
    },
    /// Text the researcher typed, which means what the session's projection says when the
    /// gateway decides it ([`crate::SessionProjection::text_commands`]): a task, guidance, or
    /// guidance and resuming. Its events are those of what it meant, under this one command.
    Say {
        /// The researcher's words.
        text: String,
        /// The policy, should the text become a task.
        #[serde(default)]
        policy: ActionPolicy,
    },
    /// Bind a correction of a verified finding (written at a new path, rechecked now) in place
    /// of the current stage's output; the stage is then checked and accepted again as usual.
    WorkflowCorrect {
        /// The run revision shown.
        revision: u64,
        /// The review whose finding it corrects.
        review_id: String,
        /// The finding's index in that review.
        finding: u32,
        /// The corrected file's project-relative path.
        destination: String,
    },
}

fn current_schema() -> u32 {
    SCHEMA_VERSION
}

impl Command {
    /// A command in this build's format.
    pub fn new(command_id: CommandId, session: SessionId, kind: CommandKind) -> Self {
        Command {
            schema: SCHEMA_VERSION,
            command_id,
            session,
            actor: None,
            kind,
        }
    }

    /// The same command, acting for `actor`.
    pub fn acting_for(mut self, actor: &str) -> Self {
        self.actor = Some(actor.to_owned());
        self
    }

    /// Reads a submitted command, reporting newer formats and unknown kinds by name.
    ///
    /// ```
    /// use heartwood_events::{Command, CommandKind};
    ///
    /// let sent = br#"{"schema":1,"command_id":"c1","session":"s1","type":"pause"}"#;
    /// assert!(matches!(Command::decode(sent).map(|c| c.kind), Ok(CommandKind::Pause)));
    /// // A newer format is refused, naming both versions, rather than read as this one.
    /// let newer = br#"{"schema":9,"command_id":"c1","session":"s1","type":"pause"}"#;
    /// assert!(Command::decode(newer).unwrap_err().to_string().contains('9'));
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_versioned::<Head>(
            bytes,
            "command",
            CommandKind::KINDS,
            Required::DefaultsToCurrent,
        )?;
        serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))
    }
}

/// A command's kind without its content: what a projection lists as available now, and the
/// `type` tag on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandName {
    /// [`CommandKind::SubmitTask`].
    SubmitTask,
    /// [`CommandKind::SendGuidance`].
    SendGuidance,
    /// [`CommandKind::Pause`].
    Pause,
    /// [`CommandKind::Interrupt`].
    Interrupt,
    /// [`CommandKind::Resume`].
    Resume,
    /// [`CommandKind::Decide`].
    Decide,
    /// [`CommandKind::Export`].
    Export,
    /// [`CommandKind::Close`].
    Close,
    /// [`CommandKind::Rename`].
    Rename,
    /// [`CommandKind::WorkflowStart`].
    WorkflowStart,
    /// [`CommandKind::WorkflowRun`].
    WorkflowRun,
    /// [`CommandKind::WorkflowEvaluate`].
    WorkflowEvaluate,
    /// [`CommandKind::WorkflowAccept`].
    WorkflowAccept,
    /// [`CommandKind::WorkflowCancel`].
    WorkflowCancel,
    /// [`CommandKind::WorkflowReview`].
    WorkflowReview,
    /// [`CommandKind::WorkflowCorrect`].
    WorkflowCorrect,
    /// [`CommandKind::WorkflowReviewParallel`].
    WorkflowReviewParallel,
    /// [`CommandKind::Say`].
    Say,
}

impl CommandName {
    /// Every command, in the order interfaces list them.
    pub const ALL: [CommandName; 18] = [
        CommandName::SubmitTask,
        CommandName::SendGuidance,
        CommandName::Pause,
        CommandName::Interrupt,
        CommandName::Resume,
        CommandName::Decide,
        CommandName::Export,
        CommandName::Close,
        CommandName::Rename,
        CommandName::WorkflowStart,
        CommandName::WorkflowRun,
        CommandName::WorkflowEvaluate,
        CommandName::WorkflowAccept,
        CommandName::WorkflowCancel,
        CommandName::WorkflowReview,
        CommandName::WorkflowCorrect,
        CommandName::WorkflowReviewParallel,
        CommandName::Say,
    ];

    /// The command whose `type` tag is `tag`, if this build knows it.
    pub fn from_tag(tag: &str) -> Option<CommandName> {
        CommandName::ALL.into_iter().find(|c| c.as_str() == tag)
    }

    /// The `type` tag.
    pub const fn as_str(self) -> &'static str {
        match self {
            CommandName::SubmitTask => "submit_task",
            CommandName::SendGuidance => "send_guidance",
            CommandName::Pause => "pause",
            CommandName::Interrupt => "interrupt",
            CommandName::Resume => "resume",
            CommandName::Decide => "decide",
            CommandName::Export => "export",
            CommandName::Close => "close",
            CommandName::Rename => "rename",
            CommandName::WorkflowStart => "workflow_start",
            CommandName::WorkflowRun => "workflow_run",
            CommandName::WorkflowEvaluate => "workflow_evaluate",
            CommandName::WorkflowAccept => "workflow_accept",
            CommandName::WorkflowCancel => "workflow_cancel",
            CommandName::WorkflowReview => "workflow_review",
            CommandName::WorkflowCorrect => "workflow_correct",
            CommandName::WorkflowReviewParallel => "workflow_review_parallel",
            CommandName::Say => "say",
        }
    }
}

impl std::fmt::Display for CommandName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CommandKind {
    /// Every `type` tag this build accepts.
    pub const KINDS: &'static [&'static str] = &[
        CommandName::SubmitTask.as_str(),
        CommandName::SendGuidance.as_str(),
        CommandName::Pause.as_str(),
        CommandName::Interrupt.as_str(),
        CommandName::Resume.as_str(),
        CommandName::Decide.as_str(),
        CommandName::Export.as_str(),
        CommandName::Close.as_str(),
        CommandName::Rename.as_str(),
        CommandName::WorkflowStart.as_str(),
        CommandName::WorkflowRun.as_str(),
        CommandName::WorkflowEvaluate.as_str(),
        CommandName::WorkflowAccept.as_str(),
        CommandName::WorkflowCancel.as_str(),
        CommandName::WorkflowReview.as_str(),
        CommandName::WorkflowCorrect.as_str(),
        CommandName::WorkflowReviewParallel.as_str(),
        CommandName::Say.as_str(),
    ];

    /// This command's kind.
    pub fn command_name(&self) -> CommandName {
        match self {
            CommandKind::SubmitTask { .. } => CommandName::SubmitTask,
            CommandKind::SendGuidance { .. } => CommandName::SendGuidance,
            CommandKind::Pause => CommandName::Pause,
            CommandKind::Interrupt => CommandName::Interrupt,
            CommandKind::Resume => CommandName::Resume,
            CommandKind::Decide { .. } => CommandName::Decide,
            CommandKind::Export(_) => CommandName::Export,
            CommandKind::Close => CommandName::Close,
            CommandKind::Rename { .. } => CommandName::Rename,
            CommandKind::WorkflowStart { .. } => CommandName::WorkflowStart,
            CommandKind::WorkflowRun { .. } => CommandName::WorkflowRun,
            CommandKind::WorkflowEvaluate { .. } => CommandName::WorkflowEvaluate,
            CommandKind::WorkflowAccept { .. } => CommandName::WorkflowAccept,
            CommandKind::WorkflowCancel { .. } => CommandName::WorkflowCancel,
            CommandKind::WorkflowReview { .. } => CommandName::WorkflowReview,
            CommandKind::WorkflowCorrect { .. } => CommandName::WorkflowCorrect,
            CommandKind::WorkflowReviewParallel { .. } => CommandName::WorkflowReviewParallel,
            CommandKind::Say { .. } => CommandName::Say,
        }
    }

    /// This command's `type` tag.
    pub fn name(&self) -> &'static str {
        self.command_name().as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_flat_internally_tagged_json() {
        let cmd = Command::new(
            CommandId::parse("c-1").expect("id"),
            SessionId::parse("s1").expect("id"),
            CommandKind::Export(Default::default()),
        );
        let value = serde_json::to_value(&cmd).expect("serialize");
        assert_eq!(
            value,
            serde_json::json!({"command_id": "c-1", "schema": 1, "session": "s1", "type": "export"})
        );
        assert_eq!(value["type"], cmd.kind.name());
        assert_eq!(
            serde_json::from_value::<Command>(value).expect("parse"),
            cmd
        );
    }

    #[test]
    fn a_plain_export_keeps_its_wire_form_so_old_receipts_still_match() {
        let plain = CommandKind::Export(Default::default());
        assert_eq!(
            serde_json::to_value(&plain).expect("serialize"),
            serde_json::json!({"type": "export"})
        );
        let parsed: CommandKind =
            serde_json::from_value(serde_json::json!({"type": "export"})).expect("parse");
        assert_eq!(parsed, plain);
    }

    #[test]
    fn a_receipts_type_tag_names_its_command_and_an_unknown_one_none() {
        for name in CommandName::ALL {
            let tag = serde_json::to_value(name).expect("serialize");
            assert_eq!(tag, name.as_str(), "the serde tag is the wire tag");
            assert_eq!(CommandName::from_tag(name.as_str()), Some(name));
        }
        // What recovery writes for a command its events do not name, and a journal test's own.
        assert_eq!(CommandName::from_tag("unknown"), None);
        assert_eq!(CommandName::from_tag("Submit_Task"), None);
    }

    #[test]
    fn every_kind_is_listed_and_round_trips_under_its_serde_tag() {
        let kinds = [
            CommandKind::SubmitTask {
                text: "t".into(),
                policy: ActionPolicy::LowRiskAutomation,
            },
            CommandKind::SendGuidance { text: "g".into() },
            CommandKind::Pause,
            CommandKind::Interrupt,
            CommandKind::Resume,
            CommandKind::Decide {
                set_id: ActionSetId::parse("set-1").expect("id"),
                revision: 4,
                decision: Decision::AllowOnce,
                reason: None,
            },
            CommandKind::Export(crate::ExportRequest {
                format: crate::ExportFormat::RoCrate,
                destination: Some("out/crate.zip".into()),
                zip: true,
                private: vec!["data/secret.csv".into()],
            }),
            CommandKind::Close,
            CommandKind::Rename {
                title: "cohort checks".into(),
            },
            CommandKind::WorkflowStart {
                definition: "tabular-ols".into(),
                question: "q".into(),
                inputs: [("table".to_owned(), "data/t.csv".to_owned())].into(),
            },
            CommandKind::WorkflowRun { revision: 3 },
            CommandKind::WorkflowEvaluate { revision: 4 },
            CommandKind::WorkflowAccept {
                revision: 5,
                fingerprint: "f".into(),
            },
            CommandKind::WorkflowCancel { revision: 6 },
            CommandKind::WorkflowReview { revision: 7 },
            CommandKind::WorkflowCorrect {
                revision: 8,
                review_id: "c-1".into(),
                finding: 0,
                destination: "analysis/fit_fixed.py".into(),
            },
            CommandKind::WorkflowReviewParallel {
                revision: 9,
                preview: "p".into(),
            },
            CommandKind::Say {
                text: "keep group 7 out".into(),
                policy: ActionPolicy::AlwaysReview,
            },
        ];
        assert_eq!(kinds.len(), CommandKind::KINDS.len());
        for kind in kinds {
            let value = serde_json::to_value(&kind).expect("serialize");
            assert_eq!(value["type"], kind.name());
            assert!(CommandKind::KINDS.contains(&kind.name()));
            assert_eq!(
                serde_json::from_value::<CommandKind>(value).expect("parse"),
                kind
            );
        }
    }

    #[test]
    fn decode_defaults_the_version_and_names_unknown_or_newer_commands() {
        let plain = br#"{"command_id":"c","session":"s","type":"close"}"#;
        assert_eq!(Command::decode(plain).map(|c| c.schema), Ok(SCHEMA_VERSION));
        let unknown = br#"{"command_id":"c","session":"s","type":"teleport"}"#;
        let err = Command::decode(unknown).expect_err("unknown kind accepted");
        assert!(
            err.to_string().contains("command kind \"teleport\""),
            "{err}"
        );
        let newer = br#"{"schema":7,"command_id":"c","session":"s","type":"close"}"#;
        assert!(matches!(
            Command::decode(newer),
            Err(DecodeError::NewerSchema { found: 7, .. })
        ));
    }

    #[test]
    fn a_command_with_a_bad_session_id_does_not_parse() {
        let json = r#"{"command_id":"c","session":"../x","type":"close"}"#;
        assert!(serde_json::from_str::<Command>(json).is_err());
    }
}
