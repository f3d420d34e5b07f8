from typing import Any, Dict, List, Optional

from ._native import (
    Heartwood as Heartwood,
    HeartwoodError as HeartwoodError,
    Pending as Pending,
    Projection as Projection,
    Session as Session,
    Workspace as Workspace,
    __version__ as __version__,
    current as current,
    open as open,
)
from ._refusals import (
    Refused as Refused,
    EmptyText as EmptyText,
    EmptyTitle as EmptyTitle,
    NothingPending as NothingPending,
    StaleDecision as StaleDecision,
    Busy as Busy,
    Closed as Closed,
    BudgetUsedUp as BudgetUsedUp,
    AgentUnavailable as AgentUnavailable,
    NoWorkflow as NoWorkflow,
    SessionInUse as SessionInUse,
    WorkflowUnusable as WorkflowUnusable,
    NotPossibleNow as NotPossibleNow,
    NotEligible as NotEligible,
    StaleRun as StaleRun,
    RunMovedOn as RunMovedOn,
    NotAtRest as NotAtRest,
    NoReviewBatch as NoReviewBatch,
    EvidenceChanged as EvidenceChanged,
    CorrectionNotBindable as CorrectionNotBindable,
)

def watch(session: Session, timeout: Optional[float] = None) -> Session: ...
def workflows() -> List[Dict[str, Any]]: ...
def load_ipython_extension(ipython: object) -> None: ...
