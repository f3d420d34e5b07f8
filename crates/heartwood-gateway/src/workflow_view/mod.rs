//! A workflow run's view in the session projection: folded from the run's events
//! ([`fold`]), with the controls and waits it offers and the commands it admits now
//! ([`controls`]). Pure, like the reducer that calls it: what acts on a run (starting it,
//! checking a stage) is [`crate::workflow_run`], above the reducer.

mod controls;
mod fold;

pub(crate) use controls::*;
pub(crate) use fold::*;

use heartwood_events::catalog::Budget;
use heartwood_events::workflow::{
    AssessedProposal, BindingRole, BudgetLine, BudgetUse, InspectedFile, OutcomeStatus,
    ReproductionView, ReviewAssessed, ReviewSaid, ReviewView, StageOutcome, StageStatus, StageTurn,
    StageView, Verdict, WorkflowControl, WorkflowView,
};
use heartwood_events::{
    ActionState, CommandKind, CommandName, Event, Lifecycle, NextStep, RecordedEvent,
    SessionProjection, WaitKind, WaitsFor,
};
