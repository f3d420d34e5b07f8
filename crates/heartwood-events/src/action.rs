//! The vocabulary of agent work: proposed actions and their versioned state, the action set a
//! researcher decides on, decisions, lifecycle, task plans and usage figures.
//!
//! These types appear inside durable [`crate::Event`]s and in the projection, so interfaces and
//! the journal speak the same words.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ActionSetId;

/// Where a session's agent stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// Nothing running; a task can be given.
    #[default]
    Idle,
    /// The agent is working.
    Running,
    /// Paused between steps; resume continues.
    Paused,
    /// Stopped before acting: the pending action set needs a decision.
    WaitingForDecision,
    /// The agent finished the task.
    Finished,
    /// The run failed; the error says why.
    Failed,
    /// The agent repeated itself without progress and was stopped.
    Stuck,
}

impl Lifecycle {
    /// The name as written on disk and shown to interfaces.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Idle => "idle",
            Lifecycle::Running => "running",
            Lifecycle::Paused => "paused",
            Lifecycle::WaitingForDecision => "waiting_for_decision",
            Lifecycle::Finished => "finished",
            Lifecycle::Failed => "failed",
            Lifecycle::Stuck => "stuck",
        }
    }

    /// Whether a new task may start from here.
    pub fn accepts_task(self) -> bool {
        matches!(
            self,
            Lifecycle::Idle | Lifecycle::Finished | Lifecycle::Failed | Lifecycle::Stuck
        )
    }
}

/// When proposed action sets wait for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionPolicy {
    /// Every set waits for a decision (the default).
    #[default]
    AlwaysReview,
    /// Sets whose every member the deterministic risk rules rate low run without waiting.
    LowRiskAutomation,
}

impl ActionPolicy {
    /// The name as written on the command line and on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionPolicy::AlwaysReview => "always_review",
            ActionPolicy::LowRiskAutomation => "low_risk_automation",
        }
    }
}

/// The deterministic risk rating of one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    /// The rules could not rate it.
    Unknown,
    /// Reads or plans only.
    Low,
    /// Changes project files or runs ordinary commands.
    Medium,
    /// Deletes, installs, reaches the network or escalates.
    High,
}

impl RiskLevel {
    /// The name as written on disk and shown to interfaces.
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Unknown => "unknown",
            RiskLevel::Low => "low",
            RiskLevel::Medium => "medium",
            RiskLevel::High => "high",
        }
    }
}

/// One tool call the agent proposed, as first recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ActionProposal {
    /// The action's id, unique within the session.
    pub action_id: u64,
    /// The model reply the call came from; calls of one reply form one set.
    pub response_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments exactly as the model sent them (JSON text).
    pub arguments: String,
    /// The risk rating.
    pub risk: RiskLevel,
    /// Text the model sent with the calls, on the first action of a reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// How the action's process is confined if a person allows it (`None`: it starts no
    /// process, or it was recorded before Heartwood confined processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxLevel>,
}

/// How a tool process is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxLevel {
    /// Reads the project; writes only a private scratch folder; no network.
    ReadOnly,
    /// Writes inside the project and its scratch folder only.
    ProjectWrite,
    /// Not confined: the researcher's explicit approval of an action that asked for it.
    Unsandboxed,
}

impl SandboxLevel {
    /// The level in words, as every interface shows it.
    pub fn label(self) -> &'static str {
        match self {
            SandboxLevel::ReadOnly => {
                "read-only sandbox (no writes; no network beyond the project's named hosts)"
            }
            SandboxLevel::ProjectWrite => {
                "sandbox: writes only inside the project; no network beyond the project's named hosts"
            }
            SandboxLevel::Unsandboxed => "UNSANDBOXED: full access as your user",
        }
    }
}

/// Where one action stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionState {
    /// Proposed; not yet decided.
    Proposed,
    /// Allowed to run once.
    Approved,
    /// Running now.
    Running,
    /// Ran; the detail holds the start of its output.
    Completed,
    /// Could not run, failed, or was cut off when its process ended.
    Failed,
    /// Rejected; it did not run.
    Rejected,
    /// The researcher stopped it before it finished (the detail holds its output so far).
    Stopped,
}

impl ActionState {
    /// The name as written on disk and shown to interfaces.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionState::Proposed => "proposed",
            ActionState::Approved => "approved",
            ActionState::Running => "running",
            ActionState::Completed => "completed",
            ActionState::Failed => "failed",
            ActionState::Rejected => "rejected",
            ActionState::Stopped => "stopped",
        }
    }
}

impl ActionState {
    /// Whether the action started running, whatever came of it (what a rerun must not repeat).
    pub fn has_run(self) -> bool {
        matches!(
            self,
            ActionState::Completed | ActionState::Failed | ActionState::Stopped
        )
    }

    /// Whether the action is resolved (nothing more will happen to it).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ActionState::Completed
                | ActionState::Failed
                | ActionState::Rejected
                | ActionState::Stopped
        )
    }
}

/// The set of actions awaiting one decision, shown whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ActionSet {
    /// The set's id.
    pub set_id: ActionSetId,
    /// The session revision at which the set was published; a decision must name it.
    pub revision: u64,
    /// Every member, in the order the model proposed them.
    pub members: Vec<ActionProposal>,
}

/// The one decision a set receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Every member runs, once.
    AllowOnce,
    /// No member runs; the model is told.
    RejectAll,
}

impl Decision {
    /// The name as written on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow_once",
            Decision::RejectAll => "reject_all",
        }
    }
}

/// One step of the agent's task plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanTask {
    /// What the step is.
    pub title: String,
    /// Notes, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    /// Where the step stands.
    pub status: PlanStatus,
}

/// Where one step of the task plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    #[default]
    Todo,
    /// Being worked on.
    InProgress,
    /// Done.
    Done,
}

impl PlanStatus {
    /// The name as written on disk and shown to interfaces.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Todo => "todo",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Done => "done",
        }
    }

    /// The status a task tracker's text names; anything else is `todo`.
    pub fn from_name(name: &str) -> Self {
        match name {
            "in_progress" => PlanStatus::InProgress,
            "done" => PlanStatus::Done,
            _ => PlanStatus::Todo,
        }
    }
}

/// Token counts and cost (integers, so they stay canonical JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct UsageFigures {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cache_read_tokens: u64,
    /// Reasoning tokens, where the provider reports them.
    pub reasoning_tokens: u64,
    /// Cost in millionths of the route's currency, when the route has prices.
    pub cost_micros: u64,
    /// Model calls.
    pub calls: u64,
    /// Model calls whose cost is known (the route had prices); when fewer than `calls`, the
    /// cost is shown as unknown, never as a sum that leaves calls out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priced_calls: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl UsageFigures {
    /// Adds `other` into these figures.
    pub fn add(&mut self, other: &UsageFigures) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cost_micros += other.cost_micros;
        self.calls += other.calls;
        self.priced_calls += other.priced_calls;
    }
}
