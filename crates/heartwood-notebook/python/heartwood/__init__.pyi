from typing import Any, Dict, List, Optional

from ._native import (
    Heartwood as Heartwood,
    HeartwoodError as HeartwoodError,
    Pending as Pending,
    Projection as Projection,
    Session as Session,
    StaleDecision as StaleDecision,
    Workspace as Workspace,
    __version__ as __version__,
    current as current,
    open as open,
)

def watch(session: Session, timeout: Optional[float] = None) -> Session: ...
def workflows() -> List[Dict[str, Any]]: ...
def load_ipython_extension(ipython: object) -> None: ...
