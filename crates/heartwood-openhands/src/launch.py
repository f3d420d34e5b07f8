# Starts the OpenHands agent server as `python -m openhands.agent_server` would, after the
# adjustments Heartwood needs (the server's version is pinned, so the names patched are known):
# - the kernel kills this process when the thread that started it ends, so a Heartwood process
#   killed outright takes its server with it (from inside the child: `unsafe` is not allowed
#   in Heartwood's Rust code);
# - the variables named in HEARTWOOD_TOOL_HIDDEN (the model key) never reach the terminal;
# - a terminal pane is handed out only once its shell shows the prompt: OpenHands waits a fixed
#   0.1 s after typing its prompt setup, and a shell slower to start (a long ~/.bashrc, a busy
#   machine) printed that prompt after the screen was cleared, so the first command sent was
#   taken as finished at once, without running;
# - every model response reports the conversation's usage as an event (`stats`): the server
#   wires that report to the agent's models once, when the conversation starts, so a model
#   given later (`switch_llm`, which Heartwood sends a restarted server) or a sub-agent's
#   (the `task` tool's specialists) reported nothing, and its calls were missing from the
#   journal and the budgets. A server holds one conversation (Heartwood starts one per
#   session), so its report is the one every model of the process falls back to. And a
#   model given by `switch_llm` to a conversation restored from its store counted its calls
#   apart from the conversation's figures, which the report is made of: it counts into them.
# - the `task` tool's sub-agents are Heartwood's specialists (HEARTWOOD_SPECIALISTS: role,
#   description, instructions, most model calls), tool-free and nothing else: OpenHands
#   registers its own agents (some with a terminal and an editor) and the project's agent
#   files, and a sub-agent's actions run without the researcher's review, so no other agent
#   enters the registry. Each task's calls count under `task:<the parent's tool call id>` in
#   the conversation's figures as they are made (OpenHands adds them once, at the task's end,
#   under a number its next server would give again).
# - the file editor works inside the project only, as the native engine's does (the review's
#   preview says an edit outside it would fail): a path outside the working directory, once
#   its symbolic links are resolved when the edit runs, is refused, not written (and so is one
#   in the project's `.heartwood/` or `.git/`, as in the native engine). The sandbox holds
#   it there too; this says so in words the agent reads.
# - the server runs in Heartwood's sandbox, in a network namespace of its own: Heartwood
#   reaches its API through a Unix socket (`server.sock` in the meeting folder,
#   HEARTWOOD_MEETING) this process forwards to its loopback port, and it reaches the model
#   relay at a loopback port (HEARTWOOD_MODEL_PORT) forwarded to the relay's socket
#   (`model.sock` there); its relative default paths
#   (settings, terminal events) resolve in its own working directory (HEARTWOOD_WORKING_DIR);
# - the process is not dumpable: its environment holds the relay's key and OpenHands' session
#   key, and the commands its terminal runs are the same user's, in the same sandbox; a
#   process that is not dumpable keeps `/proc/<pid>/environ` and its memory from them (the
#   shells it starts are dumpable again: the flag is reset when they exec). Those keys are
#   handed over in a file (`secrets.json` in the meeting folder) this process reads and
#   removes first, never in
#   the environment the sandbox starts with, which its first process (bubblewrap's, dumpable)
#   would show to every command; and no program this process starts inherits them (its
#   terminal multiplexer's server did, though OpenHands strips them from the shell's own):
#   a variable holding a secret's value goes, whatever its name;
# - Python runs isolated (`-I`: no current directory, script directory, PYTHON* variables or
#   user site on its path), since its working directory is one the commands it runs can
#   write: a `json.py` planted there ran inside this process, before the secrets were read.
import ctypes, os, runpy, socket, sys, threading, time

libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
libc.prctl(4, 0)  # PR_SET_DUMPABLE, 0

os.chdir(os.environ["HEARTWOOD_WORKING_DIR"])

import json

# The meeting folder may lie deeper than a socket's address can name: its sockets and files
# are named through this process's descriptor of it.
meeting = os.open(os.environ.pop("HEARTWOOD_MEETING"), os.O_RDONLY | os.O_DIRECTORY)


def at_meeting(name):
    return f"/proc/self/fd/{meeting}/{name}"


with open(at_meeting("secrets.json")) as handed:
    secrets = json.load(handed)
os.unlink(at_meeting("secrets.json"))
os.environ.update(secrets)

import subprocess

popen_init = subprocess.Popen.__init__


def popen_without_secrets(self, *args, env=None, **kwargs):
    env = os.environ if env is None else env
    env = {name: value for name, value in env.items() if not holds_secret(name, value)}
    popen_init(self, *args, env=env, **kwargs)


def holds_secret(name, value):
    # By value too: OpenHands copies its session key into variables of its own
    # (OH_SESSION_API_KEYS_0), which its terminal multiplexer's server then carried.
    return name in secrets or any(secret and secret in value for secret in secrets.values())


subprocess.Popen.__init__ = popen_without_secrets


def splice(client, connect):
    try:
        upstream = connect()
    except OSError:
        client.close()
        return

    def one_way(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    back = threading.Thread(target=one_way, args=(upstream, client), daemon=True)
    back.start()
    one_way(client, upstream)
    back.join()
    client.close()
    upstream.close()


def forward(listener, connect):
    def serve():
        while True:
            client, _ = listener.accept()
            threading.Thread(target=splice, args=(client, connect), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def unix_listener(path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    return listener


def unix_connect(path):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    return connection


server_port = int(sys.argv[sys.argv.index("--port") + 1])
forward(
    unix_listener(at_meeting("server.sock")),
    lambda: socket.create_connection(("127.0.0.1", server_port)),
)
model_socket = at_meeting("model.sock")
forward(
    socket.create_server(("127.0.0.1", int(os.environ.pop("HEARTWOOD_MODEL_PORT")))),
    lambda: unix_connect(model_socket),
)

import openhands.sdk.utils.command as command

hidden = [n for n in os.environ.get("HEARTWOOD_TOOL_HIDDEN", "").split(",") if n]
command._SENSITIVE_ENV_VARS = command._SENSITIVE_ENV_VARS | frozenset(
    hidden + ["HEARTWOOD_TOOL_HIDDEN", "HEARTWOOD_SPECIALISTS"]
)

from openhands.tools.terminal.constants import CMD_OUTPUT_PS1_END
from openhands.tools.terminal.terminal import tmux_pane_pool

PROMPT_WITHIN = 60.0


def wait_for_prompt(terminal):
    end = CMD_OUTPUT_PS1_END.rstrip()
    deadline = time.monotonic() + PROMPT_WITHIN
    while time.monotonic() < deadline:
        if terminal.read_screen().rstrip().endswith(end):
            break
        time.sleep(0.05)
    terminal.clear_screen()


create_pane = tmux_pane_pool.TmuxPanePool._create_pane


def create_ready_pane(self):
    terminal = create_pane(self)
    wait_for_prompt(terminal)
    return terminal


tmux_pane_pool.TmuxPanePool._create_pane = create_ready_pane

from openhands.sdk.llm.utils import telemetry

stats_report = []
set_stats_update_callback = telemetry.Telemetry.set_stats_update_callback


def remember_stats_report(self, callback):
    if callback is not None:
        stats_report[:] = [callback]
    set_stats_update_callback(self, callback)


on_response = telemetry.Telemetry.on_response


def on_response_reported(self, *args, **kwargs):
    if self._stats_update_callback is None and stats_report:
        self._stats_update_callback = stats_report[0]
    return on_response(self, *args, **kwargs)


telemetry.Telemetry.set_stats_update_callback = remember_stats_report
telemetry.Telemetry.on_response = on_response_reported

from openhands.sdk.conversation.impl.local_conversation import LocalConversation

switch_llm = LocalConversation.switch_llm


def switch_llm_counted(self, llm):
    switch_llm(self, llm)
    model = self.agent.llm
    counted = self._state.stats.usage_to_metrics.get(model.usage_id)
    if counted is not None and model.metrics is not counted:
        model.restore_metrics(counted)


LocalConversation.switch_llm = switch_llm_counted

import json

from openhands.sdk.context.condenser import NoOpCondenser
from openhands.sdk.conversation.state import ConversationState
from openhands.sdk.subagent import registry as subagents
from openhands.sdk.subagent.schema import AgentDefinition
from openhands.tools.task import impl as task_impl
from openhands.tools.task import manager as task_manager


class SpecialistsOnly(dict):
    """The sub-agent registry, holding Heartwood's specialists; any other is not entered."""

    def __setitem__(self, name, factory):
        pass


specialists = SpecialistsOnly()
for role in json.loads(os.environ.get("HEARTWOOD_SPECIALISTS", "[]")):
    definition = AgentDefinition(
        name=role["role"],
        description=role["description"],
        system_prompt=role["system_prompt"],
        tools=[],
        max_iteration_per_run=role["max_iterations"],
        # Tool-free: nothing it proposes acts on anything (`finish` and `think` only).
        permission_mode="never_confirm",
        condenser=NoOpCondenser(),
        level="programmatic",
    )
    factory = subagents.agent_definition_to_factory(definition)
    dict.__setitem__(
        specialists, role["role"], subagents.AgentFactory(factory, definition)
    )
subagents._agent_factories = specialists

call_task = task_impl.TaskExecutor.__call__


def call_task_counted(self, action, conversation=None):
    self._manager.heartwood_usage_id = None
    if conversation is not None:
        asked = [
            event
            for event in ConversationState.get_unmatched_actions(conversation.state.events)
            if event.tool_name == "task" and event.action == action
        ]
        if asked:
            self._manager.heartwood_usage_id = f"task:{asked[-1].tool_call_id}"
    return call_task(self, action, conversation)


def task_usage_id(manager, task):
    return getattr(manager, "heartwood_usage_id", None) or f"task:{task.id}"


run_task = task_manager.TaskManager._run_task


def run_task_counted(self, task, prompt):
    if task.conversation is not None:
        task.conversation._ensure_agent_ready()
        figures = self.parent_conversation.conversation_stats.usage_to_metrics
        figures[task_usage_id(self, task)] = task.conversation.agent.llm.metrics
    return run_task(self, task, prompt)


def update_parent_metrics(self, parent, task):
    if task.conversation is not None:
        figures = parent.conversation_stats.usage_to_metrics
        figures[task_usage_id(self, task)] = (
            task.conversation.conversation_stats.get_combined_metrics()
        )


task_impl.TaskExecutor.__call__ = call_task_counted
task_manager.TaskManager._run_task = run_task_counted
task_manager.TaskManager._update_parent_metrics = update_parent_metrics

from openhands.tools.file_editor import impl as editor_impl
from openhands.tools.file_editor.definition import FileEditorObservation

edit = editor_impl.FileEditorExecutor.__call__


def edit_inside_project(self, action, conversation=None):
    project = os.path.realpath(self.editor._cwd)
    if os.path.isabs(action.path):
        target = os.path.realpath(action.path)
        inside = os.path.relpath(target, project).split(os.sep)
        if inside[0] == ".." or ".heartwood" in inside or ".git" in inside:
            return FileEditorObservation.from_text(
                text=f"{action.path} is outside the project ({project}) or in its "
                ".heartwood/ or .git/: the file editor works only inside it, so nothing "
                "was done",
                command=action.command,
                is_error=True,
            )
    return edit(self, action, conversation)


editor_impl.FileEditorExecutor.__call__ = edit_inside_project

sys.argv[0] = "openhands.agent_server"
runpy.run_module("openhands.agent_server", run_name="__main__", alter_sys=True)
