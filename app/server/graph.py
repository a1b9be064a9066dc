"""The graph ``langgraph dev`` serves: services from settings, and one writer per thread.

``make_graph`` is what langgraph.json exports. It is compiled without a checkpointer: the
server persists threads itself, through ``app/server/checkpointer.py`` in the project's own
database. The server can only pass JSON as run context, so nodes get their services
(artifact store, agents, run ledger) from settings — the same ``HANDOFF_*`` variables and
``.env`` the CLI reads — through the graph's default context factory; policies travel in
the ``TaskSpec`` input. Whatever the server hands the nodes (contracts or plain dicts), the
node boundary validates it.

How a served run holds its thread is ``app/server/take_over.py``; how ``handoff serve``
starts the server offline, ``app/server/dev_server.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph, StateGraph
from pydantic import ConfigDict, Field

from app.errors import ThreadBusy
from app.server.running_nodes import RUNNING_NODES
from app.server.take_over import release_when_idle, take_over
from app.server.thread_rules import RunRequest, latest_state, refuse_at_start
from app.services import build_context, wiring_for
from app.settings import Settings
from contracts import RunChoices
from graphs import RunContext, StepInfo, build_graph

if TYPE_CHECKING:  # the server extra's; langgraph-api resolves the annotation by name
    from langgraph_sdk.runtime import ServerRuntime

GRAPH_ID = "handoff"
"""The graph's name in langgraph.json: the ``assistant_id`` SDK clients run."""


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
    return build_context(settings, node_running=_counted, wiring=wiring_for(settings))


def _counted(step: StepInfo) -> AbstractContextManager[None]:
    """A served node, counted by its thread while it runs."""
    return RUNNING_NODES.running(step.thread_id)


def served_builder() -> StateGraph[Any, Any, Any, Any]:
    """The workflow as served: services from settings, a JSON-only context schema."""
    builder = build_graph(wiring=wiring_for(Settings()), default_context=server_context)
    builder.context_schema = ServerContext  # type: ignore[assignment]
    return builder


ServedGraph = CompiledStateGraph[Any, Any, Any, Any]


def served_graph() -> ServedGraph:
    """The compiled graph the server runs (it adds its own checkpointer)."""
    return served_builder().compile(name=GRAPH_ID)


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
    forking the checkpoint chain. Holding the lock, a run is checked against the thread's
    latest checkpoint (``app/server/thread_rules.py``: no new task for a thread with
    history, no start from an earlier checkpoint, no run on an ended thread but a revision,
    no decision for a thread that waits for none); a refused run ends in error with the
    reason and changes nothing.
    """
    graph = served_graph()
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
                refuse_at_start(str(thread_id), await latest_state(str(thread_id)), run)
            yield graph
        finally:
            # Shielded: a second cancel cannot make the lock go before the node has stopped.
            release = ExitStack()  # closed last to first: the lock, then the count
            release.enter_context(RUNNING_NODES.releasing(str(thread_id)))
            release.push(held.pop_all())
            await asyncio.shield(asyncio.to_thread(release_when_idle, str(thread_id), release))
