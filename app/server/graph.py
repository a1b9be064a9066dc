"""Serving the workflow with ``langgraph dev``: the exported graph, and how to start it.

``make_graph`` is what langgraph.json exports. It is compiled without a checkpointer: the
server persists threads itself, through ``app/server/checkpointer.py`` in the project's own
database. The server can only pass JSON as run context, so nodes get their services
(artifact store, agents, run ledger) from settings — the same ``HANDOFF_*`` variables and
``.env`` the CLI reads — through the graph's default context factory; policies travel in
the ``TaskSpec`` input. Whatever the server hands the nodes (contracts or plain dicts), the
node boundary validates it.

The rest of the module is what ``handoff serve`` needs to start the server offline.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import socket
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph, StateGraph
from pydantic import ConfigDict, Field

from app.errors import ThreadBusy, ThreadFinished
from app.server.running_nodes import RUNNING_NODES
from app.services import build_context
from app.settings import PROJECT_ROOT, Settings
from app.storage.backends import backend_for, sqlite_path
from app.storage.locks import ThreadLock
from app.storage.postgres import describe_url
from contracts import ErrorCode, RunChoices, RunOutcome
from graphs import RunContext, StepInfo, build_graph
from graphs.errors import ExitCode, HandoffError

if TYPE_CHECKING:  # the server extra's; langgraph-api resolves the annotation by name
    from langgraph_sdk.runtime import ServerRuntime

GRAPH_ID = "handoff"
"""The graph's name in langgraph.json: the ``assistant_id`` SDK clients run."""
DEFAULT_PORT = 2024
STUDIO = "https://smith.langchain.com/studio/?baseUrl={url}"
OFFLINE_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true"}
"""Always set for the dev server: no usage analytics, no version check."""
OFFLINE_DEFAULTS = {"LANGSMITH_TRACING": "false"}
"""Set unless the user already did (tracing to LangSmith is an explicit choice)."""


class ServerContext(RunChoices):
    """What a run's context (a LangGraph Studio assistant's, an SDK client's) may choose.

    The server can only send JSON, so the context carries choices, not services: the
    nodes use services built from settings (``server_context``), with these choices
    applied. The task choices are ``RunChoices`` itself; this adds the models. Every field
    left empty keeps the settings (models) or the task's own value (policies, limits).
    What was chosen is written to the audit (``handoff history``).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    agent_models: dict[str, str] = Field(
        default_factory=dict,
        description='Model per node, e.g. {"writer": "openai:gpt-4.1-mini"}; '
        '"offline" for the built-in agent. Nodes not named keep HANDOFF_AGENT_MODELS.',
    )

    @classmethod
    def _not_choices(cls) -> tuple[str, ...]:
        return ("agent_models",)

    def choices(self) -> RunChoices | None:
        """The task choices made, or None when the run keeps the task's own."""
        chosen = RunChoices.model_validate(self.model_dump(exclude={"agent_models"}))
        return chosen if chosen.describe() else None


def server_context(chosen: Any = None) -> RunContext:
    """The services of a served run: built once per process (and model choice) from settings.

    ``chosen`` is the run's context as the server passes it (a ServerContext, a dict, or
    nothing); its model choices pick the agents, its other choices travel with the run.
    """
    choice = ServerContext.model_validate(chosen or {})
    services = _services(tuple(sorted(choice.agent_models.items())))
    choices = choice.choices()
    return services if choices is None else replace(services, choices=choices)


@cache
def _services(agent_models: tuple[tuple[str, str], ...]) -> RunContext:
    settings = Settings()
    if agent_models:
        settings = settings.with_overrides(
            agent_models={**settings.agent_models, **dict(agent_models)}
        )
    # Every served node counts in the process's registry: the lock waits for it (make_graph).
    return build_context(settings, node_running=_counted)


def _counted(step: StepInfo) -> AbstractContextManager[None]:
    """A served node, counted by its thread while it runs."""
    return RUNNING_NODES.running(step.thread_id)


@cache
def server_lock() -> ThreadLock:
    """The one-writer-per-thread lock the CLI and the Python API take, for this server."""
    settings = Settings()
    url = settings.resolved_database_url()
    return backend_for(url).lock(url, settings)


def served_builder() -> StateGraph[Any, Any, Any, Any]:
    """The workflow as served: services from settings, a JSON-only context schema."""
    builder = build_graph(default_context=server_context)
    builder.context_schema = ServerContext  # type: ignore[assignment]
    return builder


ServedGraph = CompiledStateGraph[Any, Any, Any, Any]


def served_graph() -> ServedGraph:
    """The compiled graph the server runs (it adds its own checkpointer)."""
    return served_builder().compile(name=GRAPH_ID)


DRAIN_SECONDS = 30.0
"""How long a run waits for a node of the same thread, running in this process, whose run has
not yet begun to let go of the thread. Once that run lets go (it was cancelled or
superseded), the new run waits for as long as the node runs: the wait ends when it returns."""
TAKE_OVER_POLL_SECONDS = 0.05
LOCKED_ACCESS = ("threads.create_run", "threads.update")
"""Server uses of the graph that write a thread's checkpoints: they hold its lock."""


@asynccontextmanager
async def make_graph(
    config: RunnableConfig, runtime: ServerRuntime[Any]
) -> AsyncIterator[ServedGraph]:
    """Graph factory named in langgraph.json; nothing is opened until a node runs.

    The server enters this context for each use of the graph and keeps it entered until
    that use ends. A run, and a state update, therefore hold the thread's lock for their
    whole length (a cancelled run until its node has really stopped, see
    ``app/server/running_nodes.py``), the same lock ``handoff resume`` and ``Workflow`` take: one
    that finds the thread held by another process fails at once with "thread … is busy"
    and changes nothing (a state update gets HTTP 409 with that message), instead of
    forking the checkpoint chain. A run on a thread that has already ended is refused too, so a late
    decision is never silently dropped.
    """
    graph = served_graph()
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if runtime.access_context not in LOCKED_ACCESS or not thread_id:
        yield graph
        return
    with ExitStack() as held:
        try:
            held.enter_context(await _take_over(str(thread_id)))
        except ThreadBusy as busy:
            if runtime.access_context == "threads.create_run":
                raise  # the run ends in error with this message
            from starlette.exceptions import HTTPException  # the server's; answered as 409

            raise HTTPException(status_code=409, detail=busy.message) from busy
        try:
            if runtime.access_context == "threads.create_run":
                await refuse_finished(str(thread_id))
            yield graph
        finally:
            # Shielded: a second cancel cannot make the lock go before the node has stopped.
            release = ExitStack()  # closed last to first: the lock, then the count
            release.enter_context(RUNNING_NODES.releasing(str(thread_id)))
            release.push(held.pop_all())
            await asyncio.shield(asyncio.to_thread(_release_when_idle, str(thread_id), release))


async def _take_over(thread_id: str) -> ExitStack:
    """The thread's lock, once a cancelled run of this process has let go of it.

    Such a run keeps the lock while its node finishes (``_release_when_idle``); the run that
    supersedes it waits for that as long as the node runs, since the thread cannot move on
    before. Any other holder means busy at once. The wait is cancellable: a run cancelled
    while it waits never takes the lock afterwards (each attempt is one non-blocking try,
    and a try that won after the cancel gives the lock back).
    """
    deadline = time.monotonic() + DRAIN_SECONDS

    def own_run_holds() -> bool:
        return RUNNING_NODES.will_release(thread_id) or (
            RUNNING_NODES.busy(thread_id) and time.monotonic() < deadline
        )

    while True:
        # Judged before the try as well as after: the holder may let go while the try
        # runs, and the try then failed on a lock that was ours to wait for.
        expected = own_run_holds()
        attempt = asyncio.ensure_future(asyncio.to_thread(_hold_now, thread_id))
        try:
            return await asyncio.shield(attempt)
        except ThreadBusy:
            if not (expected or own_run_holds()):
                raise
        except asyncio.CancelledError:
            with contextlib.suppress(ThreadBusy):
                (await attempt).close()
            raise
        await asyncio.sleep(TAKE_OVER_POLL_SECONDS)


def _hold_now(thread_id: str) -> ExitStack:
    """The lock held in a stack the caller closes, or ThreadBusy at once."""
    held = ExitStack()
    held.enter_context(server_lock().hold(thread_id))
    return held


def _release_when_idle(thread_id: str, held: ExitStack) -> None:
    """Let go of the thread once no node of it runs in this process (a cancelled one too)."""
    RUNNING_NODES.idle(thread_id)
    held.close()


async def refuse_finished(thread_id: str) -> None:
    """Raise ThreadFinished if the thread has recorded its end (a run would change nothing)."""
    from app.server.checkpointer import checkpointer

    async with checkpointer() as saver:
        graph = served_builder().compile(checkpointer=saver)
        snapshot = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    outcome = snapshot.values.get("outcome") if snapshot.values else None
    if snapshot.next or outcome is None:
        return
    finished = RunOutcome.model_validate(outcome)
    raise ThreadFinished(
        f"thread {thread_id!r} is complete ({finished.state.value}, result "
        f"{finished.result_status}); nothing to run, nothing was changed",
        finished,
    )


class ServeError(HandoffError, ValueError):
    """The dev server cannot be started as asked (missing extra, config or port)."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class DevServer:
    """How ``handoff serve`` starts ``langgraph dev``: command, folder and environment."""

    config: Path
    host: str
    port: int
    argv: list[str]
    env: dict[str, str]

    @property
    def cwd(self) -> Path:
        """``langgraph dev`` resolves the paths in langgraph.json (and .env) from here."""
        return self.config.parent

    @property
    def url(self) -> str:
        """Where the API listens."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def studio_url(self) -> str:
        """The LangGraph Studio page that connects to this server."""
        return STUDIO.format(url=self.url)


def find_config(explicit: Path | None = None, cwd: Path | None = None) -> Path:
    """The langgraph.json to serve: the given one, else ./langgraph.json, else the project's."""
    if explicit is not None:
        if not explicit.is_file():
            raise ServeError(f"no such config file: {explicit}")
        return explicit.resolve()
    for folder in (cwd or Path.cwd(), PROJECT_ROOT):
        candidate = folder / "langgraph.json"
        if candidate.is_file():
            return candidate.resolve()
    raise ServeError(
        "no langgraph.json here or in the project; run from the project folder or pass --config"
    )


def port_is_free(host: str, port: int) -> bool:
    """Whether ``port`` can be bound on ``host`` right now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free on ``host``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def dev_server_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: the caller's, with analytics and version checks off."""
    env = {**OFFLINE_DEFAULTS, **environ, **OFFLINE_ENV}
    return env


def plan_dev_server(
    *,
    config: Path | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    jobs: int = 4,
    reload: bool = False,
    environ: Mapping[str, str] | None = None,
) -> DevServer:
    """Check what ``handoff serve`` needs and build the ``langgraph dev`` command line.

    Without ``port``, 2024 is used if free, else any free port (``langgraph dev`` would
    switch ports by itself and the printed Studio link would be wrong). An explicit port
    that is taken is an error.
    """
    for module in ("langgraph_cli", "langgraph_api"):
        if importlib.util.find_spec(module) is None:
            raise ServeError(
                f"the dev server needs {module.replace('_', '-')}: install the 'server' "
                "extra, e.g. pip install -e '.[server]'"
            )
    if jobs < 1:
        raise ServeError(f"--jobs must be at least 1, got {jobs}")
    path = find_config(config)
    if port is None:
        port = DEFAULT_PORT if port_is_free(host, DEFAULT_PORT) else free_port(host)
    elif not port_is_free(host, port):
        raise ServeError(f"port {port} on {host} is in use; choose another with --port")
    argv = [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--config",
        str(path),
        "--host",
        host,
        "--port",
        str(port),
        "--n-jobs-per-worker",
        str(jobs),
        "--no-browser",
    ]
    if not reload:
        argv.append("--no-reload")
    env = dev_server_env(os.environ if environ is None else environ)
    return DevServer(config=path, host=host, port=port, argv=argv, env=env)


def dotenv_overrides(server: DevServer) -> list[str]:
    """``HANDOFF_*`` variables whose .env value the server uses over the environment's.

    ``langgraph dev`` loads .env over the environment; the CLI does the opposite. A
    variable set differently in both places makes the two disagree on where data lives.
    """
    env_file = server.cwd / ".env"
    if not env_file.is_file():
        return []
    from dotenv import dotenv_values

    return sorted(
        name
        for name, value in dotenv_values(env_file).items()
        if name.startswith("HANDOFF_")
        and name in server.env
        and value is not None
        and value != server.env[name]
    )


def exec_dev_server(server: DevServer) -> NoReturn:
    """Replace this process with the server, so its pid, signals and exit are the server's."""
    os.chdir(server.cwd)
    os.execve(server.argv[0], server.argv, server.env)


def banner(server: DevServer, settings: Settings) -> list[str]:
    """What ``handoff serve`` prints before the server starts: where to connect, where data goes."""
    url = settings.resolved_database_url()
    where = str(sqlite_path(url).resolve()) if url.startswith("sqlite:") else describe_url(url)
    return [
        f"serving graph {GRAPH_ID!r} from {server.config} with langgraph dev",
        f"  API:       {server.url}  (docs: {server.url}/docs)",
        f"  Studio:    {server.studio_url}",
        f"  threads:   {where}  (`handoff status <thread-id>` reads them)",
        f"  artifacts: {settings.resolved_artifact_dir().resolve()}",
        "stop with Ctrl-C",
    ]
