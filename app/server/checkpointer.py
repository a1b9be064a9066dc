"""The checkpointer ``langgraph dev`` uses: the project's own database, from settings.

langgraph.json names :func:`checkpointer` (``"checkpointer": {"path": …}``), so threads the
server runs are checkpointed where the CLI and the Python API look for them:
``handoff status <thread-id>`` (and ``history``, ``show``, ``resume``) work on a thread
started through the server. The server enters the context manager once per event loop it
runs; each entry opens its own connection.

The database URL comes from the same settings as everywhere else (``HANDOFF_DATABASE_URL``,
else ``sqlite:///<HANDOFF_DATA_DIR>/handoff.db``). Tables are created by the project's
synchronous factory first (idempotent, and serialised across processes on PostgreSQL).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from typing import Any
from urllib.parse import urlparse

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from app.settings import Settings
from app.storage.backends import backend_for
from app.storage.encryption import KeyRing
from app.storage.serde import contract_serializer


@asynccontextmanager
async def open_async_checkpointer(
    url: str, keys: KeyRing | None = None
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """An async saver on the database at ``url`` (tables created as the CLI would).

    ``keys``: checkpoints are sealed under them (``app.storage.encryption``).
    """
    async with backend_for(url).async_checkpointer(url, keys=keys) as saver:
        yield saver


@cache
def _process_memory() -> InMemorySaver:
    return InMemorySaver(serde=contract_serializer())


@asynccontextmanager
async def checkpointer() -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The factory named in langgraph.json: the saver for the configured database.

    ``memory://`` gives one saver per server process (not per event loop), so every part
    of the server sees the same threads; they end with the process.
    """
    settings = await asyncio.to_thread(Settings)  # reads .env: no blocking I/O on the loop
    url = settings.resolved_database_url()
    if urlparse(url).scheme == "memory":
        yield _process_memory()
        return
    # The database's recorded keys checked as the CLI checks them (a wrong key: refused).
    keys = await asyncio.to_thread(backend_for(url).check_keys, settings)
    async with open_async_checkpointer(url, keys) as saver:
        yield saver
