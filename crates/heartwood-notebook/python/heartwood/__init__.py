"""Heartwood in Jupyter: give the agent a task, review every set of actions, decide, verify.

    import heartwood
    hw = heartwood.open()                 # the kernel's current directory is the project
    s = hw.session()                      # a new session (or hw.session("last"))
    s.run("check data/cohort.csv and write a readiness report")
    s.pending                             # the set waiting, whole, with diffs and commands
    s.allow()  # or s.reject("use the scratch folder")

Everything goes through Heartwood's session gateway, the same one the terminal interface and
the browser page use: the same sessions, the same record, the same rules.
"""

from ._native import (  # noqa: F401
    Heartwood,
    HeartwoodError,
    Pending,
    Projection,
    Session,
    Workspace,
    __version__,
    current,
    open,
)
from ._refusals import (  # noqa: F401  (one exception class per kind of refusal)
    Refused,
    EmptyText,
    EmptyTitle,
    NothingPending,
    StaleDecision,
    Busy,
    Closed,
    BudgetUsedUp,
    AgentUnavailable,
    NoWorkflow,
    SessionInUse,
    WorkflowUnusable,
    NotPossibleNow,
    NotEligible,
    StaleRun,
    RunMovedOn,
    NotAtRest,
    NoReviewBatch,
    EvidenceChanged,
    CorrectionNotBindable,
)
from . import stats  # noqa: F401  (heartwood.stats.fit)

__all__ = [
    "Heartwood",
    "HeartwoodError",
    "Pending",
    "Projection",
    "Refused",
    "EmptyText",
    "EmptyTitle",
    "NothingPending",
    "StaleDecision",
    "Busy",
    "Closed",
    "BudgetUsedUp",
    "AgentUnavailable",
    "NoWorkflow",
    "SessionInUse",
    "WorkflowUnusable",
    "NotPossibleNow",
    "NotEligible",
    "StaleRun",
    "RunMovedOn",
    "NotAtRest",
    "NoReviewBatch",
    "EvidenceChanged",
    "CorrectionNotBindable",
    "Session",
    "Workspace",
    "current",
    "open",
    "stats",
    "watch",
    "workflows",
    "load_ipython_extension",
]


def watch(session, timeout=None):
    """Follow a running session until it settles.

    With ipywidgets installed, one live HTML view updates in place; otherwise one line is
    printed per event (``session.watch()``). Returns the session.
    """
    try:
        import ipywidgets  # noqa: F401
        from IPython.display import display
    except ImportError:
        return session.watch(timeout)
    import time

    view = ipywidgets.HTML(value=session._repr_html_())
    display(view)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        projection = session.projection
        view.value = session._repr_html_()
        if projection.settled:
            return session
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError("still running after the timeout; call watch() again to follow it")
        try:
            session.wait(timeout=0.5)
        except TimeoutError:
            pass


# A download's progress, by transfer id: the notebook display it updates in place, or the last
# line printed outside a notebook.
_transfers = {}


def _show_transfer(line):
    """Shows a model transfer's progress (the gateway's line for it): in a notebook an HTML
    progress bar updated in place, elsewhere one printed line each time it changes."""
    import html as _html

    key = line["id"]
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display

        in_notebook = get_ipython() is not None and hasattr(get_ipython(), "kernel")
    except ImportError:
        in_notebook = False
    if not in_notebook:
        if _transfers.get(key) != line["label"]:
            _transfers[key] = line["label"]
            print(line["label"], flush=True)
        return
    fraction = line.get("fraction")
    bar = "" if fraction is None else f'<progress max="1" value="{fraction:.3f}" style="width:20em"></progress> '
    shown = HTML(f'<div class="heartwood-transfer">{bar}{_html.escape(line["label"])}</div>')
    handle = _transfers.get(key)
    if handle is None:
        _transfers[key] = display(shown, display_id=True)
    else:
        handle.update(shown)


def _has_widgets():
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


# The magics' Heartwood (for sessions they make) and the IPython shell they bind `session` in.
# The current session itself is the compiled module's (`heartwood.current()`): the one last
# made or opened, in Python or by a magic.
_notebook = {"hw": None, "ipython": None}


def _current(name=None):
    """The notebook's current session (made on first use); with `name`, that session, which
    becomes the current one. Bound as ``session`` in the notebook."""
    session = None if name else current()
    if session is None:
        if _notebook["hw"] is None:
            _notebook["hw"] = open()
        session = _notebook["hw"].session(name)
    if _notebook["ipython"] is not None:
        _notebook["ipython"].user_ns["session"] = session
    return session


def _variable_for(session_id):
    """The notebook variable bound to the session with this id (the researcher's own before
    the magics' ``session``), so a hint names what the researcher called it; ``None`` outside
    IPython or when none is."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    names = [
        name
        for name, value in list(shell.user_ns.items())
        if not name.startswith("_") and isinstance(value, Session) and value.id == session_id
    ]
    # The researcher's own name first; `session` is the one the magics bind.
    names.sort(key=lambda name: name == "session")
    return names[0] if names else None


def _follow(session):
    """Shows the session live until it settles (or stops for a decision)."""
    from IPython.display import display

    if _has_widgets():
        watch(session)
        return None
    session.watch()
    display(session)
    return None


def _cell_magic(line, cell):
    """``%%heartwood [session]``: the cell's text goes to the notebook's current session (a task,
    or guidance while one runs); the output is the live session.

    The current session is the one last made or opened (``hw.session()`` in Python counts);
    with none yet, the first use makes one; ``%%heartwood last`` (or an id) switches to that
    one. The session is bound as ``session`` in the notebook.
    """
    text = cell.strip()
    if not text:
        raise HeartwoodError("the cell is empty: write the task in it")
    session = _current(line.strip() or None)
    try:
        session.run(text, timeout=0.2)
    except TimeoutError:
        pass
    return _follow(session)


_LINE_HELP = """%heartwood status          the current session, as it stands
%heartwood allow           allow the pending set once, then follow the agent
%heartwood reject [why]    reject the pending set (the agent reads why)
%heartwood stage           the workflow stage in front of you: its checks and what comes next
%heartwood run             run the workflow's current stage, then follow it
%heartwood evaluate        check the stage's files now
%heartwood accept          accept the stage that awaits acceptance
%heartwood workflows       the workflow catalog
%heartwood start ID QUESTION   start a run of workflow ID in a new session (leave off a
                           final "?": IPython reads a line ending in ? as a help request)
%heartwood use ID|last     make another session the current one"""


def _line_magic(line):
    """``%heartwood VERB ...``: act on the notebook's current session (``%heartwood help``)."""
    from IPython.display import display

    verb, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if verb in ("", "status"):
        return _current()
    if verb == "help":
        print(_LINE_HELP)
        return None
    if verb == "use":
        if not rest:
            raise HeartwoodError("say which session: %heartwood use last (or an id)")
        return _current(rest)
    if verb == "workflows":
        return workflows()
    if verb == "start":
        definition, _, question = rest.partition(" ")
        if not definition or not question.strip():
            raise HeartwoodError("say which workflow and the question: %heartwood start tabular-ols Does sleep matter")
        if _notebook["hw"] is None:
            _notebook["hw"] = open()
        _notebook["hw"].start_workflow(definition, question.strip())
        return _current()
    session = _current()
    if verb == "allow":
        session.allow()
        return _follow(session)
    if verb == "reject":
        session.reject(rest or None)
        return _follow(session)
    if verb == "stage":
        workflow = session.workflow
        if workflow is None:
            raise HeartwoodError(
                f"the current session ({session.id}) runs no workflow; %heartwood start ID "
                "QUESTION starts one, or %heartwood use ID switches to a session that runs one"
            )
        display(session)
        return None
    if verb == "run":
        try:
            session.run_stage(timeout=0.2)
        except TimeoutError:
            pass
        return _follow(session)
    if verb == "evaluate":
        return session.evaluate_stage()
    if verb == "accept":
        session.accept_stage()
        return session
    raise HeartwoodError(f"%heartwood {verb}: not a verb it knows; %heartwood help lists them")


def workflows():
    """The workflow catalog: the definitions this build maintains, their stages and inputs."""
    if _notebook["hw"] is None:
        _notebook["hw"] = open()
    return _notebook["hw"].workflows()


def load_ipython_extension(ipython):
    """``%load_ext heartwood`` registers ``%%heartwood`` and the ``%heartwood`` line magics."""
    _notebook["ipython"] = ipython
    ipython.register_magic_function(_cell_magic, magic_kind="cell", magic_name="heartwood")
    ipython.register_magic_function(_line_magic, magic_kind="line", magic_name="heartwood")
