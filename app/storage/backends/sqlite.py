"""``sqlite:///…``: one machine; checkpoints and audit in one file, threads locked by flock."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from app.settings import Settings
from app.storage import sqlite_files
from app.storage.artifacts import SqliteArtifactStore
from app.storage.backends.base import (
    ArtifactStoreBackend,
    Backend,
    StorageBackend,
    UnsupportedDatabaseUrl,
)
from app.storage.backends.sqlite_saver import BlobSqliteSaver
from app.storage.backends.sqlite_saver_sql import READ_TABLES
from app.storage.encryption import KEY_TABLE, KeyRing
from app.storage.langgraph_store import sqlite_store
from app.storage.ledger import RunLedgerBackend
from app.storage.ledger.sqlite import SqliteRunLedger
from app.storage.locks import FileThreadLock, ThreadLock
from app.storage.postgres import DEFAULT_TIMEOUT
from app.storage.serde import contract_serializer
from graphs.errors import HandoffError


def sqlite_path(url: str) -> Path:
    """The file behind a ``sqlite:///relative`` or ``sqlite:////absolute`` URL."""
    path = url.removeprefix("sqlite:///")
    if not path or path == url:
        raise UnsupportedDatabaseUrl(
            f"HANDOFF_DATABASE_URL: invalid SQLite URL {url!r}; expected "
            "sqlite:///relative/path.db or sqlite:////absolute/path.db"
        )
    return Path(path)


class SqliteBackend(StorageBackend):
    """Checkpoints, audit and artifact histories in the file, blobs in a folder, ``flock``."""

    example = "sqlite:///path/to/handoff.db"

    def checkpointer(
        self, url: str, *, timeout: float = DEFAULT_TIMEOUT, keys: KeyRing | None = None
    ) -> contextlib.AbstractContextManager[BaseCheckpointSaver[str]]:
        """A BlobSqliteSaver on its own connection, creating the file and tables if needed."""
        return self._saver(sqlite_path(url), keys=keys)

    @contextmanager
    def _saver(
        self,
        path: Path,
        *,
        read_only: bool = False,
        artifact_dir: Path | None = None,
        keys: KeyRing | None = None,
    ) -> Iterator[BaseCheckpointSaver[str]]:
        """The saver on a checked connection; read-only ones skip setup (it would write).

        A file saved before ``checkpoint_blobs`` existed still opens read-only: its threads
        are read without it (see app.storage.backends.sqlite_saver).
        """
        conn = sqlite_files.connect(
            path, read_only=read_only, needs=READ_TABLES, artifact_dir=artifact_dir
        )
        try:
            saver = BlobSqliteSaver(conn, serde=contract_serializer(keys))
            if isinstance(conn, sqlite_files.ReadOnlyConnection):
                saver.is_setup = True  # connect() found the tables
            else:
                saver.setup()
            yield saver
        finally:
            conn.close()

    def langgraph_store(
        self, settings: Settings, stack: contextlib.ExitStack, pool: Any | None
    ) -> BaseStore:
        """LangGraph's ``SqliteStore`` in the checkpoints' file, its tables made on first use."""
        store, conn = sqlite_store(
            sqlite_path(settings.resolved_database_url()), settings.database_timeout
        )
        stack.callback(conn.close)
        return store

    def _storage(
        self,
        settings: Settings,
        stack: contextlib.ExitStack,
        *,
        read_only: bool = False,
        keys: KeyRing | None = None,
    ) -> tuple[BaseCheckpointSaver[str], Any | None]:
        """The saver, its file checked against the artifact folder too (see sqlite_files)."""
        path = sqlite_path(settings.resolved_database_url())
        saver = self._saver(
            path, read_only=read_only, artifact_dir=settings.resolved_artifact_dir(), keys=keys
        )
        return stack.enter_context(saver), None

    def recorded_keys(self, settings: Settings) -> frozenset[str]:
        """The key ids in the file, read on a read-only connection; none in a new file.

        A file no process has open (no write-ahead log beside it) is read as immutable, so
        not even the log's files are created; one in use is read through its log. A file
        that cannot be read is left to the saver, which names what is wrong with it.
        """
        path = sqlite_path(settings.resolved_database_url())
        if not path.is_file():
            return frozenset()
        # Damage is named as the saver would name it, before SQLite opens (or tidies) it.
        sqlite_files.check_file(path, settings.resolved_artifact_dir())
        if path.stat().st_size == 0:
            return frozenset()
        in_use = Path(f"{path}-wal").exists()
        mode = "mode=ro" if in_use else "mode=ro&immutable=1"
        try:
            with contextlib.closing(
                sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True)
            ) as conn:
                if not conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (KEY_TABLE,)
                ).fetchone():
                    return frozenset()
                rows = conn.execute(f"SELECT key_id FROM {KEY_TABLE}").fetchall()
        except sqlite3.Error:
            return frozenset()
        return frozenset(str(row[0]) for row in rows)

    def record_key(self, settings: Settings, pool: Any | None, keys: KeyRing) -> None:
        """Add the current key's id to the file's table (created on first use)."""
        if keys.current_id in self.recorded_keys(settings):
            return
        path = sqlite_path(settings.resolved_database_url())
        with contextlib.closing(sqlite3.connect(str(path), timeout=30)) as conn, conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {KEY_TABLE} (key_id TEXT PRIMARY KEY, "
                "recorded_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
            conn.execute(
                f"INSERT OR IGNORE INTO {KEY_TABLE} (key_id) VALUES (?)", (keys.current_id,)
            )

    def failure(self, error: BaseException, settings: Settings) -> HandoffError | None:
        """A damaged or full database file, or a full disk."""
        path = sqlite_path(settings.resolved_database_url())
        return sqlite_files.failure(error, path) or super().failure(error, settings)

    @asynccontextmanager
    async def async_checkpointer(
        self, url: str, *, keys: KeyRing | None = None
    ) -> AsyncIterator[BaseCheckpointSaver[Any]]:
        """An AsyncBlobSqliteSaver on the same file: the layout the sync saver writes."""
        import aiosqlite

        from app.storage.backends.sqlite_saver_aio import AsyncBlobSqliteSaver

        await self._prepare(url)
        async with aiosqlite.connect(str(sqlite_path(url)), timeout=30) as conn:
            yield AsyncBlobSqliteSaver(conn, serde=contract_serializer(keys))

    def ledger(
        self, url: str, pool: Any | None = None, *, read_only: bool = False
    ) -> RunLedgerBackend:
        """A table in the same file."""
        return SqliteRunLedger(sqlite_path(url), read_only=read_only)

    def folder_artifact_store(
        self, settings: Settings, *, read_only: bool = False
    ) -> ArtifactStoreBackend:
        """Blobs in the artifact folder, histories in the file (app.storage.artifacts.sqlite)."""
        return SqliteArtifactStore(
            settings.resolved_artifact_dir(),
            sqlite_path(settings.resolved_database_url()),
            read_only=read_only,
        )

    def lock(self, url: str, settings: Settings) -> ThreadLock:
        """``flock`` files beside the database: ``<file>-locks/<thread>.lock``."""
        return FileThreadLock.beside(sqlite_path(url))

    def tables(self, backend: Backend) -> list[str]:
        """The tables in the file (the ledger's is created first, as it is lazily)."""
        assert isinstance(backend.ledger, SqliteRunLedger)
        backend.ledger.setup()
        if isinstance(backend.store, SqliteArtifactStore):
            backend.store.setup()
        path = backend.ledger.path
        with contextlib.closing(sqlite3.connect(str(path))) as conn:
            names = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            ).fetchall()
        return [f"table {name} in {path}" for (name,) in names]
