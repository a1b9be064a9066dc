"""The storage a Workflow runs on, opened from settings: saver, audit, artifacts, lock.

One URL decides the backend. ``sqlite:///…`` (one machine): checkpoints and audit in the
file, artifacts in a folder, thread locks with ``flock``. ``postgresql://…`` (any number of
machines): checkpoints, audit and artifacts in one schema, sharing one connection pool,
thread locks as advisory locks. ``memory://``: everything in this process.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from langgraph.checkpoint.base import BaseCheckpointSaver

from app.artifacts import FilesystemArtifactStore, PostgresArtifactStore
from app.artifacts.postgres import POSTGRES_SCHEMA as ARTIFACT_SCHEMA
from app.checkpointing import (
    SingleWriterSaver,
    UnsupportedDatabaseUrl,
    open_checkpointer,
    setup_postgres_saver,
    sqlite_path,
)
from app.errors import DatabaseUnavailable
from app.ledger import POSTGRES_SCHEMA as LEDGER_SCHEMA
from app.ledger import PostgresRunLedger, RunLedgerBackend, SqliteRunLedger, ledger_for_url
from app.locks import FileThreadLock, MemoryThreadLock, PostgresThreadLock, ThreadLock
from app.postgres import (
    describe_url,
    execute_script,
    is_outage,
    is_postgres_url,
    open_pool,
    schema_lock,
)
from app.serde import contract_serializer
from app.settings import Settings

ArtifactStoreBackend = FilesystemArtifactStore | PostgresArtifactStore


@dataclass
class Backend:
    """Everything a Workflow stores through, open until its ``open_backend`` block ends."""

    url: str
    saver: SingleWriterSaver
    ledger: RunLedgerBackend
    store: ArtifactStoreBackend
    lock: ThreadLock
    pool: Any | None = None
    """The PostgreSQL connection pool the saver, audit and artifacts share."""

    @property
    def where(self) -> str:
        """The database, for messages (password hidden)."""
        return describe_url(self.url)

    @contextlib.contextmanager
    def writing(self, thread_id: str) -> Iterator[None]:
        """Hold the thread's lock for the block, and turn a lost database into a clear error.

        A lost connection ends the run with :class:`DatabaseUnavailable`. If this process
        still holds the lock, the attempt that was cut short is recorded as failed right
        away; otherwise the next resume records it (it marks attempts left running).
        """
        try:
            with self.lock.hold(thread_id):
                try:
                    yield
                except Exception as error:
                    if not is_outage(error):
                        raise
                    unavailable = self._unavailable(error, thread_id)
                    if self.lock.holding(thread_id):
                        with contextlib.suppress(Exception):
                            self.ledger.abandon_running(
                                thread_id, f"attempt did not finish: {unavailable.message}"
                            )
                    raise unavailable from error
        except Exception as error:
            if is_outage(error):  # the lock itself could not be taken or released
                raise self._unavailable(error, thread_id) from error
            raise

    def _unavailable(self, error: BaseException, thread_id: str) -> DatabaseUnavailable:
        detail = " ".join(str(error).split())
        reason = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
        return DatabaseUnavailable(
            f"database unavailable at {self.where} during thread {thread_id!r} ({reason}); "
            "the run stopped and the thread keeps its last saved step. "
            f"Resume it with `handoff resume {thread_id}` once the database is reachable"
        )


def artifact_store_for(settings: Settings, pool: Any | None = None) -> ArtifactStoreBackend:
    """The artifact store the settings name; a database store shares ``pool`` if given."""
    if settings.resolved_artifact_store() == "filesystem":
        return FilesystemArtifactStore(settings.resolved_artifact_dir())
    url = settings.resolved_database_url()
    if not is_postgres_url(url):
        raise UnsupportedDatabaseUrl(
            f"HANDOFF_ARTIFACT_STORE=database needs a postgresql:// database URL, not "
            f"{describe_url(url)!r}; use 'filesystem' (or 'auto') for SQLite and memory://"
        )
    if pool is not None:
        return PostgresArtifactStore(pool=pool, timeout=settings.database_timeout)
    return PostgresArtifactStore(url, timeout=settings.database_timeout)


def _setup_postgres(pool: Any, *, artifacts: bool) -> BaseCheckpointSaver[str]:
    saver = setup_postgres_saver(pool)
    with pool.connection() as conn, schema_lock(conn):
        execute_script(conn, LEDGER_SCHEMA)
        if artifacts:
            execute_script(conn, ARTIFACT_SCHEMA)
    return saver


@contextlib.contextmanager
def open_backend(settings: Settings) -> Iterator[Backend]:
    """Open (creating any missing table) the backend the settings name; close it on exit."""
    url = settings.resolved_database_url()
    scheme = urlparse(url).scheme
    with contextlib.ExitStack() as stack:
        lock: ThreadLock
        pool: Any | None = None
        if is_postgres_url(url):
            try:
                pool = stack.enter_context(open_pool(url, settings.database_timeout))
                artifacts = settings.resolved_artifact_store() == "database"
                inner = _setup_postgres(pool, artifacts=artifacts)
            except Exception as error:
                if not is_outage(error):
                    raise
                reason = " ".join(str(error).split()) or type(error).__name__
                raise DatabaseUnavailable(
                    f"database unavailable at {describe_url(url)}: {reason}"
                ) from error
            ledger: RunLedgerBackend = PostgresRunLedger(pool=pool)
            store = artifact_store_for(settings, pool)
            lock = PostgresThreadLock(
                url, timeout=settings.database_timeout, serde=contract_serializer()
            )
        elif scheme in ("sqlite", "memory"):
            store = artifact_store_for(settings)
            inner = stack.enter_context(open_checkpointer(url))
            ledger = ledger_for_url(url)
            stack.callback(ledger.close)
            if scheme == "sqlite":
                lock = FileThreadLock.beside(sqlite_path(url))
            else:
                lock = MemoryThreadLock()
        else:
            raise UnsupportedDatabaseUrl(
                f"unsupported database URL scheme {scheme!r} in {url!r}; expected "
                "sqlite:///path, postgresql://... or memory://"
            )
        stack.callback(lock.close)
        yield Backend(
            url=url,
            saver=SingleWriterSaver(inner, lock.writer),
            ledger=ledger,
            store=store,
            lock=lock,
            pool=pool,
        )


def init_database(settings: Settings) -> list[str]:
    """Create every table the settings need (idempotent); returns what now exists."""
    with open_backend(settings) as backend:
        if backend.pool is not None:
            with backend.pool.connection() as conn:
                rows = conn.execute(
                    "SELECT current_schema() AS schema, table_name FROM "
                    "information_schema.tables WHERE table_schema = current_schema() "
                    "ORDER BY table_name"
                ).fetchall()
            found = [f"table {row['schema']}.{row['table_name']}" for row in rows]
        elif isinstance(backend.ledger, SqliteRunLedger):
            backend.ledger.setup()
            path = backend.ledger.path
            with contextlib.closing(sqlite3.connect(str(path))) as conn:
                names = conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                ).fetchall()
            found = [f"table {name} in {path}" for (name,) in names]
        else:
            found = ["memory:// keeps nothing between processes"]
        if isinstance(backend.store, FilesystemArtifactStore):
            found.append(f"artifacts in the folder {backend.store.root}")
        return found
