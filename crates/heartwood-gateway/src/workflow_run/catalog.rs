//! The maintained workflow definitions, and running one stage's checks on the project's files
//! (through `heartwood-workspace`'s confined reader, not the gateway's workspace service, which
//! attributes changes to sessions and so sits above the reducer).

use heartwood_workspace::Workspace;

use crate::GatewayError;
use crate::error::WorkflowUnavailable;

/// The maintained definition `id`, or why there is none.
pub(crate) fn maintained(id: &str) -> Result<heartwood_workflow::Definition, GatewayError> {
    heartwood_workflow::catalog::definition(id)
        .map_err(WorkflowUnavailable::Catalog)?
        .ok_or_else(|| WorkflowUnavailable::NoDefinition { id: id.to_owned() }.into())
}

/// The workflow catalog (read-only; creates nothing).
pub fn workflow_catalog() -> Result<Vec<heartwood_events::catalog::CatalogEntry>, GatewayError> {
    Ok(heartwood_workflow::catalog::catalog().map_err(WorkflowUnavailable::Catalog)?)
}

/// Runs `stage`'s checks as `definition` locates its files (a run's binding map) and assesses
/// them. `judge` adds what the gateway observed itself (a reproduction's rerun) before the
/// assessment is made.
pub(crate) fn check_and_assess(
    workspace: &Workspace,
    definition: &heartwood_workflow::Definition,
    stage: &str,
    judge: impl FnOnce(&mut [heartwood_workflow::CheckResult]),
) -> Result<
    (
        Vec<heartwood_workflow::CheckResult>,
        heartwood_workflow::gate::Assessment,
    ),
    GatewayError,
> {
    let missing = || WorkflowUnavailable::no_stage(definition, stage);
    let mut results = heartwood_workflow::evaluate::check_stage(workspace, definition, stage)
        .ok_or_else(missing)?;
    judge(&mut results);
    let assessment =
        heartwood_workflow::gate::assess_against(workspace, definition, stage, &results, &results)
            .ok_or_else(missing)?;
    Ok((results, assessment))
}

/// The project's files through the confined reader, or why they cannot be read.
pub(crate) fn open_workspace(project: &crate::ProjectContext) -> Result<Workspace, GatewayError> {
    Ok(Workspace::open(project.root())?)
}
