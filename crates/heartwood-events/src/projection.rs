//! The session projection: the one picture of a session every interface renders.
//!
//! The gateway's reducer builds it from durable events; interfaces only read it. Everything a
//! screen needs (which commands are available now, the status line, next-step suggestions,
//! usage labels) is in here, so no interface has to infer any of it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    ActionPolicy, ActionProposal, ActionSet, ActionSetId, ActionState, Decision, Lifecycle,
    PlanTask, Role, SessionId, UsageFigures,
};

/// One row of a session list, the same in every interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionRow {
    /// The session.
    pub session: SessionId,
    /// When its journal last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<crate::Timestamp>,
    /// Where it stands; `None` when it cannot be read (the status line says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    /// Its status line.
    pub status_line: String,
    /// Whether an action set waits for a decision.
    pub pending: bool,
    /// Its title: the first task's first line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it waits for from the researcher, if anything (the projection's `waits_for`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<WaitKind>,
}

impl SessionRow {
    /// The row for a session whose projection is `projection`.
    pub fn of(projection: &SessionProjection, last_activity: Option<crate::Timestamp>) -> Self {
        SessionRow {
            session: projection.session.clone(),
            last_activity,
            lifecycle: Some(projection.lifecycle),
            status_line: projection.status_line.clone(),
            pending: projection.pending.is_some(),
            title: projection.title.clone(),
            waits_for: projection.waits_for.as_ref().map(|w| w.kind),
        }
    }
}

/// A next step, with how to take it: the typed command it means (each interface shows its own
/// key or button for it) or, for something outside the session, the shell command to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Suggestion {
    /// The step, in words.
    pub text: String,
    /// The command that takes it, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<crate::CommandName>,
    /// The shell command that takes it, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
}

/// Everything an interface shows about one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionProjection {
    /// The session.
    pub session: SessionId,
    /// The durable revision: the sequence number of the last event applied.
    pub revision: u64,
    /// Where the agent stands.
    pub lifecycle: Lifecycle,
    /// Whether the session was closed by its owner (a new task reopens it).
    pub closed: bool,
    /// The action policy of the current task.
    pub policy: ActionPolicy,
    /// The conversation, oldest first.
    pub conversation: Vec<ConversationEntry>,
    /// Every action, by id, at its latest version.
    pub actions: Vec<ActionView>,
    /// The set awaiting a decision, if any.
    pub pending: Option<ActionSet>,
    /// The most recent decision.
    pub last_decision: Option<DecisionView>,
    /// The agent's task plan.
    pub task_plan: Vec<PlanTask>,
    /// Token usage and cost, in total and per purpose.
    pub usage: UsageView,
    /// The most recent error, until the next task starts.
    pub last_error: Option<String>,
    /// How many export bundles the session has recorded.
    pub exports: u64,
    /// The session's title: the first task's first line (at most 80 characters), so lists
    /// can say what each session is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the agent is doing, in a few words.
    pub activity: String,
    /// A pause (or a stop) was asked for and the running step has not yet ended, so every
    /// interface can say it was heard.
    #[serde(default)]
    pub stopping: Option<String>,
    /// The run was cut off (the process running it ended, or its worker failed) rather than
    /// failing on its own: interfaces say it stopped, and the next instruction continues it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The commands the gateway accepts now (the same for every interface).
    pub available_commands: Vec<crate::CommandName>,
    /// What text the researcher types now starts as (`submit_task` or `send_guidance`; see
    /// [`SessionProjection::text_commands`]), so every interface labels its input alike.
    pub text_means: crate::CommandName,
    /// One line for the researcher: where things stand.
    pub status_line: String,
    /// At most three next steps that make sense now.
    pub suggestions: Vec<Suggestion>,
    /// The research workflow run in this session, if one was started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<crate::workflow::WorkflowView>,
    /// The advisory specialists the agent consulted, in order: lineage (the parent's `task`
    /// action), state, answer and usage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub specialists: Vec<SpecialistTaskView>,
    /// What the session waits for from the researcher before anything goes on (a decision, a
    /// workflow stage's acceptance, evaluation, correction or next run), with the steps that
    /// continue it; `None` while work is active or nothing waits. The one rule every interface
    /// reads instead of taking a settled agent ("finished") for a finished session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<WaitsFor>,
}

/// What a settled session waits for from the researcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// A set of proposed actions waits for a decision.
    Decision,
    /// A workflow stage passed its checks and waits for the researcher's acceptance.
    WorkflowAcceptance,
    /// A workflow stage's turn ended and its checks have not been run.
    WorkflowEvaluation,
    /// A workflow stage's checks did not pass: correct it, run it again, or cancel.
    WorkflowCorrection,
    /// The next workflow stage waits to be run.
    WorkflowNextStage,
}

impl WaitKind {
    /// In a few words, as lists print it ("waiting for acceptance").
    pub fn words(self) -> &'static str {
        match self {
            WaitKind::Decision => "waiting for a decision",
            WaitKind::WorkflowAcceptance => "waiting for acceptance",
            WaitKind::WorkflowEvaluation => "waiting for checks",
            WaitKind::WorkflowCorrection => "checks failed, waiting",
            WaitKind::WorkflowNextStage => "waiting: next stage",
        }
    }
}

/// What a session waits for, and what continues it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WaitsFor {
    /// What it waits for.
    pub kind: WaitKind,
    /// The workflow stage it waits at (its id), for a workflow wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// In words, with what continues it (the status line says the same).
    pub text: String,
    /// The steps that continue it, the usual one first: each interface offers them as its own
    /// keys, buttons or commands.
    pub steps: Vec<NextStep>,
}

/// One step that continues a waiting session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NextStep {
    /// The step, in words ("Accept “Data readiness”").
    pub label: String,
    /// The command it submits.
    pub command: crate::CommandName,
    /// The same from a shell, run in the project's folder.
    pub shell: String,
}

/// One specialist task: the parent's `task` action, what the child answered, what it used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpecialistTaskView {
    /// The parent's action that asked.
    pub action_id: u64,
    /// The catalog role asked.
    pub role: String,
    /// What was asked, in a few words.
    pub description: String,
    /// Where the task stands (the parent action's state).
    pub state: ActionState,
    /// The answer (the start of it, for a long one), once it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// A review's structured proposals: advisory candidates, not findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposals: Option<Vec<crate::workflow::ReviewProposal>>,
    /// The child's model usage.
    pub usage: UsageFigures,
}

/// One message in the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationEntry {
    /// The event that recorded it.
    pub seq: u64,
    /// Who said it.
    pub role: Role,
    /// Who said it, as every interface names the speaker ("you", "agent", "heartwood").
    #[serde(default)]
    pub speaker: String,
    /// What was said.
    pub text: String,
    /// The agent's words as Markdown blocks (empty for the researcher's, shown as typed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<crate::Block>,
}

/// One action at its latest version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ActionView {
    /// The action as proposed.
    #[serde(flatten)]
    pub proposal: ActionProposal,
    /// One line every interface shows for it: the model's own summary when it gave one, else
    /// what the call does.
    #[serde(default)]
    pub headline: String,
    /// The event that recorded the proposal, to place the action among the messages.
    pub proposed_seq: u64,
    /// Its latest version (1 = as proposed).
    pub version: u32,
    /// Where it stands.
    pub state: ActionState,
    /// Who allowed it, the start of its output, or why it failed or was rejected.
    pub detail: Option<String>,
    /// For terminal commands, the exit code.
    pub exit_code: Option<i64>,
    /// For successful file edits, the project-relative path written.
    pub changed_path: Option<String>,
    /// When it started running (interfaces show the time since, while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<crate::Timestamp>,
}

/// A recorded decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionView {
    /// The set decided.
    pub set_id: ActionSetId,
    /// The revision it named.
    pub revision: u64,
    /// The decision.
    pub decision: Decision,
    /// The researcher's reason, if given.
    pub reason: Option<String>,
    /// The event that recorded it.
    pub seq: u64,
}

/// Usage in total and per purpose.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct UsageView {
    /// Everything together.
    pub total: UsageFigures,
    /// One line for people: tokens in and out and the cost in money, or "cost unknown" when
    /// some calls had no price (empty before the first call).
    #[serde(default)]
    pub summary: String,
    /// Per purpose, in the order purposes first appeared.
    pub by_purpose: Vec<PurposeUsage>,
}

/// Usage for one purpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PurposeUsage {
    /// The purpose id: `agent`, `condenser`, `task:<id>`.
    pub purpose: String,
    /// A label for people.
    pub label: String,
    /// The figures.
    pub usage: UsageFigures,
}

impl SessionProjection {
    /// The projection of a session with no events yet.
    pub fn empty(session: SessionId) -> Self {
        SessionProjection {
            session,
            revision: 0,
            lifecycle: Lifecycle::Idle,
            closed: false,
            policy: ActionPolicy::AlwaysReview,
            conversation: Vec::new(),
            actions: Vec::new(),
            pending: None,
            last_decision: None,
            task_plan: Vec::new(),
            usage: UsageView::default(),
            last_error: None,
            exports: 0,
            activity: String::new(),
            stopping: None,
            interrupted: false,
            title: None,
            available_commands: Vec::new(),
            text_means: crate::CommandName::SubmitTask,
            status_line: String::new(),
            suggestions: Vec::new(),
            workflow: None,
            specialists: Vec::new(),
            waits_for: None,
        }
    }

    /// Whether the agent has stopped and any set it waits on is published: what an interface
    /// that follows a run waits for.
    pub fn is_settled(&self) -> bool {
        match self.lifecycle {
            Lifecycle::Running => false,
            Lifecycle::WaitingForDecision => self.pending.is_some(),
            _ => true,
        }
    }

    /// Whether a run is open: working, settling its proposal, or paused. Such a run can be
    /// interrupted; a finished, failed or waiting one cannot.
    pub fn run_is_open(&self) -> bool {
        !self.is_settled() || self.lifecycle == Lifecycle::Paused
    }

    /// What text the researcher types means now, the same in every interface: a new task when
    /// the session rests (or is closed), guidance and then resuming when it is paused, guidance
    /// while the agent works or a decision is due. `policy` applies to a new task.
    pub fn text_commands(&self, text: &str, policy: ActionPolicy) -> Vec<crate::CommandKind> {
        use crate::CommandKind;
        let text = text.to_owned();
        if self.closed {
            return vec![CommandKind::SubmitTask { text, policy }];
        }
        match self.lifecycle {
            Lifecycle::Idle | Lifecycle::Finished | Lifecycle::Failed | Lifecycle::Stuck => {
                vec![CommandKind::SubmitTask { text, policy }]
            }
            Lifecycle::Paused => vec![CommandKind::SendGuidance { text }, CommandKind::Resume],
            Lifecycle::Running | Lifecycle::WaitingForDecision => {
                vec![CommandKind::SendGuidance { text }]
            }
        }
    }

    /// The action with this id.
    pub fn action(&self, action_id: u64) -> Option<&ActionView> {
        let i = self
            .actions
            .binary_search_by_key(&action_id, |a| a.proposal.action_id)
            .ok()?;
        self.actions.get(i)
    }

    /// Whether the gateway accepts this kind of command now.
    pub fn allows(&self, command: crate::CommandName) -> bool {
        self.available_commands.contains(&command)
    }

    /// What a researcher's "stop" (Ctrl-C in `exec`, a kernel interrupt in the notebook) sends
    /// now: an interrupt when one is taken (it kills the running action and pauses), else a
    /// pause at the next step; `None` when the run cannot be stopped.
    pub fn stop_command(&self) -> Option<crate::CommandKind> {
        use crate::{CommandKind, CommandName};
        if self.allows(CommandName::Interrupt) {
            Some(CommandKind::Interrupt)
        } else if self.allows(CommandName::Pause) {
            Some(CommandKind::Pause)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CommandKind, CommandName};

    #[test]
    fn stop_interrupts_when_it_can_else_pauses_else_sends_nothing() {
        let mut p = SessionProjection::empty(crate::SessionId::parse("s-1").expect("id"));
        p.available_commands = vec![CommandName::Pause, CommandName::Interrupt];
        assert_eq!(p.stop_command(), Some(CommandKind::Interrupt));
        p.available_commands = vec![CommandName::Pause];
        assert_eq!(p.stop_command(), Some(CommandKind::Pause));
        p.available_commands = vec![CommandName::SubmitTask];
        assert_eq!(p.stop_command(), None);
    }
}
