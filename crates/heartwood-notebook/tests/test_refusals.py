"""Refusals are typed in Python: each kind of refusal the gateway records raises its own
exception class, a subclass of ``heartwood.Refused``, with the gateway's sentence and the
receipt's fields; no caller tells refusals apart by their words."""

import json
import os

import pytest

import heartwood
from conftest import finish

SCHEMA = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "docs", "schema", "receipt.schema.json"
)


def kinds_in(node):
    """Every `kind` constant a JSON Schema names."""
    found = set()
    if isinstance(node, dict):
        kind = node.get("properties", {}).get("kind", {})
        if isinstance(kind, dict) and isinstance(kind.get("const"), str):
            found.add(kind["const"])
        for value in node.values():
            found |= kinds_in(value)
    elif isinstance(node, list):
        for value in node:
            found |= kinds_in(value)
    return found


def test_every_kind_of_refusal_in_the_receipt_schema_has_its_own_exported_class():
    with open(SCHEMA) as f:
        kinds = kinds_in(json.load(f))
    assert {"stale_decision", "busy", "not_eligible", "other"} <= kinds, kinds
    assert issubclass(heartwood.Refused, heartwood.HeartwoodError)
    for kind in kinds:
        raised = heartwood._refusals.refused(kind, "why", {"kind": kind})
        assert isinstance(raised, heartwood.Refused), kind
        assert raised.kind == kind, f"{kind} has no class of its own"
        assert getattr(heartwood, type(raised).__name__) is type(raised), "exported"
        assert raised.fields == {"kind": kind} and str(raised) == "why"


def test_blank_text_raises_empty_text_before_anything_else(project):
    hw = heartwood.open(project)
    with pytest.raises(heartwood.EmptyText, match="the text is empty") as refused:
        hw.session().run("   ", timeout=5)
    assert refused.value.fields["kind"] == "empty_text"
    hw.close()


def test_no_model_route_raises_agent_unavailable(project):
    hw = heartwood.open(project)
    with pytest.raises(heartwood.AgentUnavailable, match="no model route"):
        hw.session().run("anything", timeout=5)
    hw.close()


def test_a_second_task_while_one_waits_for_a_decision_raises_busy_with_what_is_available(
    project, model
):
    edit = {"name": "file_editor", "arguments": {
        "command": "str_replace", "path": "data.csv", "old_str": "2,4", "new_str": "2,5"}}
    model([{"tool_calls": [edit]}, finish("fixed")])
    hw = heartwood.open(project)
    s = hw.session()
    s.run("fix the second row", timeout=60)
    assert s.projection.lifecycle == "waiting_for_decision"
    with pytest.raises(heartwood.Busy, match="decide the pending action set first") as refused:
        s.run("something else", timeout=5)
    assert refused.value.fields["lifecycle"] == "waiting_for_decision"
    assert "decide" in refused.value.fields["available"]
    assert not isinstance(refused.value, heartwood.StaleDecision)
    s.reject("not now")
    hw.close()
