//! The notebook module (`heartwood._native`, wrapped by the `heartwood` Python package): a
//! client of the session gateway alone, like the terminal and the browser. It reads the startup
//! plan, submits typed commands and renders the one projection; it keeps no reducer and no
//! rules of its own (labels, summaries and "is it settled" come from the projection).
//!
//! Everything that waits (a run settling, a journal append) happens with the GIL released; a
//! wait looks for a pending Ctrl-C (a kernel interrupt) every 100 ms, pauses the run as `exec`
//! does, and raises `KeyboardInterrupt`. The module's Tokio runtime is started once, for what
//! the gateway does asynchronously (letting idle sessions go, closing).

mod convert;
mod html;
mod rich;
mod session;
mod stats;
mod view;
mod workspace;

use std::sync::{Arc, OnceLock, Weak};

use heartwood_gateway::skills::SkillsService;
use heartwood_gateway::{ProjectContext, SessionGateway};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pub use session::Session;
pub use workspace::Workspace;

create_exception!(
    heartwood,
    HeartwoodError,
    PyException,
    "Something Heartwood refused or could not do; the message says what to do next."
);

/// The exception a refusal raises: the class `heartwood._refusals` keeps for its kind (a
/// subclass of `heartwood.Refused`), with the gateway's sentence and the refusal's fields.
pub(crate) fn refused(py: Python<'_>, refusal: &heartwood_events::Refusal) -> PyErr {
    let raised = (|| -> PyResult<PyErr> {
        let fields = convert::to_python(py, refusal)?;
        let exception = py
            .import("heartwood._refusals")?
            .getattr("refused")?
            .call1((refusal.kind(), refusal.to_string(), fields))?;
        Ok(PyErr::from_value(exception))
    })();
    raised.unwrap_or_else(|e| e)
}

/// The module's runtime, started on first use and kept for the life of the interpreter.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::io::Result<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("heartwood-notebook")
                .enable_all()
                .build()
        })
        .as_ref()
        .map_err(|e| HeartwoodError::new_err(format!("cannot start Heartwood's runtime: {e}")))
}

/// The notebook's current session: the one the researcher last made or opened (in Python or
/// by a magic), which `%%heartwood` and `%heartwood` act on. One per interpreter.
static CURRENT: std::sync::Mutex<Option<Py<Session>>> = std::sync::Mutex::new(None);

/// Makes `session` the current one; returns the Python object (the one the caller gets).
fn make_current(py: Python<'_>, session: Session) -> PyResult<Py<Session>> {
    let session = Py::new(py, session)?;
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some(session.clone_ref(py));
    Ok(session)
}

/// The current session's id, if there is one.
pub(crate) fn current_id() -> Option<heartwood_events::SessionId> {
    CURRENT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|s| s.get().id.clone())
}

/// The notebook's current session: the one last made or opened (`hw.session()`,
/// `hw.start_workflow()`, `%%heartwood`, `%heartwood use`); `None` before any.
#[pyfunction]
fn current(py: Python<'_>) -> Option<Py<Session>> {
    CURRENT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|s| s.clone_ref(py))
}

/// A gateway failure as a Python exception with the gateway's message.
pub(crate) fn failed(e: impl std::fmt::Display) -> PyErr {
    HeartwoodError::new_err(e.to_string())
}

/// Heartwood in one project folder: its startup plan, its sessions, its files.
#[pyclass(module = "heartwood", frozen)]
pub struct Heartwood {
    gateway: Arc<SessionGateway>,
    project: ProjectContext,
}

#[pymethods]
impl Heartwood {
    /// Opens the project in `path`, or, by default, the kernel's current directory (the
    /// nearest folder upwards that holds `.heartwood/`, as everywhere else).
    #[new]
    #[pyo3(signature = (path=None))]
    fn new(path: Option<std::path::PathBuf>) -> PyResult<Self> {
        let project = match path {
            Some(path) => ProjectContext::at(&path),
            None => ProjectContext::current(),
        }
        .map_err(failed)?;
        let gateway = Arc::new(SessionGateway::new(project.clone()));
        release_idle_sessions(Arc::downgrade(&gateway))?;
        Ok(Heartwood { gateway, project })
    }

    /// The project folder.
    #[getter]
    fn root(&self) -> String {
        self.project.root().to_string()
    }

    /// Where the project stands and what to do next (the startup plan), as a dict.
    fn status(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let project = self.project.clone();
        let plan = py
            .detach(move || heartwood_gateway::startup::plan(&project))
            .map_err(failed)?;
        convert::to_python(py, &plan)
    }

    /// The startup plan as HTML (what the notebook shows for `hw`).
    fn _repr_html_(&self, py: Python<'_>) -> PyResult<String> {
        let project = self.project.clone();
        let plan = py
            .detach(move || heartwood_gateway::startup::plan(&project))
            .map_err(failed)?;
        Ok(html::plan(&plan))
    }

    /// The project's sessions, most recently active first: id, title, state, pending set.
    #[pyo3(signature = (limit=50))]
    fn sessions(&self, py: Python<'_>, limit: usize) -> PyResult<Py<PyAny>> {
        let gateway = Arc::clone(&self.gateway);
        let rows = py.detach(move || gateway.rows(limit)).map_err(failed)?;
        convert::to_python(py, &rows)
    }

    /// A session: a new one (`id=None`), or an existing one by id, unique prefix, or `"last"`.
    /// It becomes the notebook's current session (the one the magics act on).
    #[pyo3(signature = (id=None))]
    fn session(&self, py: Python<'_>, id: Option<&str>) -> PyResult<Py<Session>> {
        let id = match id {
            None => SessionGateway::new_session_id(),
            Some(text) => {
                let project = self.project.clone();
                let text = text.to_owned();
                py.detach(move || heartwood_gateway::SessionAdmin::new(&project).resolve(&text))
                    .map_err(failed)?
            }
        };
        make_current(
            py,
            Session::new(Arc::clone(&self.gateway), self.project.clone(), id),
        )
    }

    /// Starts a research workflow run (`definition`, see the catalog) in a new session, with
    /// the researcher's `question`; `inputs` maps input ids to paths other than the
    /// definition's. Returns the session, which becomes the notebook's current one.
    #[pyo3(signature = (definition, question, inputs=None))]
    fn start_workflow(
        &self,
        py: Python<'_>,
        definition: &str,
        question: &str,
        inputs: Option<std::collections::BTreeMap<String, String>>,
    ) -> PyResult<Py<Session>> {
        let id = SessionGateway::new_session_id();
        let command = heartwood_events::Command::new(
            SessionGateway::new_command_id(),
            id.clone(),
            heartwood_events::CommandKind::WorkflowStart {
                definition: definition.to_owned(),
                question: question.to_owned(),
                inputs: inputs.unwrap_or_default(),
            },
        );
        let gateway = Arc::clone(&self.gateway);
        let receipt = py
            .detach(move || gateway.submit_blocking(command))
            .map_err(failed)?;
        if let heartwood_events::Outcome::Refused(refusal) = &receipt.outcome {
            return Err(refused(py, refusal));
        }
        make_current(
            py,
            Session::new(Arc::clone(&self.gateway), self.project.clone(), id),
        )
    }

    /// The workflow catalog: every definition this build maintains, with its inputs, stages and
    /// what each writes (the catalog `heartwood workflow catalog` and the other interfaces
    /// show). Start one with `start_workflow(id, question)`.
    fn workflows(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let project = self.project.clone();
        let catalog = py
            .detach(move || heartwood_gateway::workflow_catalog(&project))
            .map_err(failed)?;
        rich::shown(py, &catalog, rich::catalog(&catalog))
    }

    /// The project's Agent Skills: every skill the sources offer, with its source, status and
    /// tree digest, and every source (the catalog the other interfaces show).
    fn skills(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let skills = SkillsService::open(&self.project);
        let catalog = py.detach(move || skills.catalog()).map_err(failed)?;
        convert::to_python(py, &catalog)
    }

    /// The project's local models as every interface shows them: ``models`` (each with its
    /// ``label`` and ``validation``), ``runtime`` and recent ``transfers`` (each with its
    /// ``label``, ``fraction`` and ``running``), from every process.
    fn models(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let desk = heartwood_gateway::models::ModelDesk::new(&self.project);
        let view = py.detach(move || desk.view()).map_err(failed)?;
        convert::to_python(py, &view)
    }

    /// The deployment's trusted model catalog: ``entries`` (each with ``id``, ``label``,
    /// ``license``, ``does_not_fit`` and ``stored``), its ``source``, and a ``note`` saying what
    /// to do when there is none.
    fn model_catalog(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let project = self.project.clone();
        let view = py
            .detach(move || heartwood_gateway::model_catalog::catalog(&project))
            .map_err(failed)?;
        convert::to_python(py, &view)
    }

    /// Downloads trusted catalog entry ``id``, or, with ``revision``, the hub repository ``id``
    /// (``owner/name``) at that revision (optionally only ``files``, stored as ``name``).
    /// Without ``accept_license`` it returns the review (the exact manifest and its
    /// ``manifest_sha256``) and writes nothing; with that SHA-256 the gateway downloads it, its
    /// progress shown as it moves, and it returns the model's listing. A kernel interrupt
    /// cancels the download (so does ``cancel_transfer`` from any interface): nothing is
    /// published.
    #[pyo3(signature = (id, accept_license=None, revision=None, files=None, name=None, context=None))]
    #[allow(clippy::too_many_arguments)]
    fn download_model(
        &self,
        py: Python<'_>,
        id: String,
        accept_license: Option<String>,
        revision: Option<String>,
        files: Option<Vec<String>>,
        name: Option<String>,
        context: Option<u32>,
    ) -> PyResult<Py<PyAny>> {
        use heartwood_gateway::model_catalog::DownloadSource;
        let project = self.project.clone();
        let source = match revision {
            None => DownloadSource::Catalog { catalog: id },
            Some(revision) => DownloadSource::Repository {
                repository: id,
                revision,
                files: files.unwrap_or_default(),
                name,
                context_length: context,
            },
        };
        let Some(sha) = accept_license else {
            let desk = heartwood_gateway::models::ModelDesk::new(&project);
            let review = py.detach(move || source.review(&desk)).map_err(failed)?;
            return convert::to_python(py, &review);
        };
        let started = py
            .detach(|| heartwood_gateway::model_catalog::start_download_of(&project, &source, &sha))
            .map_err(failed)?;
        let show = py.import("heartwood")?.getattr("_show_transfer")?;
        let last = loop {
            let line = started.progress();
            show.call1((convert::to_python(py, &line)?,))?;
            if !line.running {
                break line;
            }
            py.detach(|| std::thread::sleep(std::time::Duration::from_millis(250)));
            if let Err(interrupted) = py.check_signals() {
                started.cancel();
                return Err(interrupted);
            }
        };
        match last.view.state {
            heartwood_gateway::models::TransferState::Done(_) => {
                let desk = heartwood_gateway::models::ModelDesk::new(&project);
                let name = started.name.clone();
                let listing = py
                    .detach(move || desk.list())
                    .map_err(failed)?
                    .into_iter()
                    .find(|m| m.name == name)
                    .ok_or_else(|| {
                        failed(format!("{} was downloaded but is not listed", started.name))
                    })?;
                convert::to_python(py, &listing)
            }
            _ => Err(failed(last.label)),
        }
    }

    /// Cancels the project's running transfer ``handle`` (each of ``models()["transfers"]``
    /// carries its ``handle``), whichever interface or process runs it: nothing is published.
    fn cancel_transfer(&self, py: Python<'_>, handle: String) -> PyResult<()> {
        let desk = heartwood_gateway::models::ModelDesk::new(&self.project);
        py.detach(move || desk.cancel_transfer(&handle))
            .map_err(failed)
    }

    /// Imports local model files (one a ``.gguf``). Without ``accept_license`` it returns the
    /// review (the exact manifest and its ``manifest_sha256``) and writes nothing; with that
    /// SHA-256 it imports them and returns the model's listing.
    #[pyo3(signature = (paths, license, accept_license=None, name=None, context=None, chat_format=None))]
    #[allow(clippy::too_many_arguments)]
    fn import_model(
        &self,
        py: Python<'_>,
        paths: Vec<std::path::PathBuf>,
        license: String,
        accept_license: Option<String>,
        name: Option<String>,
        context: Option<u32>,
        chat_format: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let desk = heartwood_gateway::models::ModelDesk::new(&self.project);
        let options = heartwood_gateway::models::FileImport {
            name,
            license,
            context_length: context,
            chat_format,
        };
        match accept_license {
            None => {
                let review = py
                    .detach(move || desk.review_files(&paths, &options))
                    .map_err(failed)?;
                convert::to_python(py, &review)
            }
            Some(sha) => {
                let listing = py
                    .detach(move || desk.import_files(&paths, &options, Some(&sha)))
                    .map_err(failed)?;
                convert::to_python(py, &listing)
            }
        }
    }

    /// One skill as you review it: its entry (with its files) and its whole `SKILL.md`.
    #[pyo3(signature = (name, source=None))]
    fn skill(&self, py: Python<'_>, name: &str, source: Option<&str>) -> PyResult<Py<PyAny>> {
        let skills = SkillsService::open(&self.project);
        let (name, source) = (name.to_owned(), source.map(str::to_owned));
        let detail = py
            .detach(move || skills.show(&name, source.as_deref()))
            .map_err(failed)?;
        convert::to_python(py, &detail)
    }

    /// Approves the exact tree `digest` you reviewed (a changed tree needs a new approval).
    #[pyo3(signature = (name, digest, source=None))]
    fn approve_skill(
        &self,
        py: Python<'_>,
        name: &str,
        digest: &str,
        source: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let skills = SkillsService::open(&self.project);
        let (name, digest, source) = (
            name.to_owned(),
            digest.to_owned(),
            source.map(str::to_owned),
        );
        let view = py
            .detach(move || skills.approve(&name, source.as_deref(), &digest))
            .map_err(failed)?;
        convert::to_python(py, &view)
    }

    /// Gives an approved skill to the agent from its next start.
    #[pyo3(signature = (name, source=None))]
    fn activate_skill(
        &self,
        py: Python<'_>,
        name: &str,
        source: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let skills = SkillsService::open(&self.project);
        let (name, source) = (name.to_owned(), source.map(str::to_owned));
        let view = py
            .detach(move || skills.activate(&name, source.as_deref()))
            .map_err(failed)?;
        convert::to_python(py, &view)
    }

    /// Stops giving a skill to the agent; returns whether it was active.
    fn deactivate_skill(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let skills = SkillsService::open(&self.project);
        let name = name.to_owned();
        py.detach(move || skills.deactivate(&name)).map_err(failed)
    }

    /// The project's files, read-only: changes and diffs.
    #[getter]
    fn workspace(&self) -> Workspace {
        Workspace::new(self.project.clone(), None)
    }

    /// Stops every agent this process runs (at its next step) and lets every session go.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let gateway = Arc::clone(&self.gateway);
        let runtime = runtime()?;
        py.detach(move || runtime.block_on(gateway.close()));
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("heartwood.open({:?})", self.project.root().as_str())
    }
}

/// Lets sessions go when they sit idle, as the terminal interface and `serve` do, so another
/// interface can take them directly; ends with the gateway.
fn release_idle_sessions(gateway: Weak<SessionGateway>) -> PyResult<()> {
    runtime()?.spawn(async move {
        loop {
            tokio::time::sleep(heartwood_gateway::IDLE_RELEASE).await;
            let Some(gateway) = gateway.upgrade() else {
                return;
            };
            gateway.release_idle(heartwood_gateway::IDLE_RELEASE).await;
        }
    });
    Ok(())
}

/// Opens the project in `path`, or the kernel's current directory.
#[pyfunction]
#[pyo3(signature = (path=None))]
fn open(path: Option<std::path::PathBuf>) -> PyResult<Heartwood> {
    Heartwood::new(path)
}

/// The compiled half of the `heartwood` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Heartwood>()?;
    m.add_class::<Session>()?;
    m.add_class::<Workspace>()?;
    m.add_class::<view::Projection>()?;
    m.add_class::<view::Pending>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(stats::_stats_fit, m)?)?;
    m.add_function(wrap_pyfunction!(current, m)?)?;
    m.add("HeartwoodError", py.get_type::<HeartwoodError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
