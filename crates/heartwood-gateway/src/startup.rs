//! The startup plan every interface shows: heartwood-project's planner, told what this
//! project's sessions are (an interrupted append to recover, decisions waiting, runs that
//! stopped), which only the gateway reads.

pub use heartwood_project::startup::{
    PendingDecision, Phase, RouteSummary, SessionsSeen, StartupPlan, Unreachable, WorkflowWait,
    probe,
};

use crate::{GatewayError, ProjectContext, SessionAdmin};

/// Plans startup for `project`: which phase it is in and what the researcher should do next.
/// Read-only; reads every session's metadata and connects once to the model service, so call
/// it off async tasks.
///
/// ```
/// use heartwood_gateway::startup::{Phase, plan};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let folder = tempfile::tempdir()?;
/// let project = heartwood_gateway::ProjectContext::at(folder.path())?;
/// let plan = plan(&project)?;
/// assert_eq!(plan.phase, Phase::ModelRequired);
/// assert_eq!(plan.sessions, 0);
/// # Ok(())
/// # }
/// ```
pub fn plan(project: &ProjectContext) -> Result<StartupPlan, GatewayError> {
    plan_over(project, &SessionAdmin::new(project))
}

/// [`plan`] with the sessions `admin` reads (a gateway's store: see
/// [`crate::SessionGateway::startup_plan`]).
pub(crate) fn plan_over(
    project: &ProjectContext,
    admin: &SessionAdmin,
) -> Result<StartupPlan, GatewayError> {
    let listing = admin.listing(None)?;
    let mut seen = SessionsSeen {
        count: listing.len(),
        interrupted: listing.iter().find(|s| s.interrupted).map(|s| s.id.clone()),
        ..SessionsSeen::default()
    };
    for session in listing {
        if session.stopped {
            seen.stopped_sessions.push(PendingDecision {
                session: session.id.clone(),
                title: session.title.clone(),
                answer: session.status.clone(),
            });
        }
        if let Some(waits_for) = session
            .waits_for
            .clone()
            .filter(|w| w.kind != heartwood_events::WaitKind::Decision)
        {
            seen.workflow_waits.push(WorkflowWait {
                session: session.id.clone(),
                title: session.title.clone(),
                waits_for,
            });
        }
        if let Some(set) = session.pending {
            seen.pending_decisions.push(PendingDecision {
                answer: format!(
                    "heartwood decide {} --set {} --revision {} allow|reject",
                    session.id, set.set_id, set.revision
                ),
                session: session.id,
                title: session.title,
            });
        }
    }
    let mut plan = heartwood_project::startup::plan(project, seen);
    plan.parallel_review = crate::parallel_review::evidence::standing(project);
    Ok(plan)
}
