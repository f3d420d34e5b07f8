//! Durable events: what happened in a session, one JSON line each in `events.jsonl`.
//!
//! [`Event`] is internally tagged by `type`; [`RecordedEvent`] wraps it with the schema
//! version, sequence number, time and the command that caused it. New kinds are added as new
//! variants (and to [`Event::KINDS`]); a reader that meets a kind it does not know, or a schema
//! newer than its own, says so instead of mis-parsing the line.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::decode::{Required, Versioned, decode_versioned};
use crate::{
    ActionPolicy, ActionProposal, ActionSet, ActionSetId, ActionState, CommandId, Decision,
    DecodeError, Lifecycle, PlanTask, SCHEMA_VERSION, Seq, Timestamp, UsageFigures,
};

/// Something that happened in a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session was created by its first mutating command.
    SessionRegistered {
        /// The agent backend that serves this session, for example `native`.
        backend: String,
        /// The workflow definition the session runs, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workflow: Option<String>,
    },
    /// A message in the conversation.
    Message {
        /// Who said it.
        role: Role,
        /// The message text.
        text: String,
    },
    /// An export was written; it covers every event before this one.
    ExportRecorded {
        /// The bundle's directory name under the session's `exports/` (a crate's journal is
        /// that bundle's; a transcript has none).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        bundle: String,
        /// The form, when not a bundle (`markdown`, `ro_crate`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<crate::ExportFormat>,
        /// Where the export was written outside the session, as the researcher named it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        destination: Option<String>,
        /// How many events the bundle holds.
        count: u64,
        /// The audit hash of the bundle's last record (hex SHA-256).
        terminal_hash: String,
    },
    /// The session was closed by its owner; a later command may reopen it.
    SessionClosed {},
    /// The researcher titled the session.
    SessionRenamed {
        /// The title, one line of at most 80 characters.
        title: String,
    },
    /// The researcher gave the agent a task.
    TaskSubmitted {
        /// The task, in the researcher's words.
        text: String,
        /// The action policy for this task.
        policy: ActionPolicy,
        /// The Git commit the project's files matched exactly when the task was given (so a
        /// replay can start from the same files); absent outside Git or with uncommitted changes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        starting_commit: Option<String>,
    },
    /// The researcher added guidance while a task was active.
    GuidanceSent {
        /// The guidance.
        text: String,
    },
    /// The researcher asked the agent to pause at its next step.
    PauseRequested {},
    /// The researcher asked to stop now: the running tool is killed and the agent pauses.
    InterruptRequested {},
    /// The researcher resumed a paused task.
    RunResumed {},
    /// The agent's lifecycle changed.
    LifecycleChanged {
        /// The new lifecycle.
        lifecycle: Lifecycle,
    },
    /// The agent proposed an action.
    ActionProposed {
        /// The action.
        action: ActionProposal,
    },
    /// An action moved on; `version` counts the action's records from 1 (the proposal).
    ActionUpdated {
        /// The action.
        action_id: u64,
        /// This record's version for the action.
        version: u32,
        /// The new state.
        state: ActionState,
        /// Who allowed it, the start of its output, or why it failed or was rejected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// For terminal commands, the exit code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// For successful file edits, the project-relative path the edit wrote.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changed_path: Option<String>,
    },
    /// The agent settled with a set of actions that waits for one decision.
    ActionSetPending {
        /// The whole set.
        set: ActionSet,
    },
    /// The pending set was decided.
    DecisionRecorded {
        /// The set decided.
        set_id: ActionSetId,
        /// The revision the decision named.
        revision: u64,
        /// The decision.
        decision: Decision,
        /// Why, if the researcher said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The agent's task plan changed.
    TaskPlanUpdated {
        /// The whole plan.
        tasks: Vec<PlanTask>,
    },
    /// A model call's usage.
    UsageRecorded {
        /// What the call was for: `agent`, `condenser`, `task:<id>`.
        purpose: String,
        /// The call's figures.
        usage: UsageFigures,
    },
    /// The agent's run failed.
    ErrorRecorded {
        /// What went wrong and what to do next.
        message: String,
    },
    /// Older history was summarized for the model; the record keeps everything.
    ContextCondensed {
        /// How many events the model no longer sees verbatim.
        forgotten: u64,
    },
    /// A run stopped without the agent finishing it: the process ended, or the worker failed.
    RunInterrupted {
        /// What happened and what to do next.
        reason: String,
    },
    /// A research workflow run started in this session, its locations bound.
    WorkflowStarted(Box<crate::workflow::WorkflowStart>),
    /// A stage's agent turn was dispatched (the task just before carries its prompt).
    WorkflowStageStarted {
        /// The run.
        run_id: String,
        /// The stage.
        stage: String,
    },
    /// A stage's independent checks ran on the files as they are.
    WorkflowStageEvaluated {
        /// The run.
        run_id: String,
        /// What the checks found.
        assessment: Box<crate::workflow::AssessmentView>,
    },
    /// A stage was accepted: by the researcher, bound to the fingerprint shown, or by its
    /// eligible checks where the definition asks no acceptance.
    WorkflowStageAccepted {
        /// The run.
        run_id: String,
        /// The stage.
        stage: String,
        /// The assessment accepted.
        fingerprint: String,
        /// Whether a researcher accepted it (else the definition's rule did).
        by_researcher: bool,
    },
    /// A limit of the current stage's budget was used up during its turn: the gateway paused
    /// the agent, and no further model continuation runs in this stage.
    WorkflowBudgetExhausted {
        /// The run.
        run_id: String,
        /// The stage.
        stage: String,
        /// The limit, in words (`actions 30 of 30`).
        limit: String,
    },
    /// A reproduction's rerun was prepared as it was allowed alone.
    WorkflowReproductionPrepared(Box<crate::workflow::ReproductionPrepared>),
    /// A reproduction's rerun was observed to complete.
    WorkflowReproductionCompleted(Box<crate::workflow::ReproductionCompleted>),
    /// A review of a stage began, its files captured.
    WorkflowReviewStarted(Box<crate::workflow::ReviewStarted>),
    /// The gateway assessed a settled review's proposals.
    WorkflowReviewAssessed(Box<crate::workflow::ReviewAssessed>),
    /// A rechecked correction now stands for the current stage's output.
    WorkflowCorrectionBound {
        /// The run.
        run_id: String,
        /// The review whose finding it corrects.
        review_id: String,
        /// The finding's index.
        finding: u32,
        /// The output replaced (its binding id).
        artifact: String,
        /// Its path before (the file is kept).
        from: String,
        /// The correction's path.
        to: String,
    },
    /// The run was cancelled.
    WorkflowCancelled {
        /// The run.
        run_id: String,
    },
    /// A review's batch was shown: whether it may run at once, and the preview if so.
    ReviewExecutionPrepared {
        /// The pending set.
        set_id: String,
        /// Its reviewers, in the set's order.
        reviewers: Vec<crate::review_execution::ReviewChild>,
        /// Parallel (with its preview) or sequential (with why).
        offer: crate::review_execution::ReviewOffer,
    },
    /// The researcher consented to run a review batch at once, as previewed.
    ReviewParallelConsented {
        /// The preview's digest.
        preview: String,
    },
    /// At dispatch, the gateway admitted the consented batch to run at once.
    ReviewParallelAdmitted {
        /// The preview's digest.
        preview: String,
        /// Children at once.
        parallelism: u32,
    },
    /// At dispatch, the gateway found the consented preview no longer true: the batch runs
    /// one reviewer after another.
    ReviewParallelRefused {
        /// The preview's digest.
        preview: String,
        /// What changed.
        reason: String,
    },
}

/// Who wrote a conversation message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person using Heartwood.
    Researcher,
    /// The agent.
    Agent,
    /// Heartwood itself.
    System,
}

impl Role {
    /// The role's name as written on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Researcher => "researcher",
            Role::Agent => "agent",
            Role::System => "system",
        }
    }
}

/// The `type` tag of an [`Event`], as written on disk.
pub type EventKind = &'static str;

impl Event {
    /// Every `type` tag this build can read.
    pub const KINDS: &'static [EventKind] = &[
        "session_registered",
        "message",
        "export_recorded",
        "session_closed",
        "session_renamed",
        "task_submitted",
        "guidance_sent",
        "pause_requested",
        "interrupt_requested",
        "run_resumed",
        "lifecycle_changed",
        "action_proposed",
        "action_updated",
        "action_set_pending",
        "decision_recorded",
        "task_plan_updated",
        "usage_recorded",
        "error_recorded",
        "context_condensed",
        "run_interrupted",
        "workflow_started",
        "workflow_stage_started",
        "workflow_stage_evaluated",
        "workflow_stage_accepted",
        "workflow_budget_exhausted",
        "workflow_reproduction_prepared",
        "workflow_reproduction_completed",
        "workflow_review_started",
        "workflow_review_assessed",
        "workflow_correction_bound",
        "workflow_cancelled",
        "review_execution_prepared",
        "review_parallel_consented",
        "review_parallel_admitted",
        "review_parallel_refused",
    ];

    /// This event's `type` tag.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::SessionRegistered { .. } => "session_registered",
            Event::Message { .. } => "message",
            Event::ExportRecorded { .. } => "export_recorded",
            Event::SessionClosed {} => "session_closed",
            Event::SessionRenamed { .. } => "session_renamed",
            Event::TaskSubmitted { .. } => "task_submitted",
            Event::GuidanceSent { .. } => "guidance_sent",
            Event::PauseRequested {} => "pause_requested",
            Event::InterruptRequested {} => "interrupt_requested",
            Event::RunResumed {} => "run_resumed",
            Event::LifecycleChanged { .. } => "lifecycle_changed",
            Event::ActionProposed { .. } => "action_proposed",
            Event::ActionUpdated { .. } => "action_updated",
            Event::ActionSetPending { .. } => "action_set_pending",
            Event::DecisionRecorded { .. } => "decision_recorded",
            Event::TaskPlanUpdated { .. } => "task_plan_updated",
            Event::UsageRecorded { .. } => "usage_recorded",
            Event::ErrorRecorded { .. } => "error_recorded",
            Event::ContextCondensed { .. } => "context_condensed",
            Event::RunInterrupted { .. } => "run_interrupted",
            Event::WorkflowStarted(..) => "workflow_started",
            Event::WorkflowStageStarted { .. } => "workflow_stage_started",
            Event::WorkflowStageEvaluated { .. } => "workflow_stage_evaluated",
            Event::WorkflowStageAccepted { .. } => "workflow_stage_accepted",
            Event::WorkflowBudgetExhausted { .. } => "workflow_budget_exhausted",
            Event::WorkflowReproductionPrepared(..) => "workflow_reproduction_prepared",
            Event::WorkflowReproductionCompleted(..) => "workflow_reproduction_completed",
            Event::WorkflowReviewStarted(..) => "workflow_review_started",
            Event::WorkflowReviewAssessed(..) => "workflow_review_assessed",
            Event::WorkflowCorrectionBound { .. } => "workflow_correction_bound",
            Event::WorkflowCancelled { .. } => "workflow_cancelled",
            Event::ReviewExecutionPrepared { .. } => "review_execution_prepared",
            Event::ReviewParallelConsented { .. } => "review_parallel_consented",
            Event::ReviewParallelAdmitted { .. } => "review_parallel_admitted",
            Event::ReviewParallelRefused { .. } => "review_parallel_refused",
        }
    }

    /// Whether a workflow run (or one of its review batches) recorded this event. The list is
    /// kept here alone: the session reducer leaves these events to the run's own fold, and a
    /// transcript shows each as one line, so a new workflow event is added once, here.
    pub fn is_workflow_run(&self) -> bool {
        match self {
            Event::WorkflowStarted(..)
            | Event::WorkflowStageStarted { .. }
            | Event::WorkflowStageEvaluated { .. }
            | Event::WorkflowStageAccepted { .. }
            | Event::WorkflowBudgetExhausted { .. }
            | Event::WorkflowReproductionPrepared(..)
            | Event::WorkflowReproductionCompleted(..)
            | Event::WorkflowReviewStarted(..)
            | Event::WorkflowReviewAssessed(..)
            | Event::WorkflowCorrectionBound { .. }
            | Event::WorkflowCancelled { .. }
            | Event::ReviewExecutionPrepared { .. }
            | Event::ReviewParallelConsented { .. }
            | Event::ReviewParallelAdmitted { .. }
            | Event::ReviewParallelRefused { .. } => true,
            // Listed, not `_`: a new event must be placed on one side or the other.
            Event::SessionRegistered { .. }
            | Event::Message { .. }
            | Event::ExportRecorded { .. }
            | Event::SessionClosed {}
            | Event::SessionRenamed { .. }
            | Event::TaskSubmitted { .. }
            | Event::GuidanceSent { .. }
            | Event::PauseRequested {}
            | Event::InterruptRequested {}
            | Event::RunResumed {}
            | Event::LifecycleChanged { .. }
            | Event::ActionProposed { .. }
            | Event::ActionUpdated { .. }
            | Event::ActionSetPending { .. }
            | Event::DecisionRecorded { .. }
            | Event::TaskPlanUpdated { .. }
            | Event::UsageRecorded { .. }
            | Event::ErrorRecorded { .. }
            | Event::ContextCondensed { .. }
            | Event::RunInterrupted { .. } => false,
        }
    }
}

/// An event as stored: the event plus its place in the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RecordedEvent {
    /// The format version the writer used.
    pub schema: u32,
    /// Position in the session, from 1 with no gaps.
    pub seq: Seq,
    /// When the event was recorded.
    pub time: Timestamp,
    /// The command that caused the event, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandId>,
    /// The agent backend's event this one was translated from, for events derived from the
    /// backend: it lets the gateway reconcile the journal with the backend's log by identity,
    /// and detect a backend log that no longer holds what the journal recorded of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// The event itself; its `type` tag sits beside the fields above.
    #[serde(flatten)]
    pub event: Event,
}

/// Which backend event a journaled event came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Origin {
    /// The backend event's position in the backend's log, from 1.
    pub event: u64,
    /// SHA-256 (hex) of the backend event as its log stores it.
    pub sha256: String,
}

impl RecordedEvent {
    /// Wraps `event` as the `seq`th event of a session, stamped now.
    pub fn new(seq: Seq, command: Option<CommandId>, event: Event) -> Self {
        RecordedEvent {
            schema: SCHEMA_VERSION,
            seq,
            time: Timestamp::now(),
            command,
            origin: None,
            event,
        }
    }

    /// Reads one stored line, reporting newer formats and unknown kinds by name.
    pub fn decode(line: &[u8]) -> Result<Self, DecodeError> {
        let malformed = |e: serde_json::Error| DecodeError::Malformed(e.to_string());
        let head: Envelope = decode_versioned(line, "event", Event::KINDS, Required::Yes)?;
        // The event is read from the same line: its variants ignore the envelope's members. This
        // is about twice as fast as `#[serde(flatten)]`, which buffers every member twice.
        let event: Event = serde_json::from_slice(line).map_err(malformed)?;
        Ok(RecordedEvent {
            // Checked above: present, an integer, and no newer than this build's.
            schema: head
                .schema
                .as_ref()
                .and_then(serde_json::Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(SCHEMA_VERSION),
            seq: head.seq,
            time: head.time,
            command: head.command,
            origin: head.origin,
            event,
        })
    }
}

/// The envelope members of a stored event line; the event's own members are skipped unread.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    schema: Option<serde_json::Value>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    seq: Seq,
    time: Timestamp,
    #[serde(default)]
    command: Option<CommandId>,
    #[serde(default)]
    origin: Option<Origin>,
}

impl Versioned for Envelope {
    fn schema(&self) -> Option<&serde_json::Value> {
        self.schema.as_ref()
    }
    fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of each event kind.
    fn samples() -> Vec<Event> {
        let mut events = vec![
            Event::SessionRegistered {
                backend: "native".into(),
                workflow: None,
            },
            Event::Message {
                role: Role::Researcher,
                text: "fit the model".into(),
            },
            Event::ExportRecorded {
                bundle: "b".into(),
                format: None,
                destination: None,
                count: 3,
                terminal_hash: "00".into(),
            },
            Event::SessionClosed {},
            Event::SessionRenamed {
                title: "cohort checks".into(),
            },
            Event::TaskSubmitted {
                text: "t".into(),
                policy: ActionPolicy::AlwaysReview,
                starting_commit: Some("0123abcd".into()),
            },
            Event::GuidanceSent { text: "g".into() },
            Event::PauseRequested {},
            Event::InterruptRequested {},
            Event::RunResumed {},
            Event::LifecycleChanged {
                lifecycle: Lifecycle::WaitingForDecision,
            },
            Event::ActionProposed { action: proposal() },
            Event::ActionUpdated {
                action_id: 3,
                version: 2,
                state: ActionState::Completed,
                detail: Some("ok".into()),
                exit_code: Some(0),
                changed_path: None,
            },
            Event::ActionSetPending {
                set: ActionSet {
                    set_id: ActionSetId::parse("set-3").expect("id"),
                    revision: 9,
                    members: vec![proposal()],
                },
            },
            Event::DecisionRecorded {
                set_id: ActionSetId::parse("set-3").expect("id"),
                revision: 9,
                decision: Decision::RejectAll,
                reason: Some("no".into()),
            },
            Event::TaskPlanUpdated {
                tasks: vec![PlanTask {
                    title: "a".into(),
                    notes: String::new(),
                    status: crate::PlanStatus::Todo,
                }],
            },
            Event::UsageRecorded {
                purpose: "agent".into(),
                usage: UsageFigures::default(),
            },
            Event::ErrorRecorded {
                message: "e".into(),
            },
            Event::ContextCondensed { forgotten: 4 },
            Event::RunInterrupted { reason: "r".into() },
        ];
        events.extend(workflow_samples());
        events
    }

    /// One of each workflow and review event.
    fn workflow_samples() -> Vec<Event> {
        vec![
            Event::WorkflowStarted(Box::new(crate::workflow::WorkflowStart {
                run_id: "w-1".into(),
                definition: "tabular-ols".into(),
                version: "1.1.0".into(),
                title: "t".into(),
                source: Some(crate::catalog::DefinitionSource::Project),
                definition_sha256: Some("1".repeat(64)),
                question: "q".into(),
                question_sha256: "0".repeat(64),
                bindings: vec![crate::workflow::WorkflowBinding {
                    id: "table".into(),
                    path: "data/t.csv".into(),
                    role: crate::workflow::BindingRole::Input,
                    sha256: Some("1".repeat(64)),
                }],
                stages: vec![crate::workflow::StageSpec {
                    id: "readiness".into(),
                    title: "Readiness".into(),
                    researcher_gate: true,
                    budget: Some(crate::catalog::Budget {
                        model_calls: 1,
                        tokens: 10,
                        actions: 1,
                        seconds: 1,
                    }),
                }],
            })),
            Event::WorkflowStageStarted {
                run_id: "w-1".into(),
                stage: "readiness".into(),
            },
            Event::WorkflowStageEvaluated {
                run_id: "w-1".into(),
                assessment: Box::new(crate::workflow::AssessmentView {
                    stage: "readiness".into(),
                    fingerprint: "f".into(),
                    eligible: false,
                    problems: vec!["p".into()],
                    checks: Vec::new(),
                }),
            },
            Event::WorkflowStageAccepted {
                run_id: "w-1".into(),
                stage: "readiness".into(),
                fingerprint: "f".into(),
                by_researcher: true,
            },
            Event::WorkflowBudgetExhausted {
                run_id: "w-1".into(),
                stage: "readiness".into(),
                limit: "actions 1 of 1".into(),
            },
            Event::WorkflowReproductionPrepared(Box::new(crate::workflow::ReproductionPrepared {
                run_id: "w-1".into(),
                stage: "reproduction".into(),
                action_id: 9,
                destination: "outputs/model.reproduced.json".into(),
                protected: Vec::new(),
            })),
            Event::WorkflowReproductionCompleted(Box::new(
                crate::workflow::ReproductionCompleted {
                    run_id: "w-1".into(),
                    stage: "reproduction".into(),
                    action_id: 9,
                    exit_code: Some(0),
                    output: crate::workflow::InspectedFile {
                        path: "outputs/model.reproduced.json".into(),
                        sha256: Some("2".repeat(64)),
                    },
                    protected: Vec::new(),
                },
            )),
            Event::WorkflowReviewStarted(Box::new(crate::workflow::ReviewStarted {
                run_id: "w-1".into(),
                review_id: "c-9".into(),
                stage: "model".into(),
                evidence: Vec::new(),
            })),
            Event::WorkflowReviewAssessed(Box::new(crate::workflow::ReviewAssessed {
                run_id: "w-1".into(),
                review_id: "c-9".into(),
                proposals: Vec::new(),
                findings: Vec::new(),
                record_sha256: "0".repeat(64),
            })),
            Event::WorkflowCorrectionBound {
                run_id: "w-1".into(),
                review_id: "c-9".into(),
                finding: 0,
                artifact: "fit_code".into(),
                from: "analysis/fit.py".into(),
                to: "analysis/fit_fixed.py".into(),
            },
            Event::WorkflowCancelled {
                run_id: "w-1".into(),
            },
            Event::ReviewExecutionPrepared {
                set_id: "set-1".into(),
                reviewers: vec![crate::review_execution::ReviewChild {
                    action_id: 4,
                    role: "reviewer".into(),
                }],
                offer: crate::review_execution::ReviewOffer::Sequential {
                    why: "no evidence".into(),
                },
            },
            Event::ReviewParallelConsented {
                preview: "d".into(),
            },
            Event::ReviewParallelAdmitted {
                preview: "d".into(),
                parallelism: 3,
            },
            Event::ReviewParallelRefused {
                preview: "d".into(),
                reason: "a file changed".into(),
            },
        ]
    }

    fn proposal() -> ActionProposal {
        ActionProposal {
            action_id: 3,
            response_id: "r1".into(),
            tool: "terminal".into(),
            arguments: "{}".into(),
            risk: crate::RiskLevel::Medium,
            thought: None,
            sandbox: None,
        }
    }

    #[test]
    fn every_kind_is_listed_and_matches_its_serde_tag() {
        let samples = samples();
        assert_eq!(
            samples.len(),
            Event::KINDS.len(),
            "add the new kind to samples()"
        );
        for event in samples {
            let value = serde_json::to_value(&event).expect("serialize");
            assert_eq!(value["type"], event.kind());
            assert!(Event::KINDS.contains(&event.kind()));
        }
    }

    #[test]
    fn a_workflow_runs_events_are_its_own_and_its_review_batches_and_no_others() {
        for event in samples() {
            let kind = event.kind();
            let named = kind.starts_with("workflow_") || kind.starts_with("review_");
            assert_eq!(event.is_workflow_run(), named, "{kind}");
        }
    }

    #[test]
    fn recorded_events_round_trip_through_their_line_form() {
        for (i, event) in samples().into_iter().enumerate() {
            let seq = Seq::new(i as u64 + 1).expect("seq");
            let recorded = RecordedEvent::new(seq, None, event);
            let line = crate::to_canonical_bytes(&recorded).expect("canonical");
            assert_eq!(RecordedEvent::decode(&line), Ok(recorded));
        }
    }

    #[test]
    fn an_unknown_kind_is_reported_by_name_not_misparsed() {
        let line = br#"{"schema":1,"seq":4,"time":"2026-11-30T00:00:00.000Z","type":"telepathy"}"#;
        let err = RecordedEvent::decode(line).expect_err("accepted unknown kind");
        assert_eq!(
            err,
            DecodeError::UnknownKind {
                what: "event",
                kind: "telepathy".into(),
                schema: 1
            }
        );
        assert!(err.to_string().contains("newer version"), "{err}");
    }

    #[test]
    fn a_newer_schema_is_refused_before_its_fields_are_read() {
        let line = br#"{"schema":99,"seq":1,"time":"2026-11-30T00:00:00.000Z","type":"message"}"#;
        assert_eq!(
            RecordedEvent::decode(line),
            Err(DecodeError::NewerSchema {
                what: "event",
                found: 99,
                supported: SCHEMA_VERSION
            })
        );
    }

    #[test]
    fn a_known_kind_with_missing_fields_is_malformed() {
        let line = br#"{"schema":1,"seq":1,"time":"2026-11-30T00:00:00.000Z","type":"message"}"#;
        assert!(matches!(
            RecordedEvent::decode(line),
            Err(DecodeError::Malformed(_))
        ));
    }
}
