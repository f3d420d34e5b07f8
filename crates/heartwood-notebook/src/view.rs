//! What a notebook holds of a session's state: the projection as a typed object, and the set
//! waiting for a decision with its review. Both are snapshots taken when they were asked for.

use heartwood_events::Snapshot;
use pyo3::prelude::*;

use crate::{convert, html};

/// A session's projection: where it stands, as the gateway says (`to_dict()` for all of it).
#[pyclass(module = "heartwood", frozen)]
pub struct Projection {
    data: Py<PyAny>,
    snapshot: Snapshot,
}

impl Projection {
    pub(crate) fn of(py: Python<'_>, snapshot: &Snapshot) -> PyResult<Projection> {
        Ok(Projection {
            data: convert::to_python(py, &snapshot.projection)?,
            snapshot: snapshot.clone(),
        })
    }

    fn field(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        Ok(self.data.bind(py).get_item(name)?.unbind())
    }
}

#[pymethods]
impl Projection {
    /// The session id.
    #[getter]
    fn session(&self) -> String {
        self.snapshot.projection.session.to_string()
    }

    /// Where the agent stands: idle, running, waiting_for_decision, paused, finished, failed,
    /// stuck.
    #[getter]
    fn lifecycle(&self) -> &'static str {
        self.snapshot.projection.lifecycle.as_str()
    }

    /// One line every interface shows.
    #[getter]
    fn status_line(&self) -> String {
        self.snapshot.projection.status_line.clone()
    }

    /// What the session waits for from you (`kind`: decision, workflow_acceptance,
    /// workflow_evaluation, workflow_correction, workflow_next_stage; `text`; `steps`, each with
    /// its `label`, `command` and `shell`), or None while work is active or nothing waits: a
    /// settled agent whose workflow run waits is not finished.
    #[getter]
    fn waits_for(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // Left out of the dict when nothing waits.
        match &self.snapshot.projection.waits_for {
            Some(w) => convert::to_python(py, w),
            None => Ok(py.None()),
        }
    }

    /// The first task's first line.
    #[getter]
    fn title(&self) -> Option<String> {
        self.snapshot.projection.title.clone()
    }

    /// Whether the run has stopped (finished, failed, paused, or waiting for a decision).
    #[getter]
    fn settled(&self) -> bool {
        self.snapshot.is_settled()
    }

    /// The messages, in order: `speaker`, `role`, `text`.
    #[getter]
    fn conversation(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.field(py, "conversation")
    }

    /// Every action at its latest version.
    #[getter]
    fn actions(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.field(py, "actions")
    }

    /// The set waiting for a decision, if one does.
    #[getter]
    fn pending(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.field(py, "pending")
    }

    /// The agent's task plan.
    #[getter]
    fn task_plan(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.field(py, "task_plan")
    }

    /// Model usage, in total and by purpose.
    #[getter]
    fn usage(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.field(py, "usage")
    }

    /// What to do next, as the gateway suggests it.
    #[getter]
    fn suggestions(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.field(py, "suggestions")
    }

    /// The whole projection as plain dicts and lists.
    fn to_dict(&self, py: Python<'_>) -> Py<PyAny> {
        self.data.clone_ref(py)
    }

    fn _repr_html_(&self, py: Python<'_>) -> String {
        let who = crate::rich::who(py, &self.snapshot.projection.session);
        html::session(&self.snapshot, &who)
    }

    fn __repr__(&self) -> String {
        format!(
            "<heartwood projection {}: {}>",
            self.snapshot.projection.session, self.snapshot.projection.status_line
        )
    }
}

/// The set waiting for a decision, with its review.
#[pyclass(module = "heartwood", frozen)]
pub struct Pending {
    snapshot: Snapshot,
}

impl Pending {
    pub(crate) fn of(snapshot: &Snapshot) -> Option<Pending> {
        snapshot.projection.pending.as_ref()?;
        Some(Pending {
            snapshot: snapshot.clone(),
        })
    }

    fn set(&self) -> &heartwood_events::ActionSet {
        self.snapshot
            .projection
            .pending
            .as_ref()
            .expect("a Pending holds a pending set")
    }
}

#[pymethods]
impl Pending {
    /// The set's id.
    #[getter]
    fn set_id(&self) -> String {
        self.set().set_id.to_string()
    }

    /// The set's revision.
    #[getter]
    fn revision(&self) -> u64 {
        self.set().revision
    }

    /// Every action: its id, tool, headline, risk and preview (a command, a diff, a new file).
    #[getter]
    fn members(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.snapshot.review {
            Some(review) => convert::to_python(py, &review.members),
            None => convert::to_python(py, &self.set().members),
        }
    }

    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        convert::to_python(
            py,
            &serde_json::json!({ "set": self.set(), "review": self.snapshot.review }),
        )
    }

    fn __len__(&self) -> usize {
        self.set().members.len()
    }

    fn _repr_html_(&self, py: Python<'_>) -> String {
        let who = crate::rich::who(py, &self.snapshot.projection.session);
        html::pending(&self.snapshot, &who)
    }

    fn __repr__(&self) -> String {
        let set = self.set();
        format!(
            "<heartwood set {} (revision {}, {} actions)>",
            set.set_id,
            set.revision,
            set.members.len()
        )
    }
}
