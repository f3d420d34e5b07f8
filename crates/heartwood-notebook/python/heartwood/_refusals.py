"""Refusals as exceptions: one class per kind of refusal the session gateway records.

Every class is a subclass of ``heartwood.Refused`` (itself a ``HeartwoodError``), so
``except heartwood.Refused`` catches any refusal and ``except heartwood.StaleDecision`` only
a decision on a set that moved on. The message is the gateway's sentence; ``fields`` holds
what the refusal carries (the set waiting now, the checks that did not pass, the commands
available), as in the receipt's ``outcome``. Nothing changed when a command was refused.
"""

from ._native import HeartwoodError


class Refused(HeartwoodError):
    """The gateway refused a command; nothing changed. Raised as such for a refusal whose kind
    this build cannot type (one recorded before refusals were typed)."""

    #: The refusal's kind, as the receipt names it.
    kind = "other"

    def __init__(self, message, fields=None):
        super().__init__(message)
        #: The refusal's fields, as in the receipt's ``outcome`` (``kind`` among them).
        self.fields = dict(fields or {})


class EmptyText(Refused):
    """A task or guidance with no words in it."""

    kind = "empty_text"


class EmptyTitle(Refused):
    """A rename to a blank title."""

    kind = "empty_title"


class NothingPending(Refused):
    """A decision while no set of actions waits for one (``fields["lifecycle"]`` says what the
    session does instead)."""

    kind = "nothing_pending"


class StaleDecision(Refused):
    """A decision on a set or revision that is no longer the one waiting, or an allow of a set
    whose preview went stale; ``fields["pending_set_id"]`` and ``fields["pending_revision"]``
    name the one waiting now. Look at ``session.pending`` again and decide again."""

    kind = "stale_decision"


class Busy(Refused):
    """The session does not take the command while it does what it does
    (``fields["available"]`` lists what it takes now)."""

    kind = "busy"


class Closed(Refused):
    """The session was closed; a new task reopens it."""

    kind = "closed"


class BudgetUsedUp(Refused):
    """The workflow stage's budget is used up: no further model continuation in this stage."""

    kind = "budget_used_up"


class AgentUnavailable(Refused):
    """The agent cannot be started or served: no model route, an unset key, an unreachable
    service, another engine."""

    kind = "agent_unavailable"


class NoWorkflow(Refused):
    """A workflow command to a session that runs no workflow."""

    kind = "no_workflow"


class SessionInUse(Refused):
    """A workflow start in a session already used; start it in a new session."""

    kind = "session_in_use"


class WorkflowUnusable(Refused):
    """The workflow's definition, inputs or evidence cannot be used as the command needs."""

    kind = "workflow_unusable"


class NotPossibleNow(Refused):
    """A workflow control the run does not offer now."""

    kind = "not_possible_now"


class NotEligible(Refused):
    """An acceptance of a stage whose checks do not pass (``fields["problems"]``)."""

    kind = "not_eligible"


class StaleRun(Refused):
    """A workflow command naming a revision, assessment or preview the run moved past."""

    kind = "stale_run"


class RunMovedOn(Refused):
    """The run moved on while what the command needed was read; look again."""

    kind = "run_moved_on"


class NotAtRest(Refused):
    """A correction while the run does not rest at a stage."""

    kind = "not_at_rest"


class NoReviewBatch(Refused):
    """A consent to run a review batch at once when none waits for it."""

    kind = "no_review_batch"


class EvidenceChanged(Refused):
    """Files the run relies on, or that an acceptance's checks judged, changed since
    (``fields["files"]``)."""

    kind = "evidence_changed"


class CorrectionNotBindable(Refused):
    """A correction whose recheck still observes the defect, or that replaces no output of the
    current stage."""

    kind = "correction_not_bindable"


#: Each kind's class.
BY_KIND = {cls.kind: cls for cls in [Refused, *Refused.__subclasses__()]}


def refused(kind, message, fields):
    """The exception for a refusal of ``kind`` (``Refused`` for a kind this build lacks)."""
    return BY_KIND.get(kind, Refused)(message, fields)
