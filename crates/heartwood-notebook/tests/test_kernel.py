"""A real notebook executed in a real Jupyter kernel (ipykernel, driven by nbclient): a task
runs to a pending set that renders as HTML, the set is decided, the `%%heartwood` cell magic
gives the next task, and the same session read by `heartwood sessions show` has the same
events. The rendered pending set is kept (HEARTWOOD_NOTEBOOK_HTML) for the README's picture."""

import json
import os

from conftest import finish, heartwood_cli, run_notebook, terminal


def html_of(cell):
    return "".join(
        output.get("data", {}).get("text/html", "")
        for output in cell.outputs
        if output.get("output_type") in ("execute_result", "display_data")
    )


def test_a_notebook_runs_a_task_renders_the_set_and_decides_it(project, model):
    edit = {"name": "file_editor", "arguments": {
        "command": "str_replace", "path": "data.csv", "old_str": "2,4", "new_str": "2,4.5",
        "summary": "correct the second participant's value"}}
    model([
        {"content": "I'll correct the value and note it.",
         "tool_calls": [edit, terminal("echo from-the-notebook >> ran.txt")["tool_calls"][0]]},
        finish("Wrote ran.txt."),
        {"content": "Hello from the cell magic."},
    ])
    cells = [
        "import heartwood\nhw = heartwood.open()\ns = hw.session()\n"
        "s.run('write ran.txt', timeout=60)",
        "s.pending",
        "s.allow()\ns.wait(timeout=60)\nprint(s.projection.lifecycle)",
        "%load_ext heartwood",
        "%%heartwood last\nsay hello",
        "print(s.verify()['events'])\nprint(s.id)",
    ]
    run, pending, decided, _, magic, verified = run_notebook(cells, project)

    assert "Waiting for your decision" in html_of(run)
    shown = html_of(pending)
    assert "echo from-the-notebook &gt;&gt; ran.txt" in shown, shown
    # The hint names the notebook's own variable for the session.
    assert "<code>s.allow()</code>" in shown and "<code>s.reject(" in shown, shown
    assert "finished" in decided.outputs[0]["text"]
    assert (project / "ran.txt").read_text() == "from-the-notebook\n"
    assert (project / "data.csv").read_text() == "id,y\n1,2\n2,4.5\n"
    assert "+2,4.5" in shown
    assert "Hello from the cell magic." in html_of(magic)

    events, session = verified.outputs[0]["text"].split()
    shown_by_cli = heartwood_cli(project, "sessions", "show", session, "--json")
    assert shown_by_cli.returncode == 0, shown_by_cli.stderr
    assert len(json.loads(shown_by_cli.stdout)["events"]) == int(events)

    keep = os.environ.get("HEARTWOOD_NOTEBOOK_HTML")
    if keep:
        with open(keep, "w") as page:
            page.write("<!doctype html><meta charset=utf-8><body style='margin:16px'>" + shown)


def text_of(cell):
    return "".join(
        output.get("text", "") + output.get("data", {}).get("text/plain", "")
        for output in cell.outputs
    )


FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "projects", "sleep-study")


def test_the_magics_act_on_the_notebooks_session_and_every_hint_runs_as_printed(project, model):
    import shutil

    shutil.copytree(FIXTURE, project, dirs_exist_ok=True)
    model([
        terminal("echo first >> ran.txt"),
        finish("Wrote ran.txt."),
        {"content": "Guidance read.", "tool_calls": [terminal("echo second >> ran.txt")["tool_calls"][0]]},
        finish("Left it."),
    ])
    cells = [
        "%load_ext heartwood",
        # No session yet: the magic makes the notebook's current one and binds it as `session`.
        "%%heartwood\nwrite ran.txt",
        # The hint the rendered set printed, exactly as printed.
        "session.allow()\nsession.wait(timeout=60)\nprint(session.projection.lifecycle)",
        # The same session again: the next cell's text goes to it.
        "%%heartwood\nnow append a second line",
        "%heartwood status",
        "%heartwood reject not needed",
        "import heartwood\nprint(session.projection.lifecycle, len(heartwood.open().sessions(10)))",
        "%heartwood workflows",
        "%heartwood start tabular-ols Does sleep predict the score",
        "%heartwood stage",
        "%heartwood help",
    ]
    _, first, allowed, second, status, rejected, after, catalog, started, stage, helped = run_notebook(cells, project)

    shown = html_of(first)
    assert "echo first &gt;&gt; ran.txt" in shown, shown
    assert "session.allow()" in shown, shown
    assert "finished" in allowed.outputs[0]["text"], allowed.outputs
    assert (project / "ran.txt").read_text() == "first\n"
    assert "echo second &gt;&gt; ran.txt" in html_of(second), html_of(second)
    assert "Waiting for your decision" in html_of(status), html_of(status)
    assert "finished" in after.outputs[0]["text"], after.outputs
    # One session for all of it: the magics never made a second.
    assert after.outputs[0]["text"].split()[1] == "1", after.outputs
    assert (project / "ran.txt").read_text() == "first\n", "a rejected set ran"
    assert "tabular-ols" in text_of(catalog), text_of(catalog)
    assert "Data readiness" in html_of(started) + html_of(stage), html_of(stage)
    assert "%heartwood allow" in text_of(helped)


def plain_of(cell):
    return "".join(output.get("data", {}).get("text/plain", "") for output in cell.outputs)


def test_the_magics_follow_the_session_made_in_python_and_results_render_as_html(project, model):
    import shutil

    shutil.copytree(FIXTURE, project, dirs_exist_ok=True)
    model([terminal("echo first >> ran.txt"), finish("Wrote ran.txt.")])
    cells = [
        "import heartwood\nhw = heartwood.open()\nmine = hw.session()",
        "%load_ext heartwood",
        # The session made in Python is the current one: the cell's task goes to it.
        "%%heartwood\nwrite ran.txt",
        "print(session.id == mine.id, heartwood.current().id == mine.id)",
        "mine.pending",
        "mine.allow()",
        "mine.wait(timeout=60)\nmine.workspace.changes()",
        "hw.workflows()",
        "run = hw.start_workflow('tabular-ols', 'Does sleep predict the score')",
        # The run just made is now the current session: the stage is its.
        "%heartwood stage",
        "run.workflow",
        "try:\n    run.figure()\nexcept heartwood.HeartwoodError as e:\n    print(e)",
    ]
    (_, _, magic, same, pending, allowed, changes, catalog, _, stage, workflow, figure
     ) = run_notebook(cells, project)

    assert "echo first &gt;&gt; ran.txt" in html_of(magic), html_of(magic)
    assert same.outputs[0]["text"].split() == ["True", "True"], same.outputs
    assert "<code>mine.allow()</code>" in html_of(pending), html_of(pending)
    # allow() returns its receipt, which shows what was decided.
    assert "Allowed set" in html_of(allowed) and "mine.wait()" in html_of(allowed), allowed.outputs
    assert "'command_id'" in plain_of(allowed), "the plain repr is the receipt's data"
    assert (project / "ran.txt").read_text() == "first\n"
    # Rich HTML with the plain data kept for scripts.
    assert "Changed files" in html_of(changes), changes.outputs
    assert plain_of(changes).startswith("{"), plain_of(changes)
    assert "Workflows" in html_of(catalog) and "tabular-ols" in html_of(catalog), catalog.outputs
    assert plain_of(catalog).startswith("[{"), plain_of(catalog)[:200]
    assert "Data readiness" in html_of(stage), stage.outputs
    assert "heartwood-workflow" in html_of(workflow) and "run.run_stage()" in html_of(workflow)
    assert plain_of(workflow).startswith("{"), plain_of(workflow)[:200]
    assert "no model figure" in figure.outputs[0]["text"], figure.outputs
