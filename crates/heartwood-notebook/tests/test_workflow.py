"""A workflow run from a notebook, on the example project: start, a stage turn under review,
the gateway's checks, and an acceptance bound to the assessment shown."""

import os
import shutil

import pytest

import heartwood
from conftest import finish

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "projects", "sleep-study")


def test_a_stage_is_run_checked_and_accepted_from_a_notebook(project, model):
    shutil.copytree(FIXTURE, project, dirs_exist_ok=True)
    # The report is already right: the stage's turn only has to report it, with the
    # structured outcome a workflow turn ends with.
    done = finish("The readiness report is in place.")
    done["tool_calls"][0]["arguments"]["outcome"] = {
        "status": "completed",
        "artifacts": ["reports/readiness.json"],
        "notes": "",
    }
    model([done])
    hw = heartwood.open(project)
    with pytest.raises(heartwood.HeartwoodError, match="no input"):
        hw.start_workflow("tabular-ols", "q", inputs={"nonsense": "x.csv"})
    s = hw.start_workflow("tabular-ols", "Does sleep predict the test score?")
    w = s.workflow
    assert w["current"] == "readiness"
    assert [st["status"] for st in w["stages"]][:2] == ["pending", "pending"]
    with pytest.raises(heartwood.HeartwoodError, match="no acceptance"):
        s.accept_stage()

    s.run_stage(timeout=60)
    assert s.workflow["stages"][0]["status"] == "awaiting_evaluation"
    assert "Data readiness" in s._repr_html_() and "heartwood.current().run_stage()" in s._repr_html_()
    assessment = s.evaluate_stage()
    assert assessment["eligible"] is True, assessment["problems"]
    # The assessment is plain data that a notebook shows as the run's panel.
    assert isinstance(assessment, dict) and "Checks of readiness" in assessment._repr_html_()
    assert {c["check"] for c in assessment["checks"]} == {"data_dictionary", "readiness_report"}
    html = s._repr_html_()
    assert "heartwood.current().accept_stage()" in html
    assert "budget: model calls 1 of 20" in html, html
    assert "Latest turn: reported completed: reports/readiness.json" in html, html
    # The readiness stage fits no model: there is no picture to draw, and figure() says why.
    with pytest.raises(heartwood.HeartwoodError, match="no model figure: no model has been judged"):
        s.figure()
    s.accept_stage()
    w = s.workflow
    assert w["stages"][0]["status"] == "accepted"
    assert w["current"] == "plan"
    # The accepted stage exports as an RO-Crate from here too, recorded with its destination,
    # and the crate's own verifier passes it.
    written = s.export("ro_crate", "crate")
    crate = os.path.join(project, "crate")
    assert written["destination"] == crate and written["files"] > 5, written
    import subprocess, sys
    checked = subprocess.run([sys.executable, os.path.join(crate, "verify_crate.py"), crate],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout
    assert "1 acceptances" in checked.stdout
    with pytest.raises(ValueError, match="no export format"):
        s.export("pdf", "x")
    s.cancel_workflow()
    assert s.workflow["cancelled"] is True
    assert s.verify()["intact"] is True
    hw.close()
