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

from app.checkpointing import UnsupportedDatabaseUrl, open_checkpointer, sqlite_path
from app.postgres import DEFAULT_TIMEOUT, connection_kwargs, is_postgres_url
from app.serde import contract_serializer
from app.settings import Settings


def _prepare(url: str) -> None:
    """Create the database and its tables, exactly as the CLI would."""
    with open_checkpointer(url):
        pass


@asynccontextmanager
async def open_async_checkpointer(url: str) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """An async saver on the database at ``url``, with the contract serializer."""
    scheme = urlparse(url).scheme
    serde = contract_serializer()
    if scheme == "memory":
        yield InMemorySaver(serde=serde)
        return
    if scheme != "sqlite" and not is_postgres_url(url):
        raise UnsupportedDatabaseUrl(
            f"unsupported database URL scheme {scheme!r} in {url!r}; expected "
            "sqlite:///path, postgresql://... or memory://"
        )
    await asyncio.to_thread(_prepare, url)
    if scheme == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with aiosqlite.connect(str(sqlite_path(url)), timeout=30) as conn:
            yield AsyncSqliteSaver(conn, serde=serde)
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg_pool import AsyncConnectionPool

    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url,
        kwargs=connection_kwargs(DEFAULT_TIMEOUT),  # the options of every project connection
        min_size=1,
        max_size=4,
        timeout=DEFAULT_TIMEOUT,
        check=AsyncConnectionPool.check_connection,
        open=False,
    )
    await pool.open(wait=True, timeout=DEFAULT_TIMEOUT)
    try:
        yield AsyncPostgresSaver(pool, serde=serde)
    finally:
        await pool.close()


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
    async with open_async_checkpointer(url) as saver:
        yield saver
