"""``memory://``: everything in this process, gone when it exits (tests, quick trials)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from app.settings import Settings
from app.storage.backends.base import Backend, StorageBackend
from app.storage.encryption import KeyRing
from app.storage.ledger import RunLedgerBackend
from app.storage.ledger.memory import MemoryRunLedger
from app.storage.locks import MemoryThreadLock, ThreadLock
from app.storage.postgres import DEFAULT_TIMEOUT
from app.storage.serde import contract_serializer


class MemoryBackend(StorageBackend):
    """Saver, ledger and lock in this process; artifacts in a folder, or in memory too."""

    example = "memory://"
    outlives_process = False

    def checkpointer(
        self, url: str, *, timeout: float = DEFAULT_TIMEOUT, keys: KeyRing | None = None
    ) -> AbstractContextManager[BaseCheckpointSaver[str]]:
        """A fresh in-memory saver; there is nothing to close."""
        return nullcontext(InMemorySaver(serde=contract_serializer(keys)))

    @asynccontextmanager
    async def async_checkpointer(
        self, url: str, *, keys: KeyRing | None = None
    ) -> AsyncIterator[BaseCheckpointSaver[Any]]:
        """A fresh in-memory saver (it serves async callers as well)."""
        yield InMemorySaver(serde=contract_serializer(keys))

    def ledger(
        self, url: str, pool: Any | None = None, *, read_only: bool = False
    ) -> RunLedgerBackend:
        """A ledger kept for the life of the process."""
        return MemoryRunLedger()

    def lock(self, url: str, settings: Settings) -> ThreadLock:
        """A per-process set: such a database is not shared between processes."""
        return MemoryThreadLock()

    def tables(self, backend: Backend) -> list[str]:
        """Nothing persists."""
        return ["memory:// keeps nothing between processes"]
