//! The project's files from a notebook, read-only and confined, through the gateway's
//! workspace service: what changed, and the diff of one file.

use heartwood_gateway::ProjectContext;
use heartwood_gateway::workspace::{ChangeLimits, DiffLimits, WorkspaceService};
use pyo3::prelude::*;

use crate::{convert, failed};

/// The project's files, read-only.
#[pyclass(module = "heartwood", frozen)]
pub struct Workspace {
    project: ProjectContext,
    /// Without Git, changes are the file edits of this session (else the latest session's).
    session: Option<String>,
}

impl Workspace {
    pub(crate) fn new(project: ProjectContext, session: Option<String>) -> Self {
        Workspace { project, session }
    }
}

#[pymethods]
impl Workspace {
    /// The changed paths: against Git's `HEAD`, or, outside Git, the files the session edited
    /// (a dict that shows as a table in a notebook).
    fn changes(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let (project, session) = (self.project.clone(), self.session.clone());
        let report = py
            .detach(move || {
                WorkspaceService::open(&project)?
                    .changes(session.as_deref(), ChangeLimits::default())
            })
            .map_err(failed)?;
        crate::rich::shown(py, &report, crate::rich::changes(&report))
    }

    /// The unified diff of one file against `HEAD`.
    fn diff(&self, py: Python<'_>, path: &str) -> PyResult<Py<PyAny>> {
        let (project, path) = (self.project.clone(), path.to_owned());
        let diff = py
            .detach(move || WorkspaceService::open(&project)?.diff(&path, DiffLimits::default()))
            .map_err(failed)?;
        convert::to_python(py, &diff)
    }
}
