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
    StaleDecision,
    Workspace,
    __version__,
    open,
)

__all__ = [
    "Heartwood",
    "HeartwoodError",
    "Pending",
    "Projection",
    "Session",
    "StaleDecision",
    "Workspace",
    "open",
    "watch",
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


def _has_widgets():
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _cell_magic(line, cell):
    """``%%heartwood [session]``: the cell's text is the task; the output is the live session.

    Without an argument the task starts a new session; ``%%heartwood last`` (or an id) gives
    it to an existing one.
    """
    from IPython.display import display

    text = cell.strip()
    if not text:
        raise HeartwoodError("the cell is empty: write the task in it")
    session = open().session(line.strip() or None)
    try:
        session.run(text, timeout=0.2)
    except TimeoutError:
        if _has_widgets():
            watch(session)
            return
        session.watch()
    display(session)


def load_ipython_extension(ipython):
    """``%load_ext heartwood`` registers the ``%%heartwood`` cell magic."""
    ipython.register_magic_function(_cell_magic, magic_kind="cell", magic_name="heartwood")
