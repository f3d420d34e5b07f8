//! What the researcher reviews before one decision covers a whole action set: each member's
//! headline and risk, and a preview of exactly what it would do (the full command, the whole
//! new file, a unified diff against the file's current bytes). The gateway computes it once,
//! when the set is shown; every interface renders this and writes no summary of its own.
//!
//! A review is derived from the project's files, so it is not journaled and not part of the
//! replayable projection: it travels beside it in the [`crate::Snapshot`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ActionSetId, PlanTask, RiskLevel};

/// The review of the pending set at one revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Review {
    /// The set reviewed.
    pub set_id: ActionSetId,
    /// The revision reviewed; a decision names it.
    pub revision: u64,
    /// Every member, in proposal order.
    pub members: Vec<MemberReview>,
}

/// One member of a reviewed set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemberReview {
    /// The action.
    pub action_id: u64,
    /// The tool.
    pub tool: String,
    /// One line: the model's own summary when it gave one, else what the call does.
    pub headline: String,
    /// Heartwood's risk rating.
    pub risk: RiskLevel,
    /// The model's own prediction of the risk, when it gave one (shown, never trusted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_risk: Option<String>,
    /// How its process is confined if allowed (`None`: it starts no process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::SandboxLevel>,
    /// Exactly what the action would do.
    pub preview: Preview,
}

/// Exactly what one action would do, computed without running it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Preview {
    /// A terminal command, every line of it.
    Command {
        /// The command text, whole.
        command: String,
        /// Where the persistent shell started, relative to the project (`.`: the project
        /// folder); an earlier `cd` in the same shell still applies.
        working_directory: String,
        /// The text goes to the program already running, not to a new command.
        input: bool,
        /// The shell is killed and started afresh first.
        reset: bool,
        /// The soft timeout asked for, in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        /// The hosts a confined command may reach through Heartwood's proxy (the project's
        /// and platform's `network` lists; empty: no network at all). An unsandboxed command
        /// reaches whatever its user can, and lists none. `context` says them in words.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        hosts: Vec<String>,
        /// Where and how it runs, in words (every interface shows this line as it is).
        context: String,
    },
    /// A new file, with its content.
    Create {
        /// The project-relative path.
        path: String,
        /// The content (up to the preview limit).
        content: String,
        /// Lines in the whole content.
        lines: usize,
        /// Lines left out of `content` because of the preview limit.
        omitted_lines: usize,
    },
    /// A change to an existing file, as a unified diff against its current bytes.
    Diff {
        /// The project-relative path.
        path: String,
        /// SHA-256 of the bytes the diff was computed against: if the file changes before
        /// the decision, the review is stale and the set is shown again.
        sha256: String,
        /// The unified diff (up to the preview limit).
        unified: String,
        /// Lines added.
        added: usize,
        /// Lines removed.
        removed: usize,
        /// Diff lines left out of `unified` because of the preview limit.
        omitted_lines: usize,
    },
    /// What would be read (a file or a folder listing); nothing changes.
    Read {
        /// The project-relative path.
        path: String,
        /// The line range, when one was asked for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range: Option<Vec<i64>>,
    },
    /// The task plan would be replaced by this one.
    Plan {
        /// The new plan.
        tasks: Vec<PlanTask>,
    },
    /// Text the agent records for itself or the researcher; nothing changes.
    Note {
        /// The text.
        text: String,
    },
    /// The action would be refused when it runs (the reason says why); nothing would change.
    WouldFail {
        /// Why.
        reason: String,
    },
}
