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

mod run;

// The run's view in the projection (folded by the reducer) and the definitions it starts
// from are their own modules below the run; command and worker code names them from here.
#[cfg(test)]
pub(crate) use crate::workflow_definitions::maintained;
pub(crate) use crate::workflow_definitions::{check_and_assess, open_workspace, resolve};
pub(crate) use crate::workflow_view::*;
pub(crate) use run::*;

use heartwood_events::Event;
use heartwood_events::workflow::{
    AssessmentView, BindingRole, CheckView, InspectedFile, StageOutcome, StageSpec,
    WorkflowBinding, WorkflowView,
};

use crate::error::WorkflowUnavailable;
use crate::{GatewayError, ProjectContext};
