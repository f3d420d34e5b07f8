"""Type stubs for Heartwood's compiled module (re-exported by ``heartwood``)."""

from os import PathLike
from typing import Any, Dict, List, Literal, Optional, Union

__version__: str

class HeartwoodError(Exception):
    """Something Heartwood refused or could not do; the message says what to do next."""

Policy = Literal["always-review", "low-risk"]

def open(path: Optional[Union[str, PathLike[str]]] = None) -> Heartwood:
    """Opens the project in ``path``, or the kernel's current directory."""

def _stats_fit(table: str, outcome: str, predictors: List[str], categorical: Optional[List[str]] = None, fixed_effects: Optional[str] = None, intercept: bool = True, se: str = "classical", family: str = "gaussian", is_text: bool = False) -> Dict[str, Any]:
    """The statistics reference on a CSV file (or CSV text with ``is_text``); see ``heartwood.stats.fit``."""

def current() -> Optional[Session]:
    """The notebook's current session: the one last made or opened (what the magics act on)."""

class Heartwood:
    def __init__(self, path: Optional[Union[str, PathLike[str]]] = None) -> None: ...
    @property
    def root(self) -> str:
        """The project folder."""
    def status(self) -> Dict[str, Any]:
        """Where the project stands and what to do next (the startup plan)."""
    def sessions(self, limit: int = 50) -> List[Dict[str, Any]]:
        """The project's sessions, most recently active first."""
    def session(self, id: Optional[str] = None) -> Session:
        """A new session, or an existing one by id, unique prefix, or ``"last"``."""
    @property
    def workspace(self) -> Workspace:
        """The project's files, read-only."""
    def workflows(self) -> List[Dict[str, Any]]:
        """The workflow catalog: each definition's id, title, inputs and stages."""
    def start_workflow(self, definition: str, question: str, inputs: Optional[Dict[str, str]] = None) -> Session:
        """Starts a research workflow run in a new session; returns the session."""
    def skills(self) -> Dict[str, Any]:
        """The project's Agent Skills: ``skills`` (name, source, status, digest, files) and
        ``sources``."""
    def models(self) -> Dict[str, Any]:
        """The project's local models: ``models`` (each with ``label`` and ``validation``),
        ``runtime`` and recent ``transfers`` (``label``, ``fraction``, ``running``)."""
    def model_catalog(self) -> Dict[str, Any]:
        """The deployment's trusted model catalog: ``entries`` (``id``, ``label``, ``license``,
        ``does_not_fit``, ``stored``), ``source``, and a ``note`` when there is none."""
    def download_model(self, id: str, accept_license: Optional[str] = None, revision: Optional[str] = None, files: Optional[List[str]] = None, name: Optional[str] = None, context: Optional[int] = None) -> Dict[str, Any]:
        """Downloads catalog entry ``id`` (or, with ``revision``, hub repository ``id`` at that
        revision): the review (``manifest``, ``manifest_sha256``) without ``accept_license``;
        with that SHA-256, the download with its progress shown, then the model's listing. A
        kernel interrupt cancels it (nothing is published)."""
    def cancel_transfer(self, handle: str) -> None:
        """Cancels the project's running transfer ``handle`` (as ``models()`` lists it),
        whichever interface or process runs it."""
    def import_model(self, paths: List[str], license: str, accept_license: Optional[str] = None, name: Optional[str] = None, context: Optional[int] = None, chat_format: Optional[str] = None) -> Dict[str, Any]:
        """Imports local model files: the review (``manifest``, ``manifest_sha256``) without
        ``accept_license``; with that SHA-256, the imported model's listing."""
    def skill(self, name: str, source: Optional[str] = None) -> Dict[str, Any]:
        """One skill as you review it: ``view`` (its entry, with its files) and ``skill_md``."""
    def approve_skill(self, name: str, digest: str, source: Optional[str] = None) -> Dict[str, Any]:
        """Approves the exact tree ``digest`` you reviewed."""
    def activate_skill(self, name: str, source: Optional[str] = None) -> Dict[str, Any]:
        """Gives an approved skill to the agent from its next start."""
    def deactivate_skill(self, name: str) -> bool:
        """Stops giving a skill to the agent; returns whether it was active."""
    def close(self) -> None:
        """Stops every agent this process runs and lets every session go."""
    def _repr_html_(self) -> str: ...

class Session:
    @property
    def id(self) -> str: ...
    def run(self, task: str, policy: Policy = "always-review", timeout: Optional[float] = None) -> Session:
        """Gives the agent a task and waits until the run settles (finished, failed, paused, or
        waiting for a decision). Raises ``TimeoutError`` after ``timeout`` seconds (the run goes
        on) and ``KeyboardInterrupt`` on a kernel interrupt (the run is paused)."""
    def wait(self, timeout: Optional[float] = None) -> Session:
        """Waits until the run settles."""
    @property
    def pending(self) -> Optional[Pending]:
        """The set waiting for a decision, with previews; binds ``allow``/``reject`` to it."""
    def allow(self) -> Dict[str, Any]:
        """Allows every action of the set last shown, once; returns the receipt (shown as what
        was decided). Raises ``StaleDecision`` if it was shown again since."""
    def reject(self, reason: Optional[str] = None) -> Dict[str, Any]:
        """Rejects every action of the set last shown; the agent reads ``reason``. Returns the
        receipt."""
    def guide(self, text: str) -> None:
        """Adds guidance the agent reads before its next step."""
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def interrupt(self) -> None:
        """Stops the running action now and pauses the agent."""
    def export(
        self,
        format: Literal["bundle", "markdown", "ro_crate"] = "bundle",
        destination: Optional[str] = None,
        zip: bool = False,
        private: List[str] = ...,
    ) -> Dict[str, Any]:
        """Exports the session (a bundle, a transcript file or an RO-Crate) and records it."""
    @property
    def projection(self) -> Projection: ...
    @property
    def workflow(self) -> Optional[Dict[str, Any]]:
        """The workflow run: stages, the latest checks, controls; binds ``accept_stage``."""
    def run_stage(self, timeout: Optional[float] = None) -> Session:
        """Runs the current stage as an agent turn and waits until it settles."""
    def evaluate_stage(self) -> Dict[str, Any]:
        """Runs the current stage's independent checks; returns the assessment."""
    def accept_stage(self) -> None:
        """Accepts the current stage, bound to the revision and fingerprint last shown."""
    def cancel_workflow(self) -> None: ...
    def consent_parallel_review(self) -> None:
        """Consents to run the waiting review batch at once, exactly as previewed (qualified routes only)."""
    def correct_finding(self, to: str, finding: int = 0, apply: bool = False) -> Optional[Dict[str, Any]]:
        """Plans, rechecks (once ``to`` is written) or, with ``apply``, binds a correction of a finding."""
    def review_stage(self, timeout: Optional[float] = None) -> Session:
        """Has the stage's files reviewed by the review specialist; Heartwood verifies its proposals."""
    def figure(self) -> Dict[str, Any]:
        """The model the latest checks judged, drawn from the bytes they read: its series and ``svg``.
        Raises ``HeartwoodError`` saying why when there is none (no workflow, no model judged yet,
        or the files changed since)."""
    def verify(self) -> Dict[str, Any]:
        """Verifies the session's hash chain: ``{"intact": True, "events": n, "terminal_hash": …}``."""
    def transcript(self) -> str:
        """The session as a readable Markdown transcript."""
    @property
    def workspace(self) -> Workspace: ...
    def watch(self, timeout: Optional[float] = None) -> Session:
        """Prints one line per event until the run settles."""
    def _repr_html_(self) -> str: ...
    def _repr_markdown_(self) -> str: ...

class Projection:
    @property
    def session(self) -> str: ...
    @property
    def lifecycle(self) -> Literal["idle", "running", "waiting_for_decision", "paused", "finished", "failed", "stuck"]: ...
    @property
    def status_line(self) -> str: ...
    @property
    def waits_for(self) -> Optional[Dict[str, Any]]: ...
    @property
    def title(self) -> Optional[str]: ...
    @property
    def settled(self) -> bool: ...
    @property
    def conversation(self) -> List[Dict[str, Any]]: ...
    @property
    def actions(self) -> List[Dict[str, Any]]: ...
    @property
    def pending(self) -> Optional[Dict[str, Any]]: ...
    @property
    def task_plan(self) -> List[Dict[str, Any]]: ...
    @property
    def usage(self) -> Dict[str, Any]: ...
    @property
    def suggestions(self) -> List[Dict[str, Any]]: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def _repr_html_(self) -> str: ...

class Pending:
    @property
    def set_id(self) -> str: ...
    @property
    def revision(self) -> int: ...
    @property
    def members(self) -> List[Dict[str, Any]]:
        """Each action: id, tool, headline, risk and preview (command, diff, new file, ...)."""
    def to_dict(self) -> Dict[str, Any]: ...
    def __len__(self) -> int: ...
    def _repr_html_(self) -> str: ...

class Workspace:
    def changes(self) -> Dict[str, Any]: ...
    def diff(self, path: str) -> Dict[str, Any]: ...
