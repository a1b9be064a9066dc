"""``postgresql://…``: any number of machines; everything in one schema, one pool per process.

Checkpoints, audit and artifacts share the pool; a thread's lock is an advisory lock on a
connection of its own, which also carries the held thread's checkpoint writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from app.errors import DatabaseUnavailable
from app.settings import Settings
from app.storage.artifacts import PostgresArtifactStore
from app.storage.artifacts.postgres import POSTGRES_SCHEMA as ARTIFACT_SCHEMA
from app.storage.backends.base import ArtifactStoreBackend, Backend, StorageBackend
from app.storage.encryption import KEY_TABLE, KeyRing, key_ring
from app.storage.langgraph_store import PostgresStoreOnFirstUse
from app.storage.ledger import RunLedgerBackend
from app.storage.ledger.postgres import POSTGRES_SCHEMA as LEDGER_SCHEMA
from app.storage.ledger.postgres import PostgresRunLedger
from app.storage.locks import PostgresThreadLock, ThreadLock
from app.storage.postgres import (
    DEFAULT_TIMEOUT,
    connect,
    connection_kwargs,
    describe_url,
    is_outage,
    open_pool,
    redact,
    schema_lock,
)
from app.storage.postgres_tables import execute_script
from app.storage.serde import contract_serializer
from graphs.errors import HandoffError

KEY_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {KEY_TABLE} (
    key_id TEXT PRIMARY KEY,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""


def setup_postgres_saver(pool: Any, keys: KeyRing | None = None) -> BaseCheckpointSaver[str]:
    """A PostgresSaver over ``pool`` with its tables created (idempotent, race-free).

    ``setup()`` runs LangGraph's migrations; two processes running them at once on a fresh
    schema would collide, so they run under a per-schema advisory lock.
    """
    from langgraph.checkpoint.postgres import PostgresSaver

    serde = contract_serializer(keys)
    with pool.connection() as conn, schema_lock(conn):
        PostgresSaver(conn, serde=serde).setup()
    return PostgresSaver(pool, serde=serde)


class PostgresBackend(StorageBackend):
    """One schema holds checkpoints, audit and (by default) artifacts; advisory locks."""

    example = "postgresql://user@host/db"
    hosts_artifacts = True

    @contextmanager
    def checkpointer(
        self, url: str, *, timeout: float = DEFAULT_TIMEOUT, keys: KeyRing | None = None
    ) -> Iterator[BaseCheckpointSaver[str]]:
        """A PostgresSaver on a pool of its own, closed on exit."""
        with open_pool(url, timeout) as pool:
            yield setup_postgres_saver(pool, keys)

    @asynccontextmanager
    async def async_checkpointer(
        self, url: str, *, keys: KeyRing | None = None
    ) -> AsyncIterator[BaseCheckpointSaver[Any]]:
        """An AsyncPostgresSaver on an async pool with every project connection option."""
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg_pool import AsyncConnectionPool

        await self._prepare(url)
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url,
            kwargs=connection_kwargs(DEFAULT_TIMEOUT),
            min_size=1,
            max_size=4,
            timeout=DEFAULT_TIMEOUT,
            check=AsyncConnectionPool.check_connection,
            open=False,
        )
        await pool.open(wait=True, timeout=DEFAULT_TIMEOUT)
        try:
            yield AsyncPostgresSaver(pool, serde=contract_serializer(keys))
        finally:
            await pool.close()

    def ledger(
        self, url: str, pool: Any | None = None, *, read_only: bool = False
    ) -> RunLedgerBackend:
        """The ledger table, on the shared pool or (without one) on a pool of its own."""
        return PostgresRunLedger(pool=pool) if pool is not None else PostgresRunLedger(url)

    def lock(self, url: str, settings: Settings) -> ThreadLock:
        """Advisory locks on dedicated connections."""
        return PostgresThreadLock(
            url, timeout=settings.database_timeout, serde=contract_serializer(key_ring(settings))
        )

    def database_artifact_store(
        self, settings: Settings, pool: Any | None = None
    ) -> ArtifactStoreBackend:
        """Artifacts in the same schema, on the shared pool when there is one."""
        if pool is not None:
            return PostgresArtifactStore(pool=pool, timeout=settings.database_timeout)
        return PostgresArtifactStore(
            settings.resolved_database_url(), timeout=settings.database_timeout
        )

    def recorded_keys(self, settings: Settings) -> frozenset[str]:
        """The key ids in the schema, read on a connection of its own; none in a new schema.

        A server that cannot be reached is an outage, as it is for the saver; any other
        failure is left to the saver, which names what is wrong.
        """
        url = settings.resolved_database_url()
        try:
            with connect(url, settings.database_timeout) as conn:
                found = conn.execute("SELECT to_regclass(%s) AS name", (KEY_TABLE,)).fetchone()
                if found is None or found["name"] is None:
                    return frozenset()
                rows = conn.execute(f"SELECT key_id FROM {KEY_TABLE}").fetchall()
        except HandoffError:
            raise
        except Exception as error:
            if is_outage(error):
                raise unavailable(url, error) from error
            return frozenset()
        return frozenset(str(row["key_id"]) for row in rows)

    def record_key(self, settings: Settings, pool: Any | None, keys: KeyRing) -> None:
        """Add the current key's id to the schema's table (created on first use)."""
        assert pool is not None
        with pool.connection() as conn:
            known = conn.execute("SELECT to_regclass(%s) AS name", (KEY_TABLE,)).fetchone()
            if known is not None and known["name"] is not None:
                row = conn.execute(
                    f"SELECT 1 FROM {KEY_TABLE} WHERE key_id = %s", (keys.current_id,)
                ).fetchone()
                if row is not None:
                    return
            with schema_lock(conn):
                execute_script(conn, KEY_SCHEMA)
            conn.execute(
                f"INSERT INTO {KEY_TABLE} (key_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (keys.current_id,),
            )

    def _storage(
        self,
        settings: Settings,
        stack: contextlib.ExitStack,
        *,
        read_only: bool = False,
        keys: KeyRing | None = None,
    ) -> tuple[BaseCheckpointSaver[str], Any | None]:
        """One pool for the backend's life, every table created through it."""
        url = settings.resolved_database_url()
        try:
            pool = stack.enter_context(open_pool(url, settings.database_timeout))
            saver = setup_postgres_saver(pool, keys)
            with pool.connection() as conn, schema_lock(conn):
                execute_script(conn, LEDGER_SCHEMA)
                if settings.resolved_artifact_store() == "database":
                    execute_script(conn, ARTIFACT_SCHEMA)
        except Exception as error:
            if not is_outage(error):
                raise
            raise unavailable(url, error) from error
        return saver, pool

    def langgraph_store(
        self, settings: Settings, stack: contextlib.ExitStack, pool: Any | None
    ) -> BaseStore:
        """LangGraph's ``PostgresStore`` on the backend's pool, its tables made on first use."""
        return PostgresStoreOnFirstUse(pool)

    def tables(self, backend: Backend) -> list[str]:
        """The tables in the URL's schema."""
        assert backend.pool is not None
        with backend.pool.connection() as conn:
            rows = conn.execute(
                "SELECT current_schema() AS schema, table_name FROM "
                "information_schema.tables WHERE table_schema = current_schema() "
                "ORDER BY table_name"
            ).fetchall()
        return [f"table {row['schema']}.{row['table_name']}" for row in rows]


def unavailable(url: str, error: BaseException) -> DatabaseUnavailable:
    """The project's error for a server that cannot be reached, its password masked."""
    reason = redact(" ".join(str(error).split()), url) or type(error).__name__
    return DatabaseUnavailable(f"database unavailable at {describe_url(url)}: {reason}")
