//! The startup plan every interface shows first: where the project stands and what to do
//! next. The gateway's planner fills it in; this module owns only its shape on the wire.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the project stands, in the order the planner checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// A session needs recovery before anything else.
    RecoveryRequired,
    /// The folder does not look like a project (the filesystem root or the home folder).
    ProjectReview,
    /// No usable model route is configured.
    ModelRequired,
    /// The route's credential variable is not set.
    CredentialRequired,
    /// The model service cannot be reached.
    ConnectionRequired,
    /// The project needs a runtime Heartwood provides that is not there yet: the OpenHands
    /// agent server when the project's engine is OpenHands (Heartwood-managed local models
    /// will add theirs).
    ComputeRequired,
    /// Ready for work.
    Ready,
}

impl Phase {
    /// The name as serialized and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::RecoveryRequired => "recovery_required",
            Phase::ProjectReview => "project_review",
            Phase::ModelRequired => "model_required",
            Phase::CredentialRequired => "credential_required",
            Phase::ConnectionRequired => "connection_required",
            Phase::ComputeRequired => "compute_required",
            Phase::Ready => "ready",
        }
    }
}

pub use crate::platform::CredentialBoundary;

/// Whether low-risk automation may be chosen with the route in force, and why: the gateway's
/// decision, which every interface shows rather than working out itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AutomationAllowance {
    /// Low-risk automation may be chosen.
    pub allowed: bool,
    /// Why, in a sentence.
    pub reason: String,
}

/// The route's prices, per million tokens, in millionths of the currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoutePrices {
    /// Per million input (prompt) tokens.
    pub input_micros_per_mtok: u64,
    /// Per million output (completion) tokens.
    pub output_micros_per_mtok: u64,
}

/// The configured route, as the plan shows it (never the credential itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RouteSummary {
    /// How the model is reached (`compatible`, ...).
    pub category: String,
    /// The service, with any user information and query redacted.
    pub base_url: String,
    /// The model.
    pub model: String,
    /// The credential variable's name, if any.
    pub api_key_env: Option<String>,
    /// Where the credential sits relative to the agent's tools.
    pub credential_boundary: CredentialBoundary,
    /// Whether low-risk automation may be chosen with this route here.
    pub low_risk_automation: AutomationAllowance,
    /// The route's prices (US dollars), when known; usage is shown in money only then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<RoutePrices>,
    /// When the project sets no route and this is the user's default route: its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherited_from: Option<String>,
}

/// The startup plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StartupPlan {
    /// The phase.
    pub phase: Phase,
    /// What the phase means here, for the researcher.
    pub explanation: String,
    /// What to do next.
    pub next_action: String,
    /// The configured route, if any.
    pub route: Option<RouteSummary>,
    /// The research environment Heartwood runs in, and what it offers.
    pub platform: crate::platform::PlatformSummary,
    /// How tool processes are confined on this machine.
    #[serde(default)]
    pub sandbox: SandboxSummary,
    /// Sessions recorded in this project.
    pub sessions: usize,
    /// Sessions waiting for a decision, most recent first: said before anything else.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_decisions: Vec<PendingDecision>,
    /// Sessions whose run was cut off when the process running it ended, most recent first,
    /// each with what continues it (in `answer`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped_sessions: Vec<PendingDecision>,
    /// Whether `.heartwood/` is kept out of version control.
    #[serde(default)]
    pub state_folder: StateFolder,
    /// Whether the operator's parallel-review evidence counts for this project's route now.
    #[serde(default)]
    pub parallel_review: ReviewEvidenceStanding,
    /// Sessions whose workflow run waits for the researcher (a stage's acceptance, correction,
    /// checks or next run), most recent first, each with what it waits for and what continues
    /// it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workflow_waits: Vec<WorkflowWait>,
}

/// The operator's parallel-review evidence (`HEARTWOOD_REVIEW_QUALIFICATIONS`), as the gateway
/// would judge it for this project's route now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewEvidenceStanding {
    /// Whether the variable names a file.
    pub configured: bool,
    /// Whether the evidence is accepted for the route: reviews may be offered at once.
    pub accepted: bool,
    /// The same in words: the qualification in force, or why the evidence is refused (inside
    /// the project, writable by others, another route, expired) and what to do.
    pub detail: String,
}

/// `.heartwood/` and version control.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateFolder {
    /// Whether the folder exists yet.
    pub exists: bool,
    /// Whether its own ignore file leaves everything in it out of git.
    pub ignored: bool,
    /// The same in words, with what to do when it is not ignored.
    pub detail: String,
}

/// A session whose workflow run waits for the researcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowWait {
    /// The session.
    pub session: crate::SessionId,
    /// What it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it waits for and the steps that continue it.
    pub waits_for: crate::WaitsFor,
}

/// Whether this machine confines tool processes, and how (or why not).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxSummary {
    /// Whether commands run in the kernel sandbox.
    pub enforcing: bool,
    /// How, or why not and what to do, in words.
    pub detail: String,
}

/// A session that waits for a decision, and the command that answers it from a shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PendingDecision {
    /// The session.
    pub session: crate::SessionId,
    /// What it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The command that answers it (`allow` or `reject`).
    pub answer: String,
}
