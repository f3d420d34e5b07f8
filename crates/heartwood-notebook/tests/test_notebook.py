"""The notebook module against the scripted model server: the real gateway, real files, real
processes. A session run to a pending set, rejected with a reason the model reads, the next set
allowed, finished and verified; a stale decision raises; an interrupt stops a running command."""

import json
import time

import pytest

import heartwood
from conftest import finish, heartwood_cli, terminal


def test_a_run_stops_for_a_set_a_rejection_reaches_the_model_and_the_next_set_runs(project, model):
    server = model([
        terminal("echo one >> ran.txt", "echo two >> ran.txt"),
        terminal("echo scratch >> scratch.txt"),
        finish("Wrote scratch.txt."),
    ])
    hw = heartwood.open(project)
    status = hw.status()
    assert status["phase"] == "ready"
    assert status["platform"]["platform"] == "generic"
    assert status["route"]["low_risk_automation"]["allowed"] is True
    assert "Platform: generic" in hw._repr_html_()
    s = hw.session()
    s.run("write some files", timeout=60)

    assert s.projection.lifecycle == "waiting_for_decision"
    pending = s.pending
    assert len(pending) == 2
    previews = [m["preview"] for m in pending.members]
    assert [p["command"] for p in previews] == ["echo one >> ran.txt", "echo two >> ran.txt"]
    html = s._repr_html_()
    assert "echo one &gt;&gt; ran.txt" in html and "heartwood.current().allow()" in html

    s.reject("use scratch.txt instead")
    s.wait(timeout=60)
    assert not (project / "ran.txt").exists(), "a rejected set runs nothing"
    told = json.dumps(server.requests()[-1])
    assert "use scratch.txt instead" in told, "the reason reaches the model"

    assert s.pending is not None
    s.allow()
    s.wait(timeout=60)
    p = s.projection
    assert p.lifecycle == "finished", p.status_line
    assert (project / "scratch.txt").read_text() == "scratch\n"
    assert any(m["text"] == "Wrote scratch.txt." for m in p.conversation)
    assert p.to_dict()["session"] == s.id

    verified = s.verify()
    assert verified["intact"] is True and verified["events"] > 5
    # The same session, read by another interface, holds the same record.
    shown = heartwood_cli(project, "sessions", "show", s.id, "--json")
    assert shown.returncode == 0, shown.stderr
    assert len(json.loads(shown.stdout)["events"]) == verified["events"]
    assert [row["session"] for row in hw.sessions()] == [s.id]
    hw.close()


def test_a_decision_on_a_set_shown_again_is_stale_and_says_which_is_current(project, model):
    edit = {"name": "file_editor", "arguments": {
        "command": "str_replace", "path": "data.csv", "old_str": "2,4", "new_str": "2,5"}}
    model([{"tool_calls": [edit]}, finish("fixed")])
    hw = heartwood.open(project)
    s = hw.session()
    s.run("fix the second row", timeout=60)
    shown = s.pending
    diff = shown.members[0]["preview"]
    assert diff["kind"] == "diff" and "+2,5" in diff["unified"]
    # The file changes after the set was shown: allowing it would approve what nobody saw.
    (project / "data.csv").write_text("id,y\n1,2\n2,4\n3,6\n")
    with pytest.raises(heartwood.StaleDecision, match=r"revision \d+") as refused:
        s.allow()
    assert shown.set_id in str(refused.value)
    # Typed: the refusal names the set waiting now, as data.
    assert isinstance(refused.value, heartwood.Refused)
    assert refused.value.fields["changed"] == ["data.csv"]
    assert refused.value.fields["pending_revision"] > shown.revision
    assert (project / "data.csv").read_text().endswith("3,6\n"), "nothing ran"
    # Looking again binds the decision to the set as shown now.
    again = s.pending
    assert again.revision > shown.revision
    s.allow()
    s.wait(timeout=60)
    assert s.projection.lifecycle == "finished"
    assert (project / "data.csv").read_text() == "id,y\n1,2\n2,5\n3,6\n"
    hw.close()


def test_guidance_pause_and_an_interrupt_of_a_running_command(project, model):
    model([terminal("sleep 30"), finish("stopped")])
    hw = heartwood.open(project)
    s = hw.session()
    s.run("wait a while", timeout=60)
    s.allow()
    started = time.monotonic()
    while not any(a["state"] == "running" for a in s.projection.actions):
        assert time.monotonic() - started < 30, s.projection.status_line
        time.sleep(0.05)
    s.interrupt()
    s.wait(timeout=30)
    assert time.monotonic() - started < 25, "the command was killed, not waited for"
    p = s.projection
    assert p.lifecycle == "paused", p.status_line
    s.guide("that is enough")
    s.resume()
    s.wait(timeout=60)
    assert s.projection.lifecycle == "finished"
    hw.close()


def test_errors_are_exceptions_with_the_gateways_message(project):
    hw = heartwood.open(project)
    with pytest.raises(heartwood.HeartwoodError, match="no model route"):
        hw.session().run("anything", timeout=5)
    with pytest.raises(ValueError, match="policy"):
        hw.session().run("anything", policy="yolo")
    with pytest.raises(heartwood.HeartwoodError):
        hw.session("no-such-session")
    assert hw.sessions() == []
    hw.close()


def test_a_kernel_interrupt_pauses_the_run_and_raises_keyboard_interrupt(project, model):
    import _thread
    import threading

    model([terminal("sleep 30"), finish("stopped")])
    hw = heartwood.open(project)
    s = hw.session()
    s.run("wait a while", policy="always-review", timeout=60)
    s.allow()
    # What Jupyter's "interrupt the kernel" does: SIGINT to the kernel's main thread.
    threading.Timer(0.5, _thread.interrupt_main).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        s.wait(timeout=60)
    s.wait(timeout=30)
    assert time.monotonic() - started < 25, "the running command was stopped, not waited for"
    assert s.projection.lifecycle == "paused", s.projection.status_line
    hw.close()


def test_local_models_are_imported_under_a_license_decision_and_listed(project, tmp_path):
    weights = tmp_path / "tiny.gguf"
    weights.write_bytes(b"GGUF tiny weights")
    hw = heartwood.open(project)
    review = hw.import_model([str(weights)], "mit", name="tiny")
    assert review["validation"] == "unvalidated"
    assert not (project / ".heartwood" / "models" / "tiny").exists(), "a review wrote the model"
    with pytest.raises(heartwood.HeartwoodError, match="decide again"):
        hw.import_model([str(weights)], "mit", accept_license="0" * 64, name="tiny")
    listed = hw.import_model([str(weights)], "mit", accept_license=review["manifest_sha256"], name="tiny")
    assert listed["validation"] == "unvalidated"
    view = hw.models()
    assert view["models"][0]["label"].startswith("tiny · unvalidated"), view
    assert any(t["label"] == "import tiny: done (published tiny)" for t in view["transfers"]), view
    assert view["runtime"] is None


def test_skills_are_reviewed_approved_and_activated_from_the_notebook(project):
    hw = heartwood.open(project)
    names = [s["name"] for s in hw.skills()["skills"]]
    assert "group-disjoint-splits" in names, names
    shown = hw.skill("group-disjoint-splits")
    assert shown["view"]["reviewed"] is True
    assert [f["path"] for f in shown["view"]["files"]] == ["SKILL.md"]
    assert "held-out" in shown["skill_md"]
    with pytest.raises(heartwood.HeartwoodError, match="review it again"):
        hw.approve_skill("group-disjoint-splits", "blake3:" + "0" * 64)
    digest = shown["view"]["digest"]
    assert hw.approve_skill("group-disjoint-splits", digest)["approved"] is True
    assert hw.activate_skill("group-disjoint-splits")["active"] is True
    assert hw.deactivate_skill("group-disjoint-splits") is True
