"""LangGraph's long-term store (``runtime.store``), kept where the checkpoints are.

A node that remembers across threads (a user's preferences, what earlier runs learned) uses
LangGraph's ``BaseStore`` as any LangGraph node does: ``runtime.store.put(namespace, key,
value)``. The Workflow compiles its graph with the store of its database URL, so the one
setting that moves the checkpoints moves it too:

* ``memory://``: LangGraph's ``InMemoryStore``, gone with the process;
* ``sqlite:///…``: LangGraph's ``SqliteStore`` in the same file, its tables made on first use;
* ``postgresql://…``: LangGraph's ``PostgresStore`` on the backend's connection pool, its
  tables made on first use.

With an encryption key, each value is sealed as the ledger's payloads are
(``app.storage.encryption``): a sealed value cannot be filtered or indexed by its content,
so such a store is read by namespace and key. The dev server brings its own store, as it
brings its own checkpointer.

A put is keyed, so a node killed after it and run again puts the same value again; a node
whose finished attempt is reused by its input hash does not run, and what it put stays.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, Item, Op, PutOp, Result
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from app.storage.encryption import KeyRing, open_value, seal_value


def sqlite_store(path: Path, timeout: float) -> tuple[SqliteStore, sqlite3.Connection]:
    """LangGraph's store in the SQLite file at ``path``, and the connection to close."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=timeout)
    return SqliteStore(conn), conn


class PostgresStoreOnFirstUse(PostgresStore):
    """LangGraph's ``PostgresStore``, its tables made by its first operation, not at open.

    ``PostgresStore`` asks to be set up before use; a Workflow that never remembers
    anything then adds no table to the database.
    """

    def __init__(self, pool: Any) -> None:
        super().__init__(pool)
        self._ready = False
        self._setting_up = threading.Lock()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """The operations, after the one-time setup (guarded: threads share the store)."""
        if not self._ready:
            with self._setting_up:
                if not self._ready:
                    self.setup()
                    self._ready = True
        return super().batch(ops)


class SealedStore(BaseStore):
    """A store whose values are sealed under the database's keys before they are written."""

    def __init__(self, inner: BaseStore, keys: KeyRing) -> None:
        self.inner = inner
        self.keys = keys

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """The operations on the inner store, each put sealed, each item read opened."""
        return [self._opened(result) for result in self.inner.batch(self._sealed(ops))]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """As ``batch``, for async callers."""
        return [self._opened(result) for result in await self.inner.abatch(self._sealed(ops))]

    def _sealed(self, ops: Iterable[Op]) -> list[Op]:
        """Each put's value sealed; it cannot be indexed by content once sealed."""
        return [
            op._replace(value=seal_value(self.keys, op.value), index=False)
            if isinstance(op, PutOp) and op.value is not None
            else op
            for op in ops
        ]

    def _opened(self, result: Result) -> Result:
        items = result if isinstance(result, list) else [result]
        for item in items:
            if isinstance(item, Item):
                item.value = open_value(self.keys, item.value)
        return result
