//! Why the gateway refused a command, as data: each kind carries the fields an interface acts
//! on (the set and revision waiting now, the checks that failed, the commands available), and
//! the one sentence a researcher reads is rendered from it ([`Refusal`]'s `Display`), so no
//! interface tells refusals apart by their words.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ActionSetId, CommandName, Lifecycle, SessionId};

/// Why a command was refused; nothing changed. On the wire, the `kind` tag beside the fields
/// (and, in a receipt, the rendered `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// A task or guidance with no words in it.
    EmptyText,
    /// A rename to a blank title.
    EmptyTitle,
    /// A decision while no action set waits for one.
    NothingPending {
        /// What the session is doing instead.
        lifecycle: Lifecycle,
    },
    /// A decision on a set or revision that is not the one waiting now, or an allow of a set
    /// whose preview went stale (the set was shown again, as a new revision).
    StaleDecision {
        /// The set the decision named.
        set_id: ActionSetId,
        /// The revision the decision named.
        revision: u64,
        /// The set waiting now.
        pending_set_id: ActionSetId,
        /// Its revision now: the one to review and decide.
        pending_revision: u64,
        /// Files whose bytes changed since the set's preview was made (an allow refused
        /// because what was shown is not what would run).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changed: Vec<String>,
    },
    /// The command is not one the session takes while it is doing what it does.
    Busy {
        /// The command refused.
        command: CommandName,
        /// What the session is doing.
        lifecycle: Lifecycle,
        /// The commands it takes now.
        available: Vec<CommandName>,
    },
    /// The session was closed: a new task reopens it.
    Closed {
        /// The command refused.
        command: CommandName,
        /// The commands a closed session takes.
        available: Vec<CommandName>,
    },
    /// The workflow stage's budget is used up: no further model continuation in this stage.
    BudgetUsedUp {
        /// The limit reached, in words.
        limit: String,
    },
    /// The agent cannot be started or served for the command (no model route, an unset key,
    /// an unreachable service, another engine).
    AgentUnavailable {
        /// What is missing and what to do, in words.
        why: String,
    },
    /// A workflow command to a session that runs no workflow.
    NoWorkflow,
    /// A workflow start in a session already used.
    SessionInUse {
        /// Whether the session already runs a workflow (otherwise it holds a conversation).
        runs_workflow: bool,
    },
    /// The workflow (its definition, inputs or evidence) cannot be used as the command needs:
    /// an unknown definition, an input that cannot be read, a definition changed since the run
    /// bound it.
    WorkflowUnusable {
        /// What was found, in words.
        why: String,
    },
    /// A workflow control the run does not offer now.
    NotPossibleNow {
        /// The command refused.
        command: CommandName,
        /// The current stage's state in words (`stage “Clean” is running`), or `None` when the
        /// run has ended.
        stage: Option<String>,
        /// Whether work is active or a set waits for a decision.
        active: bool,
    },
    /// An acceptance of a stage whose checks do not pass.
    NotEligible {
        /// The stage.
        stage: String,
        /// What its checks found, first the most telling.
        problems: Vec<String>,
    },
    /// A workflow command that names a revision, assessment or preview the run moved past.
    StaleRun {
        /// What was stale.
        part: RunPart,
        /// What the command named.
        shown: String,
        /// What the run holds now.
        current: String,
    },
    /// The run moved on while what the command needed was read before the lock.
    RunMovedOn {
        /// What was being read.
        during: MovedDuring,
    },
    /// A correction while the run does not rest at a stage.
    NotAtRest,
    /// A consent to run a review batch at once when none waits for it.
    NoReviewBatch,
    /// Files the run relies on (or, to accept, that its checks judged) changed since.
    EvidenceChanged {
        /// The files, as the project names them.
        files: Vec<String>,
        /// The session, when the files were the ones an acceptance rests on (evaluate again).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judged_in: Option<SessionId>,
    },
    /// A correction whose recheck still observes the defect, or that replaces no output of the
    /// current stage.
    CorrectionNotBindable {
        /// What was found, in words.
        why: String,
    },
    /// A refusal this build cannot type: a receipt written before refusals were typed, or a
    /// kind a newer build wrote. The words are kept as they were.
    Other {
        /// The refusal as it was worded.
        why: String,
    },
}

/// The part of a workflow run a [`Refusal::StaleRun`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunPart {
    /// The run's revision.
    Revision,
    /// The stage's assessment (its fingerprint), as accepted.
    Assessment,
    /// A parallel review's preview, as consented to.
    Preview,
}

/// What [`Refusal::RunMovedOn`] was reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MovedDuring {
    /// The stage's checks.
    Checks,
    /// A correction's recheck.
    Recheck,
}

impl Refusal {
    /// The `kind` tag, as on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::EmptyText => "empty_text",
            Refusal::EmptyTitle => "empty_title",
            Refusal::NothingPending { .. } => "nothing_pending",
            Refusal::StaleDecision { .. } => "stale_decision",
            Refusal::Busy { .. } => "busy",
            Refusal::Closed { .. } => "closed",
            Refusal::BudgetUsedUp { .. } => "budget_used_up",
            Refusal::AgentUnavailable { .. } => "agent_unavailable",
            Refusal::NoWorkflow => "no_workflow",
            Refusal::SessionInUse { .. } => "session_in_use",
            Refusal::WorkflowUnusable { .. } => "workflow_unusable",
            Refusal::NotPossibleNow { .. } => "not_possible_now",
            Refusal::NotEligible { .. } => "not_eligible",
            Refusal::StaleRun { .. } => "stale_run",
            Refusal::RunMovedOn { .. } => "run_moved_on",
            Refusal::NotAtRest => "not_at_rest",
            Refusal::NoReviewBatch => "no_review_batch",
            Refusal::EvidenceChanged { .. } => "evidence_changed",
            Refusal::CorrectionNotBindable { .. } => "correction_not_bindable",
            Refusal::Other { .. } => "other",
        }
    }

    /// Whether what the command named was shown before the session moved on: looking again
    /// and deciding again is the answer.
    pub fn is_stale(&self) -> bool {
        self.class() == RefusalClass::Stale
    }

    /// What the refusal asks of whoever sent the command: decided once here, so every
    /// interface maps the same classes to its own signal (an exit code, an HTTP status).
    pub fn class(&self) -> RefusalClass {
        match self {
            Refusal::StaleDecision { .. }
            | Refusal::StaleRun { .. }
            | Refusal::RunMovedOn { .. }
            | Refusal::EvidenceChanged { .. } => RefusalClass::Stale,
            Refusal::NothingPending { .. }
            | Refusal::Busy { .. }
            | Refusal::Closed { .. }
            | Refusal::BudgetUsedUp { .. }
            | Refusal::NoWorkflow
            | Refusal::SessionInUse { .. }
            | Refusal::NotPossibleNow { .. }
            | Refusal::NotAtRest
            | Refusal::NoReviewBatch => RefusalClass::NotNow,
            Refusal::NotEligible { .. } | Refusal::CorrectionNotBindable { .. } => {
                RefusalClass::NotEligible
            }
            Refusal::AgentUnavailable { .. } => RefusalClass::AgentUnavailable,
            Refusal::EmptyText | Refusal::EmptyTitle | Refusal::WorkflowUnusable { .. } => {
                RefusalClass::InvalidInput
            }
            Refusal::Other { .. } => RefusalClass::Other,
        }
    }
}

/// What a refusal asks of whoever sent the command, whatever its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalClass {
    /// What it named moved on: look again, and decide again.
    Stale,
    /// The session does not take it as it stands now (busy, closed, nothing pending, not at
    /// that point of the run): it may later.
    NotNow,
    /// The stage's checks, or a correction's recheck, do not pass.
    NotEligible,
    /// The agent cannot be served (no route, an unset key, an unreachable service): it may be
    /// once that is put right.
    AgentUnavailable,
    /// What the command says cannot be used: sending it again changes nothing.
    InvalidInput,
    /// A refusal this build cannot type (recorded before refusals were typed, or by a newer
    /// build).
    Other,
}

fn names(commands: &[CommandName]) -> String {
    let names: Vec<&str> = commands.iter().map(|c| c.as_str()).collect();
    names.join(", ")
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::EmptyText => f.write_str("the text is empty; say what the agent should do"),
            Refusal::EmptyTitle => {
                f.write_str("the title is empty; give the session a title in words")
            }
            Refusal::NothingPending { lifecycle } => write!(
                f,
                "there is no action set waiting for a decision; the session is {}",
                lifecycle.as_str()
            ),
            Refusal::StaleDecision {
                set_id,
                revision,
                pending_set_id,
                pending_revision,
                changed,
            } => {
                if !changed.is_empty() {
                    write!(
                        f,
                        "{} changed since set {set_id} was shown, so its preview is stale; the \
                         set is shown again as revision {pending_revision}: review it and \
                         decide again",
                        changed.join(", ")
                    )
                } else if set_id != pending_set_id {
                    write!(
                        f,
                        "set {set_id} is not the pending set; set {pending_set_id} (revision \
                         {pending_revision}) is waiting for a decision"
                    )
                } else {
                    write!(
                        f,
                        "revision {revision} of set {set_id} is stale; the set is at revision \
                         {pending_revision}. Review it as shown now and decide again"
                    )
                }
            }
            Refusal::Busy {
                command,
                lifecycle,
                available,
            } => {
                let hint = match (command, lifecycle) {
                    (CommandName::SubmitTask, Lifecycle::Running | Lifecycle::Paused) => {
                        "; a task is already active: send guidance, or wait for it to finish"
                    }
                    (CommandName::SubmitTask, Lifecycle::WaitingForDecision) => {
                        "; decide the pending action set first"
                    }
                    _ => "",
                };
                write!(
                    f,
                    "`{command}` is not available while the session is {}{hint} (available \
                     now: {})",
                    lifecycle.as_str(),
                    names(available)
                )
            }
            Refusal::Closed { command, available } => write!(
                f,
                "`{command}` is not available: the session was closed; a new task reopens it \
                 (available now: {})",
                names(available)
            ),
            Refusal::BudgetUsedUp { limit } => write!(
                f,
                "the workflow stage's budget is used up ({limit}): the agent gets no further \
                 model continuation in this stage; evaluate what it wrote, or cancel the run"
            ),
            Refusal::AgentUnavailable { why }
            | Refusal::WorkflowUnusable { why }
            | Refusal::CorrectionNotBindable { why }
            | Refusal::Other { why } => f.write_str(why),
            _ => self.workflow(f),
        }
    }
}

impl Refusal {
    /// The sentence of a workflow kind (split from `fmt` to keep each short).
    fn workflow(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoWorkflow => f.write_str("this session runs no workflow"),
            Refusal::SessionInUse {
                runs_workflow: true,
            } => {
                f.write_str("this session already runs a workflow; start another in a new session")
            }
            Refusal::SessionInUse {
                runs_workflow: false,
            } => f.write_str("a workflow starts only in an unused session; start it in a new one"),
            Refusal::NotPossibleNow {
                command,
                stage,
                active,
            } => write!(
                f,
                "{} is not possible now: {}{}",
                command.as_str().replace('_', " "),
                stage.as_deref().unwrap_or("the run has ended"),
                if *active {
                    ", and work is active or a set waits for a decision"
                } else {
                    ""
                }
            ),
            Refusal::NotEligible { stage, problems } => write!(
                f,
                "stage {stage} is not eligible: {}",
                problems
                    .first()
                    .map_or("its checks did not pass", String::as_str)
            ),
            Refusal::StaleRun {
                part: RunPart::Revision,
                shown,
                current,
            } => write!(
                f,
                "revision {shown} of the run is stale; it is at revision {current}: look again \
                 and decide again"
            ),
            Refusal::StaleRun {
                part: RunPart::Assessment,
                shown,
                current,
            } => write!(
                f,
                "the assessment you accepted ({shown}) is not the one shown now ({current}): \
                 look at it again"
            ),
            Refusal::StaleRun {
                part: RunPart::Preview,
                shown,
                current,
            } => write!(
                f,
                "the preview you consented to ({shown}) is not the one shown now ({current}): \
                 look at it again"
            ),
            Refusal::RunMovedOn {
                during: MovedDuring::Checks,
            } => f.write_str("the run moved on while its checks ran; look again"),
            Refusal::RunMovedOn {
                during: MovedDuring::Recheck,
            } => f.write_str("the run moved on while the correction was rechecked; look again"),
            Refusal::NotAtRest => f.write_str(
                "a correction is bound only while the run rests at a stage (no work active, no \
                 set waiting)",
            ),
            Refusal::NoReviewBatch => f.write_str(
                "no review batch waits to run at once now (none previewed, already consented, \
                 or the set was decided)",
            ),
            Refusal::EvidenceChanged {
                files,
                judged_in: None,
            } => write!(
                f,
                "changed since the run bound or accepted it: {}; the evidence built on it no \
                 longer holds. Put each file back as it was (a missing one from your copy or \
                 Git), or start a new run on the files as they are now",
                files.join(", ")
            ),
            Refusal::EvidenceChanged {
                files,
                judged_in: Some(session),
            } => write!(
                f,
                "not accepted: the files this stage's checks judged are not the ones in the \
                 project now: {}. A stage is accepted only on the bytes its checks judged: \
                 check it again with `heartwood workflow evaluate {session}` (or put the files \
                 back as they were)",
                files.join(", ")
            ),
            // Worded by `fmt`, which sends only the workflow kinds here.
            _ => f.write_str(self.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_tagged_by_its_kind_on_the_wire() {
        let refusal = Refusal::NothingPending {
            lifecycle: Lifecycle::Running,
        };
        let wire = serde_json::to_value(&refusal).expect("serializes");
        assert_eq!(wire["kind"], refusal.kind());
        let back: Refusal = serde_json::from_value(wire).expect("reads back");
        assert_eq!(back, refusal);
    }
}
