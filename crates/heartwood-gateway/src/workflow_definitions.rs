//! The workflow definitions a project sees (maintained, deployment, project), and running one
//! stage's checks on the project's files (through `heartwood-workspace`'s confined reader, not
//! the gateway's workspace service, which attributes changes to sessions and so sits above the
//! reducer). Below the workflow run and the workspace service, which both look definitions up.

use heartwood_events::catalog::{CatalogEntry, DefinitionSource};
use heartwood_workflow::Registry;
use heartwood_workflow::catalog::Unread;
use heartwood_workflow::catalog::{DefinitionFile, Listed};
use heartwood_workspace::Workspace;

use crate::GatewayError;
use crate::error::WorkflowUnavailable;

/// The deployment's folder of trusted definitions, when the operator names one.
pub const DEPLOYMENT_DIR_VAR: &str = "HEARTWOOD_WORKFLOW_DIR";

/// The definition files in the deployment folder (its direct `.json` children, in name order,
/// bounded in count and size). The folder is the operator's, outside the project: read as a
/// deployment setting, like the maintained definitions.
fn deployment_files() -> Vec<DefinitionFile> {
    let Some(dir) = std::env::var_os(DEPLOYMENT_DIR_VAR).filter(|d| !d.is_empty()) else {
        return Vec::new();
    };
    let dir = std::path::PathBuf::from(dir);
    let mut names: Vec<std::path::PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .collect(),
        Err(e) => {
            return vec![DefinitionFile {
                source: DefinitionSource::Deployment,
                location: dir.display().to_string(),
                bytes: Err(Unread::Folder(std::sync::Arc::new(e))),
            }];
        }
    };
    names.sort();
    names
        .into_iter()
        .take(heartwood_workflow::catalog::MAX_FILES)
        .map(|path| DefinitionFile {
            source: DefinitionSource::Deployment,
            location: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            bytes: read_bounded(&path),
        })
        .collect()
}

fn read_bounded(path: &std::path::Path) -> Result<Vec<u8>, Unread> {
    use std::io::Read;
    let limit = heartwood_workflow::catalog::MAX_DEFINITION_BYTES;
    let unread = |e| Unread::Io(std::sync::Arc::new(e));
    let file = std::fs::File::open(path).map_err(unread)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(unread)?;
    if bytes.len() as u64 > limit {
        return Err(Unread::TooLarge(limit));
    }
    Ok(bytes)
}

/// Every definition the project can see: maintained, then the deployment's, then the
/// project's own `workflows/` (unreviewed), each with its source and digest; availability is a
/// lookup in this build's check registry.
pub(crate) fn listed(project: &crate::ProjectContext) -> Vec<Listed> {
    listed_in(Workspace::open(project.root()).ok().as_ref())
}

/// [`listed`] over a workspace already open.
pub(crate) fn listed_in(workspace: Option<&Workspace>) -> Vec<Listed> {
    let mut files = heartwood_workflow::catalog::maintained_files();
    files.extend(deployment_files());
    if let Some(workspace) = workspace {
        files.extend(heartwood_workflow::catalog::project_files(workspace));
    }
    heartwood_workflow::catalog::list(files, &Registry::builtin())
}

/// The definition `id` as the project sees it, with its catalog entry; refused when no source
/// has it, when its file has problems, or when it names a check the registry lacks.
pub(crate) fn resolve(
    project: &crate::ProjectContext,
    id: &str,
) -> Result<(heartwood_workflow::Definition, CatalogEntry), GatewayError> {
    resolve_in(listed(project), id)
}

/// [`resolve`] among definitions already listed.
pub(crate) fn resolve_in(
    listed: Vec<Listed>,
    id: &str,
) -> Result<(heartwood_workflow::Definition, CatalogEntry), GatewayError> {
    let mut found = listed.into_iter().filter(|l| l.entry.id == id);
    let Some(first) = found.next() else {
        return Err(WorkflowUnavailable::NoDefinition { id: id.to_owned() }.into());
    };
    let Some(definition) = first.definition else {
        return Err(WorkflowUnavailable::Invalid {
            id: id.to_owned(),
            location: first.entry.location,
            problems: first.entry.problems,
        }
        .into());
    };
    if !first.entry.supported {
        return Err(WorkflowUnavailable::Unsupported {
            id: id.to_owned(),
            missing: first.entry.missing_checks,
        }
        .into());
    }
    Ok((definition, first.entry))
}

/// The definition a run is bound to: the one `id` names now, refused when its bytes differ
/// from the digest the run bound when it started.
pub(crate) fn bound(
    project: &crate::ProjectContext,
    w: &heartwood_events::workflow::WorkflowView,
) -> Result<heartwood_workflow::Definition, GatewayError> {
    let (definition, entry) = resolve(project, &w.definition)?;
    if let Some(bound) = &w.definition_sha256
        && bound != &entry.sha256
    {
        return Err(WorkflowUnavailable::DefinitionChanged {
            id: w.definition.clone(),
            location: entry.location,
            bound: bound.clone(),
            now: entry.sha256,
        }
        .into());
    }
    Ok(definition)
}

/// The maintained definition `id` (tests and callers without a project).
#[cfg(test)]
pub(crate) fn maintained(id: &str) -> Result<heartwood_workflow::Definition, GatewayError> {
    heartwood_workflow::catalog::definition(id)
        .map_err(WorkflowUnavailable::Catalog)?
        .ok_or_else(|| WorkflowUnavailable::NoDefinition { id: id.to_owned() }.into())
}

/// The workflow catalog the project sees (read-only; creates nothing).
pub fn workflow_catalog(
    project: &crate::ProjectContext,
) -> Result<Vec<CatalogEntry>, GatewayError> {
    heartwood_workflow::catalog::definitions().map_err(WorkflowUnavailable::Catalog)?;
    Ok(listed(project).into_iter().map(|l| l.entry).collect())
}

/// The definitions every project sees (maintained and the deployment's), without any
/// project's own.
pub fn shared_workflow_catalog() -> Result<Vec<CatalogEntry>, GatewayError> {
    heartwood_workflow::catalog::definitions().map_err(WorkflowUnavailable::Catalog)?;
    Ok(listed_in(None).into_iter().map(|l| l.entry).collect())
}

/// Validates one definition file's bytes against this build's registry, reporting every
/// problem at once; `Ok` carries the checks the registry lacks (empty when supported).
pub fn validate_definition(bytes: &[u8]) -> Result<(CatalogEntry, Vec<String>), Vec<String>> {
    let file = DefinitionFile {
        source: DefinitionSource::Project,
        location: String::new(),
        bytes: Ok(bytes.to_vec()),
    };
    let mut listed = heartwood_workflow::catalog::list(vec![file], &Registry::builtin());
    let item = listed.remove(0);
    if item.definition.is_none() {
        return Err(item.entry.problems);
    }
    let missing = item.entry.missing_checks.clone();
    Ok((item.entry, missing))
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
