"""The graph ``langgraph dev`` serves: services from settings, and one writer per thread.

``make_graph`` is what langgraph.json exports. It is compiled without a checkpointer: the
server persists threads itself, through ``app/server/checkpointer.py`` in the project's own
database. The server can only pass JSON as run context, so nodes get their services
(artifact store, agents, run ledger) from settings — the same ``HANDOFF_*`` variables and
``.env`` the CLI reads — through the graph's default context factory; policies travel in
the ``TaskSpec`` input. Whatever the server hands the nodes (contracts or plain dicts), the
node boundary validates it.

Every graph langgraph.json declares is served by this module (``app.project_graphs``): the
main one as ``make_graph``, another as the factory named by its id (``summarise`` below
``"./app/server/graph.py:summarise"``), made by the module's ``__getattr__``.

How a served run holds its thread is ``app/server/take_over.py``; how ``handoff serve``
starts the server offline, ``app/server/dev_server.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph, StateGraph
from pydantic import ConfigDict, Field

from app.errors import ThreadBusy
from app.project_graphs import MAIN_GRAPH, project_graph, project_graphs
from app.server.running_nodes import RUNNING_NODES
from app.server.take_over import release_when_idle, take_over
from app.server.thread_rules import RunRequest, latest_state, refuse_at_start
from app.services import build_context, wiring_for
from app.settings import Settings
from contracts import RunChoices
from graphs import RunContext, StepInfo, Wiring, build_graph

if TYPE_CHECKING:  # the server extra's; langgraph-api resolves the annotation by name
    from langgraph_sdk.runtime import ServerRuntime

GRAPH_ID = MAIN_GRAPH
"""The main graph's name in langgraph.json: the ``assistant_id`` SDK clients run."""


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


def server_context(chosen: Any = None, graph_id: str = GRAPH_ID) -> RunContext:
    """The services of a served run: built once per process (and model choice) from settings.

    ``chosen`` is the run's context as the server passes it (a ServerContext, a dict, or
    nothing); its model choices pick the agents, its other choices travel with the run.
    ``graph_id`` is the graph served (its nodes get the agents).
    """
    choice = ServerContext.model_validate(chosen or {})
    services = _services(tuple(sorted(choice.agent_models.items())), graph_id)
    choices = choice.choices()
    return services if choices is None else replace(services, choices=choices)


def _served_wiring(settings: Settings, graph_id: str) -> Wiring:
    return wiring_for(settings, project_graph(settings.graphs_config, graph_id).wiring())


@cache
def _services(agent_models: tuple[tuple[str, str], ...], graph_id: str = GRAPH_ID) -> RunContext:
    settings = Settings()
    if agent_models:
        settings = settings.with_overrides(
            agent_models={**settings.agent_models, **dict(agent_models)}
        )
    # Every served node counts in the process's registry: the lock waits for it (make_graph).
    wiring = _served_wiring(settings, graph_id)
    return build_context(settings, node_running=_counted, wiring=wiring)


def _counted(step: StepInfo) -> AbstractContextManager[None]:
    """A served node, counted by its thread while it runs."""
    return RUNNING_NODES.running(step.thread_id)


def served_builder(graph_id: str = GRAPH_ID) -> StateGraph[Any, Any, Any, Any]:
    """The graph as served: services from settings, a JSON-only context schema."""

    def context(chosen: Any = None) -> RunContext:
        return server_context(chosen, graph_id)

    wiring = _served_wiring(Settings(), graph_id)
    builder = build_graph(wiring=wiring, default_context=context)
    builder.context_schema = ServerContext  # type: ignore[assignment]
    return builder


ServedGraph = CompiledStateGraph[Any, Any, Any, Any]


def served_graph(graph_id: str = GRAPH_ID) -> ServedGraph:
    """The compiled graph the server runs (it adds its own checkpointer)."""
    return served_builder(graph_id).compile(name=graph_id)


LOCKED_ACCESS = ("threads.create_run", "threads.update")
"""Server uses of the graph that write a thread's checkpoints: they hold its lock."""


Factory = Callable[["RunnableConfig", "ServerRuntime[Any]"], Any]


def factory_of(graph_id: str) -> Factory:
    """The server's factory of one of langgraph.json's graphs (see ``make_graph``)."""

    @asynccontextmanager
    async def make(
        config: RunnableConfig, runtime: ServerRuntime[Any]
    ) -> AsyncIterator[ServedGraph]:
        async with _served(graph_id, config, runtime) as graph:
            yield graph

    make.__name__ = make.__qualname__ = graph_id
    return make


@cache
def _factory(graph_id: str) -> Factory:
    return factory_of(graph_id)


def __getattr__(name: str) -> Factory:
    """A graph's factory by its id, as langgraph.json names it (``./app/server/graph.py:ID``)."""
    if name != GRAPH_ID and name in project_graphs(Settings().graphs_config):
        return _factory(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@asynccontextmanager
async def make_graph(
    config: RunnableConfig, runtime: ServerRuntime[Any]
) -> AsyncIterator[ServedGraph]:
    """The main graph's factory named in langgraph.json; nothing is opened until a node runs.

    The server enters this context for each use of the graph and keeps it entered until
    that use ends. A run, and a state update, therefore hold the thread's lock for their
    whole length (a cancelled run until its node has really stopped, see
    ``app/server/running_nodes.py``), the same lock ``handoff resume`` and ``Workflow`` take: one
    that finds the thread held by another process fails at once with "thread … is busy"
    and changes nothing (a state update gets HTTP 409 with that message), instead of
    forking the checkpoint chain. Holding the lock, a run is checked against the thread's
    latest checkpoint (``app/server/thread_rules.py``: no new task for a thread with
    history, no start from an earlier checkpoint, no run on an ended thread but a revision,
    no decision for a thread that waits for none); a refused run ends in error with the
    reason and changes nothing. Another graph's factory (``factory_of``) does the same.
    """
    async with _served(GRAPH_ID, config, runtime) as graph:
        yield graph


@asynccontextmanager
async def _served(
    graph_id: str, config: RunnableConfig, runtime: ServerRuntime[Any]
) -> AsyncIterator[ServedGraph]:
    graph = served_graph(graph_id)
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if runtime.access_context not in LOCKED_ACCESS or not thread_id:
        yield graph
        return
    with ExitStack() as held:
        try:
            held.enter_context(await take_over(str(thread_id)))
        except ThreadBusy as busy:
            if runtime.access_context == "threads.create_run":
                raise  # the run ends in error with this message
            from starlette.exceptions import HTTPException  # the server's; answered as 409

            raise HTTPException(status_code=409, detail=busy.message) from busy
        try:
            if runtime.access_context == "threads.create_run":
                run = RunRequest.of(config)
                latest = await latest_state(str(thread_id), graph_id)
                refuse_at_start(str(thread_id), latest, run)
            yield graph
        finally:
            # Shielded: a second cancel cannot make the lock go before the node has stopped.
            release = ExitStack()  # closed last to first: the lock, then the count
            release.enter_context(RUNNING_NODES.releasing(str(thread_id)))
            release.push(held.pop_all())
            await asyncio.shield(asyncio.to_thread(release_when_idle, str(thread_id), release))
