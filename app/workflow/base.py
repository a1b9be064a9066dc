"""The Workflow's storage and services: opened once, closed with it, handed to every run."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from app.services import build_context
from app.settings import Settings
from app.storage.backends import Backend, open_backend
from app.storage.ledger import RunLedgerBackend
from app.storage.thread_reads import GlanceSaver
from app.workflow.access import storage
from app.workflow.guard import WriteGuard
from contracts import (
    TaskSpec,
)
from graphs import WIRING, RunContext, Wiring, build_graph
from graphs.pauses import Pause
from graphs.wiring import pauses_of

T = TypeVar("T")


class OpenWorkflow:
    """The settings, wiring and open storage every part of the Workflow reads through."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        database_url: str | None = None,
        artifact_dir: Path | None = None,
        context: RunContext | None = None,
        wiring: Wiring = WIRING,
        read_only: bool = False,
        guard: WriteGuard | None = None,
    ) -> None:
        base = settings or Settings()
        overrides: dict[str, Any] = {}
        if database_url is not None:
            overrides["database_url"] = database_url
        if artifact_dir is not None:
            overrides["artifact_dir"] = artifact_dir
        self.settings = base.with_overrides(**overrides) if overrides else base
        self.wiring = wiring
        self.pauses: dict[str, Pause] = pauses_of(wiring)
        """The wiring's pauses by kind: what a waiting thread's decision is checked against."""
        self.read_only = read_only
        self.guard = guard
        """Asked before a thread is run, resumed or cancelled (``app.workflow.guard``)."""
        self._context = context
        self._own_context = context is None
        self._stack: ExitStack | None = None
        self._backend: Backend | None = None
        self._graph: CompiledStateGraph[Any, Any, Any, Any] | None = None
        self._glance: tuple[GlanceSaver, CompiledStateGraph[Any, Any, Any, Any]] | None = None

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @storage
    def open(self) -> None:
        """Open the checkpointer and compile the graph with it."""
        if self._stack is not None:
            return
        stack = ExitStack()
        try:
            self._backend = stack.enter_context(
                open_backend(self.settings, read_only=self.read_only)
            )
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        self._graph = build_graph(wiring=self.wiring).compile(checkpointer=self._backend.saver)

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
    def graph(self) -> CompiledStateGraph[Any, Any, Any, Any]:
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
    def context(self) -> RunContext:
        """The run-scoped services passed to every invoke (and every resume)."""
        if self._context is None:
            self._context = build_context(
                self.settings, self.ledger, store=self.backend.store, wiring=self.wiring
            )
        return self._context

    @property
    def ledger(self) -> RunLedgerBackend:
        """The audit log beside this workflow's checkpoints."""
        return self.backend.ledger

    @staticmethod
    def config(thread_id: str) -> RunnableConfig:
        """The LangGraph config addressing one thread."""
        return {"configurable": {"thread_id": thread_id}}

    def task(self, objective: str, **fields: Any) -> TaskSpec:
        """A TaskSpec for an objective, with a fresh task id unless one is given."""
        fields.setdefault("task_id", f"task-{uuid.uuid4().hex[:12]}")
        return TaskSpec.model_validate({"objective": objective, **fields})
