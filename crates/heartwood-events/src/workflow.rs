//! A research workflow run inside a session: what is journaled as it moves (started, a stage
//! dispatched, evaluated, accepted, cancelled) and what the projection carries about it, so
//! every interface shows the run from the same typed state and never from the model's prose.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::CommandName;

/// What a run binds when it starts (the `workflow_started` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowStart {
    /// The run's id.
    pub run_id: String,
    /// The definition's id.
    pub definition: String,
    /// The definition's version.
    pub version: String,
    /// The definition's title.
    pub title: String,
    /// Where the definition came from (absent in runs recorded before sources were kept:
    /// maintained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::catalog::DefinitionSource>,
    /// SHA-256 of the definition's exact bytes when the run started; the run refuses to
    /// continue under a definition whose bytes differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_sha256: Option<String>,
    /// The researcher's question.
    pub question: String,
    /// SHA-256 of the question's text.
    pub question_sha256: String,
    /// Every input (with its digest) and artifact location.
    pub bindings: Vec<WorkflowBinding>,
    /// The stages, in order.
    pub stages: Vec<StageSpec>,
}

/// One location the run binds: an input the researcher chose (with its digest when the run
/// started) or an artifact a stage will write. The one source of paths for stage prompts,
/// checks and interface links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowBinding {
    /// The definition's id for it (`table`, `plan`, ...).
    pub id: String,
    /// Project-relative path.
    pub path: String,
    /// `input` or `artifact`.
    pub role: BindingRole,
    /// SHA-256 of an input's bytes when the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// What a binding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BindingRole {
    /// A file the researcher provides.
    Input,
    /// A file a stage produces.
    Artifact,
}

/// One stage as the run knows it (copied from the definition when the run started, so the
/// record alone explains the run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StageSpec {
    /// The stage id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Whether the researcher accepts it (else an eligible evaluation advances the run).
    pub researcher_gate: bool,
    /// Its work limits (absent in runs recorded before budgets were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::catalog::Budget>,
}

/// What the agent reports when it ends a stage's turn: the `outcome` argument of `finish` in
/// workflow conversations. The gateway validates it; the checks, not this report, judge the
/// files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StageOutcome {
    /// `completed` when the stage's files are written, `blocked` when they could not be.
    pub status: OutcomeStatus,
    /// The project-relative paths of the files this turn wrote (each one the stage produces).
    pub artifacts: Vec<String>,
    /// What the researcher should know (assumptions, doubts, what blocked the work).
    #[serde(default)]
    pub notes: String,
}

/// The agent's claim about its stage turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    /// The stage's files are written.
    Completed,
    /// The work could not be done.
    Blocked,
}

impl OutcomeStatus {
    /// The claim in words.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeStatus::Completed => "completed",
            OutcomeStatus::Blocked => "blocked",
        }
    }
}

/// The latest agent turn of a stage: when it began and what it reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StageTurn {
    /// The stage.
    pub stage: String,
    /// When it was dispatched.
    pub started_at: crate::Timestamp,
    /// The stage's seconds before this turn (earlier turns of the same stage).
    #[serde(default)]
    pub base_seconds: u64,
    /// Whether the turn is still on (running, or waiting for a decision).
    pub open: bool,
    /// Whether a limit of the stage's budget was used up during it (the agent was paused).
    #[serde(default)]
    pub exhausted: bool,
    /// The validated outcome of `finish`, once the turn reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<StageOutcome>,
    /// Why the turn has no valid outcome (malformed, or the turn ended without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What a stage has used of its budget. A figure the provider did not report is `None`
/// (unknown), never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetUse {
    /// Model calls made.
    pub model_calls: u64,
    /// Prompt and completion tokens, while every call reported them.
    pub tokens: Option<u64>,
    /// Tool actions proposed (not counting `think` and `finish`).
    pub actions: u64,
    /// Seconds of turns, waiting for review included.
    pub seconds: u64,
}

impl Default for BudgetUse {
    fn default() -> Self {
        BudgetUse {
            model_calls: 0,
            tokens: Some(0),
            actions: 0,
            seconds: 0,
        }
    }
}

/// One limit of a stage's budget, worded once for every interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetLine {
    /// What is limited (`model calls`, `tokens`, `actions`, `seconds`).
    pub label: String,
    /// How much is used (`None` when the provider did not report it).
    pub used: Option<u64>,
    /// The limit.
    pub limit: u64,
    /// `3 of 20`, or `unknown of 200000`.
    pub text: String,
    /// Used up: no further model continuation in this stage.
    pub exhausted: bool,
    /// Beyond the limit: the stage cannot be accepted.
    pub overrun: bool,
}

/// One file a check read, by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InspectedFile {
    /// Project-relative path.
    pub path: String,
    /// SHA-256 of the bytes read, or absent when the file was missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// A check's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Every rule held.
    Passed,
    /// A rule was broken; the reasons say which.
    Failed,
    /// The check could not decide (a limit, a missing file, an unsupported case).
    Unverified,
}

impl CheckStatus {
    /// The answer as the record spells it: `passed`, `failed` or `unverified`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "failed",
            CheckStatus::Unverified => "unverified",
        }
    }
}

impl std::fmt::Display for CheckStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How serious a finding is; set by the check that observed it, never by the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The stage's files are wrong in a way a check observed.
    Defect,
}

/// One check's result, as evaluated by the gateway (never reported by the model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckView {
    /// The check id.
    pub check: String,
    /// The registered version of the check that gave this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The check's answer.
    pub status: CheckStatus,
    /// Why it failed or could not decide.
    pub reasons: Vec<String>,
    /// The files it read, by digest.
    pub inspected: Vec<InspectedFile>,
    /// Each figure the checked report states, with the value recomputed for it (report claims
    /// only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimView>,
}

/// One figure a report states, bound to the quantity its claim names, with what the check
/// recomputed: the one field every interface shows for a report's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClaimView {
    /// The report line it stands on (from 1).
    pub line: u64,
    /// The figure as the report writes it.
    pub written: String,
    /// What the claim says it is, in words (`held-out R²`, `sleep_hours standard error`).
    pub quantity: String,
    /// The value recomputed from the bound files (absent when Heartwood cannot compute it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recomputed: Option<String>,
    /// Whether the figure is the recomputed one to the digits written.
    pub status: CheckStatus,
    /// Why not, when it is not `passed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// The one line every interface prints for it (`line 5: 0.1320 is value estimate,
    /// recomputed 0.131969: passed`).
    pub text: String,
}

/// A stage's evaluation: its independent checks on the exact bytes now in the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AssessmentView {
    /// The stage evaluated.
    pub stage: String,
    /// SHA-256 over the definition, stage, statuses and every digest read: what an acceptance
    /// binds to.
    pub fingerprint: String,
    /// Whether the evidence is complete, passing and current.
    pub eligible: bool,
    /// Why not.
    pub problems: Vec<String>,
    /// Each check's result.
    pub checks: Vec<CheckView>,
}

/// Where a stage stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// Not reached yet, or reached and not run.
    Pending,
    /// Its agent turn is running.
    Running,
    /// Its turn ended; its checks have not passed yet.
    AwaitingEvaluation,
    /// Its checks passed; the researcher decides.
    AwaitingResearcher,
    /// Accepted (by the researcher, or by eligible checks where no acceptance is asked).
    Accepted,
}

impl StageStatus {
    /// The status in words, as interfaces show it.
    pub fn as_str(self) -> &'static str {
        match self {
            StageStatus::Pending => "pending",
            StageStatus::Running => "running",
            StageStatus::AwaitingEvaluation => "awaiting evaluation",
            StageStatus::AwaitingResearcher => "awaiting researcher",
            StageStatus::Accepted => "accepted",
        }
    }
}

/// One stage in the projection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StageView {
    /// The stage as the run knows it.
    #[serde(flatten)]
    pub spec: StageSpec,
    /// Where it stands.
    pub status: StageStatus,
    /// What its turns have used.
    #[serde(default)]
    pub used: BudgetUse,
    /// Its budget, limit by limit (empty when it has none). Named `budget_lines` on the wire:
    /// the flattened spec has a `budget` (the limits) of its own, and one object with two
    /// `budget` keys reads back as neither.
    #[serde(default, rename = "budget_lines")]
    pub budget: Vec<BudgetLine>,
    /// Once accepted, the files its accepted assessment read, by digest: checked again before
    /// any later stage runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_evidence: Vec<InspectedFile>,
}

impl StageView {
    /// The first used-up limit, in words (`actions 30 of 30`).
    pub fn exhausted(&self) -> Option<String> {
        self.budget
            .iter()
            .find(|l| l.exhausted)
            .map(|l| format!("{} {}", l.label, l.text))
    }

    /// Every limit exceeded, in words.
    pub fn overruns(&self) -> Vec<String> {
        self.budget
            .iter()
            .filter(|l| l.overrun)
            .map(|l| format!("{} {}", l.label, l.text))
            .collect()
    }
}

/// Something the researcher can do to the run now, with the exact revision (and fingerprint,
/// for an acceptance) to submit unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowControl {
    /// The command.
    pub command: CommandName,
    /// A label for people.
    pub label: String,
    /// The run revision the command must name.
    pub revision: u64,
    /// For an acceptance, the assessment fingerprint it binds to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The same, as a shell command (`heartwood workflow …`), for interfaces that print it.
    #[serde(default)]
    pub shell: String,
    /// The exact command to submit for it, unchanged (the gateway checks it again).
    pub submit: crate::CommandKind,
}

/// The workflow run in a session's projection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowView {
    /// The run's id.
    pub run_id: String,
    /// The definition's id and version.
    pub definition: String,
    /// The definition's version.
    pub version: String,
    /// The definition's title.
    pub title: String,
    /// Where the definition came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::catalog::DefinitionSource>,
    /// SHA-256 of the definition's bytes the run is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_sha256: Option<String>,
    /// The researcher's question.
    pub question: String,
    /// Grows with every transition; a command names the revision it saw.
    pub revision: u64,
    /// Every location the run binds.
    pub bindings: Vec<WorkflowBinding>,
    /// The stages, in order.
    pub stages: Vec<StageView>,
    /// The stage the run is at (`None` once every stage is accepted, or cancelled).
    pub current: Option<String>,
    /// The latest evaluation of the current stage.
    pub assessment: Option<AssessmentView>,
    /// The current stage's latest agent turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<StageTurn>,
    /// What the whole run has used.
    #[serde(default)]
    pub used: BudgetUse,
    /// The latest reviewed rerun of a reproduction stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduction: Option<ReproductionView>,
    /// The reviews of the run's stages, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviews: Vec<ReviewView>,
    /// How the latest review batch runs: sequential or parallel, why, each reviewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_execution: Option<crate::review_execution::ReviewExecution>,
    /// Whether the run was cancelled.
    pub cancelled: bool,
    /// What can be done now (empty while work is active or a set waits).
    pub controls: Vec<WorkflowControl>,
}

impl WorkflowView {
    /// The control for `command` now, if it is offered.
    pub fn control(&self, command: CommandName) -> Option<&WorkflowControl> {
        self.controls.iter().find(|c| c.command == command)
    }

    /// The stage the run is at.
    pub fn current_stage(&self) -> Option<&StageView> {
        let id = self.current.as_deref()?;
        self.stages.iter().find(|s| s.spec.id == id)
    }
}

/// The picture of a fitted model, drawn by the gateway from the bytes its checks read:
/// training and held-out points, the reported line, the held-out predictions and the
/// training-mean comparator, and the leave-one-group-out slopes beside the full-data slope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelFigure {
    /// The stage whose assessment it illustrates.
    pub stage: String,
    /// The predictor (x axis).
    pub predictor: String,
    /// The outcome (y axis).
    pub outcome: String,
    /// Training rows, `[x, y]`.
    pub train: Vec<[f64; 2]>,
    /// Held-out rows, `[x, y]`.
    pub held_out: Vec<[f64; 2]>,
    /// The reported held-out predictions, `[x, predicted]`.
    pub predictions: Vec<[f64; 2]>,
    /// The reported line across the data's x range, `[[x0, y0], [x1, y1]]`.
    pub line: [[f64; 2]; 2],
    /// The x axis's range (every point, with a margin).
    pub x_range: [f64; 2],
    /// The y axis's range (every point, the line and the comparator, with a margin).
    pub y_range: [f64; 2],
    /// The training mean of the outcome (the comparator's prediction for every row).
    pub training_mean: f64,
    /// The reported slope on all training rows.
    pub slope: f64,
    /// The slope without each group.
    pub group_slopes: Vec<GroupSlopeView>,
    /// The files it was drawn from, by digest (the assessment's own).
    pub inspected: Vec<InspectedFile>,
    /// The model's figures as the check recomputed them from those files (slope, held-out
    /// errors, rows), labelled and formatted once here so every interface writes them the same
    /// beside the picture, in text a reader can enlarge.
    #[serde(default)]
    pub values: Vec<FigureValue>,
    /// The same figure as SVG, for pages and notebooks.
    pub svg: String,
}

/// One recomputed figure shown beside a picture: what it is and its value, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FigureValue {
    /// What it is (`held-out RMSE`).
    pub label: String,
    /// Its value, as written (`1.234`).
    pub value: String,
}

/// One leave-one-group-out slope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupSlopeView {
    /// The group left out.
    pub group: String,
    /// The slope without it.
    pub slope: f64,
}

/// A reproduction's preparation, recorded as the researcher allowed a lone terminal action in
/// a reproduction stage: the run's inputs and accepted results were as relied on, and the
/// destination did not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReproductionPrepared {
    /// The run.
    pub run_id: String,
    /// The stage.
    pub stage: String,
    /// The action allowed alone: the rerun.
    pub action_id: u64,
    /// The file the rerun must write (absent when allowed).
    pub destination: String,
    /// The inputs and accepted results the rerun must leave as they are, by digest.
    pub protected: Vec<InspectedFile>,
}

/// The rerun's observation: it ran, and what the destination and the protected files held
/// when its observation arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReproductionCompleted {
    /// The run.
    pub run_id: String,
    /// The stage.
    pub stage: String,
    /// The rerun's action.
    pub action_id: u64,
    /// Its exit code, as observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The destination then (no digest when it was not written).
    pub output: InspectedFile,
    /// The protected files then.
    pub protected: Vec<InspectedFile>,
}

/// A reproduction stage's rerun, as the projection carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReproductionView {
    /// Its preparation.
    pub prepared: ReproductionPrepared,
    /// Its completion, once observed live (never made up after a restart or in replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<ReproductionCompleted>,
}

/// A review specialist's structured result (the `result` of its `finish` in workflow
/// conversations): advisory candidates only. Who reviewed, which review and on what evidence
/// are attached by the gateway, never chosen by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewProposals {
    /// The candidate defects (none when the reviewer saw none).
    pub proposals: Vec<ReviewProposal>,
}

/// One candidate defect, as the reviewer claims it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewProposal {
    /// The kind of defect claimed (only the first four can be verified).
    pub condition: ReviewCondition,
    /// The project-relative file it concerns.
    pub path: String,
    /// The claim, in the reviewer's words.
    pub claim: String,
}

/// The kinds of defect a review may claim; the gateway can observe the first four.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewCondition {
    /// The analysis plan does not fit the supported predictor, outcome, grouping or split.
    PlanIncompatible,
    /// The Python source is empty or does not parse.
    PythonInvalid,
    /// The reported model results disagree with an independent recomputation.
    ResultsInconsistent,
    /// A reproduced artifact's bytes differ from the original's.
    ArtifactMismatch,
    /// Anything else (never verified).
    Other,
}

/// A file a review captured before dispatch: its bytes by digest and count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CapturedFile {
    /// Project-relative path.
    pub path: String,
    /// SHA-256 of its bytes.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// A review began: the stage's declared files captured before the reviewer was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewStarted {
    /// The run.
    pub run_id: String,
    /// The review's identity (the command that asked for it).
    pub review_id: String,
    /// The stage reviewed.
    pub stage: String,
    /// The files captured.
    pub evidence: Vec<CapturedFile>,
}

/// What the gateway concluded about one proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The gateway's own check observed the defect: it is a finding.
    Verified,
    /// The check ran on the captured bytes and did not observe the defect.
    NotObserved,
    /// The condition cannot be checked, or the evidence is not what was captured.
    Unverified,
}

/// One proposal as assessed: the reviewer's claim (from its task) and the gateway's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AssessedProposal {
    /// The parent's `task` action whose answer held it (the reviewer).
    pub task_action: u64,
    /// The claim, as the reviewer made it.
    pub proposal: ReviewProposal,
    /// What the gateway's check concluded.
    pub verdict: Verdict,
    /// Why (the check's reasons, or what kept it from checking).
    pub reasons: Vec<String>,
}

/// A defect the gateway observed itself: one per condition and file, keeping every
/// reviewer's claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The condition observed.
    pub condition: ReviewCondition,
    /// The file.
    pub path: String,
    /// The check that observed it.
    pub check: String,
    /// Severity, from the check (never from the model).
    pub severity: Severity,
    /// What the check observed.
    pub observed: Vec<String>,
    /// Each reviewer's claim that led to it: (task action, claim).
    pub claims: Vec<(u64, String)>,
}

/// A review's assessment, made by the gateway once the review settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewAssessed {
    /// The run.
    pub run_id: String,
    /// The review.
    pub review_id: String,
    /// Every proposal associated with it, assessed.
    pub proposals: Vec<AssessedProposal>,
    /// The verified defects.
    pub findings: Vec<Finding>,
    /// SHA-256 of the review record (evidence, proposals, verdicts, findings).
    pub record_sha256: String,
}

/// A review as the projection carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewView {
    /// Its start: identity, stage and captured evidence.
    pub started: ReviewStarted,
    /// The event that started it (tasks proposed after it belong to it).
    pub started_seq: u64,
    /// Its assessment, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assessed: Option<ReviewAssessed>,
    /// What every interface says of it, made once by the gateway: verified findings apart
    /// from the reviewer's unverified proposals.
    #[serde(default)]
    pub said: ReviewSaid,
}

/// A review in words: the lines every interface renders, so none writes its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewSaid {
    /// One line: the stage, and how many findings and proposals (or that it is still working).
    pub headline: String,
    /// Each verified finding: the file, the check that observed it, and what it observed.
    pub findings: Vec<String>,
    /// Each proposal that is not a finding: the claim, its file, and what Heartwood's checks
    /// made of it (not observed, or unverified).
    pub proposals: Vec<String>,
}
