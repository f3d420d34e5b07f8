//! A research workflow run inside a session: its rules and its projection.
//!
//! A run starts in an unused session, binding the researcher's question and every input (by
//! content digest, through the confined workspace reader) and every artifact location; that
//! binding map is the one source of paths for stage prompts and checks. A stage is an ordinary
//! agent turn under ordinary review; it advances only on the stage's independent checks, run
//! by the gateway on the exact bytes in the project, and (where the definition asks) on the
//! researcher's acceptance, bound to the run revision and the assessment fingerprint shown.
//! Every transition is a durable event; the projection's `workflow` is derived from them here
//! and nowhere else, with the controls that make sense now.

mod catalog;
mod controls;
mod fold;
mod run;

#[cfg(test)]
pub(crate) use catalog::maintained;
pub use catalog::{
    DEPLOYMENT_DIR_VAR, shared_workflow_catalog, validate_definition, workflow_catalog,
};
pub(crate) use catalog::{check_and_assess, listed_in, open_workspace, resolve, resolve_in};
pub(crate) use controls::*;
pub(crate) use fold::*;
pub(crate) use run::*;

use heartwood_events::catalog::Budget;
use heartwood_events::workflow::{
    AssessedProposal, AssessmentView, BindingRole, BudgetLine, BudgetUse, CheckView, InspectedFile,
    OutcomeStatus, ReproductionView, ReviewAssessed, ReviewSaid, ReviewView, StageOutcome,
    StageSpec, StageStatus, StageTurn, StageView, Verdict, WorkflowBinding, WorkflowControl,
    WorkflowView,
};
use heartwood_events::{
    ActionState, CommandKind, CommandName, Event, Lifecycle, NextStep, RecordedEvent,
    SessionProjection, WaitKind, WaitsFor,
};

use crate::error::WorkflowUnavailable;
use crate::{GatewayError, ProjectContext};
