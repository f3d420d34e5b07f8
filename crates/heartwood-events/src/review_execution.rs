//! Parallel review, as the journal records it and every interface shows it: the operator's
//! qualification of a model route, the preview the gateway journals for one advisory batch,
//! and the one review-execution summary (sequential or parallel, why, per-child state and
//! usage) that the terminal, the page and the notebook render.
//!
//! Qualification never approves an action: a batch runs at once only after the ordinary
//! decision on its set, a researcher's consent to the exact preview, and the gateway's
//! admission at dispatch.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ActionState;
use crate::workflow::CapturedFile;

/// An operator's retained evidence that one model route handles review batches at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Qualification {
    /// The route's identity: SHA-256 of its category, base URL, model and backend.
    pub route: String,
    /// The same route in words, for people (`openai_compatible http://… model-x (native)`).
    pub route_label: String,
    /// The most review children qualified to run at once.
    pub max_parallelism: u32,
    /// When the qualification run ended (RFC 3339, UTC).
    pub qualified_at: String,
    /// When the evidence stops counting (RFC 3339, UTC).
    pub expires_at: String,
    /// SHA-256 of the qualification run's record, kept beside the evidence file.
    pub record_sha256: String,
}

/// One reviewer of a batch: the parent's action and the catalog role it asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewChild {
    /// The parent's `task` action.
    pub action_id: u64,
    /// The specialist role.
    pub role: String,
}

/// What the researcher consents to, exactly: which reviewers, on which captured files, at
/// which parallelism, under which qualification until when, with how much work left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ParallelPreview {
    /// The review this batch belongs to.
    pub review_id: String,
    /// The pending set.
    pub set_id: String,
    /// The set's revision.
    pub set_revision: u64,
    /// The reviewers, in the set's order.
    pub reviewers: Vec<ReviewChild>,
    /// The files the review captured, by digest, as they are now.
    pub evidence: Vec<CapturedFile>,
    /// How many children run at once.
    pub parallelism: u32,
    /// The qualification entry it rests on.
    pub qualification: Qualification,
    /// The evidence file it was read from.
    pub qualification_file: String,
    /// Model calls the stage may still make (`None`: the stage sets no such limit).
    pub model_calls_left: Option<u64>,
    /// SHA-256 of the canonical form of everything above: what consent names.
    pub digest: String,
}

/// Whether a batch is offered to run at once, journaled when the set is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ReviewOffer {
    /// It may run at once, if the researcher consents to this preview.
    Parallel {
        /// The preview.
        preview: Box<ParallelPreview>,
    },
    /// It runs one reviewer after another.
    Sequential {
        /// Why (no evidence for this route, expired, a file others can write, …).
        why: String,
    },
}

/// How a review batch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// One reviewer after another.
    Sequential,
    /// Up to the admitted parallelism at once.
    Parallel,
}

/// One reviewer's progress in the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewChildState {
    /// The parent's action.
    pub action_id: u64,
    /// The role.
    pub role: String,
    /// Where it is.
    pub state: ActionState,
    /// Tokens it used, as reported (`None` while none were).
    pub tokens: Option<u64>,
}

/// The one review-execution summary: made by the gateway, rendered unchanged everywhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewExecution {
    /// The batch's set.
    pub set_id: String,
    /// Its reviewers, in the set's order.
    pub reviewers: Vec<ReviewChild>,
    /// How it runs (or will, as things stand).
    pub mode: ExecutionMode,
    /// Why, in a line.
    pub why: String,
    /// The preview offered, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<ParallelPreview>,
    /// Whether the researcher consented to that preview.
    pub consented: bool,
    /// The parallelism admitted at dispatch, once admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted: Option<u32>,
    /// Each reviewer.
    pub children: Vec<ReviewChildState>,
    /// Tokens of all reviewers together, summed from the same rows.
    pub tokens: u64,
    /// The summary in lines, as every interface shows it.
    pub said: Vec<String>,
}
