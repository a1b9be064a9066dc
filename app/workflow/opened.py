"""A Workflow's open storage: the checkpointer, the graph compiled with it, the run context.

Opened on first use (or by ``with Workflow(...)``), closed with the Workflow; every
service of the Workflow reads and runs through the one instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from app.errors import WrongGraph
from app.project_graphs import MAIN_GRAPH
from app.services import build_context
from app.settings import Settings
from app.storage.backends import Backend, backend_for, open_backend, storage_errors
from app.storage.backends.base import check_kept_with
from app.storage.ledger import RunLedgerBackend
from app.storage.postgres import describe_url
from app.storage.thread_reads import GlanceSaver
from graphs import RunContext, Wiring, build_graph, workflow_channels
from graphs.pauses import Pause
from graphs.wiring import pauses_of

T = TypeVar("T")
Graph = CompiledStateGraph[Any, Any, Any, Any]

GLANCED_CHANNELS: tuple[str, ...] = ("task", "outcome", "draft", "review", "freshness")
"""The channels ``status`` and ``threads`` print from; every other state channel (the
research bundle, the handoff envelope: both grow with the corpus) is left undecoded."""


def thread_config(thread_id: str) -> RunnableConfig:
    """The LangGraph config addressing one thread."""
    return {"configurable": {"thread_id": thread_id}}


GRAPH_KEY = "graph_id"
"""The checkpoint metadata naming the graph a thread runs, as the dev server records it."""


def graph_of(metadata: Mapping[str, Any] | None) -> str:
    """The graph a checkpoint's metadata records; the main graph where it records none."""
    recorded = (metadata or {}).get(GRAPH_KEY)
    return recorded if isinstance(recorded, str) and recorded else MAIN_GRAPH


class Opened:
    """The graph of ``wiring`` compiled with the storage of ``settings``, and its context.

    ``context`` is the caller's run context, used as given and never dropped; without one,
    the context is built over the open storage, and dropped with it on close.
    """

    def __init__(
        self,
        settings: Settings,
        wiring: Wiring,
        *,
        context: RunContext | None = None,
        read_only: bool = False,
        graph_id: str = MAIN_GRAPH,
    ) -> None:
        self.settings = settings
        self.wiring = wiring
        self.graph_id = graph_id
        """The id of the graph of ``wiring`` (langgraph.json's), recorded by every run."""
        self.pauses: dict[str, Pause] = pauses_of(wiring)
        """The wiring's pauses by kind: what a waiting thread's decision is checked against."""
        self.read_only = read_only
        self._context = context
        self._own_context = context is None
        self._kept_checked = False
        self._stack: ExitStack | None = None
        self._backend: Backend | None = None
        self._graph: Graph | None = None
        self._glance: tuple[GlanceSaver, Graph] | None = None

    def open(self) -> None:
        """Open the checkpointer and compile the graph with it and LangGraph's store."""
        if self._stack is not None:
            return
        stack = ExitStack()
        with storage_errors(self.settings):
            try:
                self._backend = stack.enter_context(
                    open_backend(self.settings, read_only=self.read_only)
                )
            except BaseException:
                stack.close()
                raise
            self._stack = stack
            self._graph = build_graph(wiring=self.wiring).compile(
                checkpointer=self._backend.saver, store=self._backend.langgraph_store
            )

    def close(self) -> None:
        """Release the checkpointer's connections."""
        if self._stack is not None:
            self._stack.close()
        self._stack = None
        self._backend = None
        self._graph = None
        self._glance = None
        if self._own_context:
            self._context = None  # its store may use the connections just closed

    def _opened(self, part: Callable[[], T | None]) -> T:
        """A part of the open storage; the storage is opened first if it is not yet."""
        if part() is None:
            self.open()
        opened = part()
        assert opened is not None
        return opened

    @property
    def graph(self) -> Graph:
        """The compiled graph (with this workflow's checkpointer)."""
        return self._opened(lambda: self._graph)

    @property
    def backend(self) -> Backend:
        """The open storage: saver, audit, artifact store and thread lock."""
        return self._opened(lambda: self._backend)

    @property
    def saver(self) -> BaseCheckpointSaver[str]:
        """The open checkpointer."""
        return self.backend.saver

    @property
    def ledger(self) -> RunLedgerBackend:
        """The audit log beside this workflow's checkpoints."""
        return self.backend.ledger

    @property
    def context(self) -> RunContext:
        """The run-scoped services passed to every invoke (and every resume)."""
        if self._context is None:
            self._context = build_context(
                self.settings, self.ledger, store=self.backend.store, wiring=self.wiring
            )
        elif not self._kept_checked:  # the caller's services: kept as long as the threads?
            kind = backend_for(self.settings.resolved_database_url())
            check_kept_with(
                kind.outlives_process, self.where(), self._context.ledger, self._context.store
            )
            self._kept_checked = True
        return self._context

    @property
    def glance(self) -> tuple[GlanceSaver, Graph]:
        """The reader of small channels (GLANCED_CHANNELS), and the graph compiled with it."""
        if self._glance is None:
            skipped = set(workflow_channels(self.wiring)) - set(GLANCED_CHANNELS)
            reader = GlanceSaver(self.saver, skipped)
            self._glance = reader, build_graph(wiring=self.wiring).compile(checkpointer=reader)
        return self._glance

    def config(self, thread_id: str) -> RunnableConfig:
        """The config a run of this graph writes a thread with: its checkpoints name the graph."""
        return {**thread_config(thread_id), "metadata": {GRAPH_KEY: self.graph_id}}

    def check_graph(self, thread_id: str, metadata: Mapping[str, Any] | None) -> None:
        """Refuse a thread another graph made: this graph's nodes would misread its state."""
        recorded = graph_of(metadata)
        if recorded != self.graph_id:
            raise WrongGraph(
                f"thread {thread_id!r} belongs to graph {recorded!r}, not {self.graph_id!r}: "
                f"open it with that graph (`--graph {recorded}`, Workflow(graph="
                f"{recorded!r})); nothing was changed"
            )

    def where(self) -> str:
        """The database, as error messages name it."""
        return describe_url(self.settings.resolved_database_url())
