"""Fixtures for the notebook module's tests: a real project folder, the real `heartwood`
binary, and the scripted OpenAI-compatible model server as a process (real HTTP over TCP).

The Rust test `crates/heartwood-cli/tests/notebook_py.rs` builds the module and runs these
with `HEARTWOOD_BIN` and `HEARTWOOD_SCRIPTED_MODEL` pointing at the binaries it built.
"""

import json
import os
import subprocess
import urllib.request

import pytest


def _binary(variable):
    path = os.environ.get(variable)
    if not path or not os.path.exists(path):
        pytest.fail(f"{variable} must name a built binary (cargo test sets it)")
    return path


class ModelServer:
    """The scripted model server, serving `turns` in order."""

    def __init__(self, folder, turns):
        script = folder / "script.json"
        script.write_text(json.dumps({"turns": turns}))
        self.process = subprocess.Popen(
            [_binary("HEARTWOOD_SCRIPTED_MODEL"), str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.process.stdout.readline().strip()
        assert self.base_url.startswith("http://"), self.base_url

    def requests(self):
        root = self.base_url.rsplit("/v1", 1)[0]
        with urllib.request.urlopen(root + "/__heartwood/requests", timeout=10) as answer:
            return json.load(answer)

    def stop(self):
        self.process.stdin.close()
        self.process.wait(timeout=10)


def heartwood_cli(project, *args):
    """Runs the `heartwood` binary in `project`; returns the completed process."""
    return subprocess.run(
        [_binary("HEARTWOOD_BIN"), *args], cwd=project, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "data.csv").write_text("id,y\n1,2\n2,4\n")
    return folder


@pytest.fixture
def model(tmp_path, project):
    """A function that starts the scripted server with `turns` and connects the project."""
    servers = []

    def start(turns):
        server = ModelServer(tmp_path, turns)
        servers.append(server)
        connected = heartwood_cli(
            project,
            "model", "connect", "--category", "compatible",
            "--base-url", server.base_url, "--model", "scripted",
        )
        assert connected.returncode == 0, connected.stderr
        return server

    yield start
    for server in servers:
        server.stop()


def terminal(*commands):
    """A model turn proposing these terminal commands, as one set."""
    return {"tool_calls": [{"name": "terminal", "arguments": {"command": c}} for c in commands]}


def finish(message):
    """A model turn that finishes with `message`."""
    return {"tool_calls": [{"name": "finish", "arguments": {"message": message}}]}


def run_notebook(cells, project):
    """Runs `cells` in a real Jupyter kernel started in `project`; the executed cells."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(project)}},
    ).execute()
    return notebook.cells
