"""The storage a Workflow runs on, opened from settings: saver, audit, artifacts, lock.

One URL decides the backend, through one registry keyed by its scheme:

* ``sqlite:///…`` (one machine): checkpoints and audit in the file, artifacts in a folder,
  thread locks with ``flock``;
* ``postgresql://…`` (any number of machines): checkpoints, audit and artifacts in one
  schema, sharing one connection pool, thread locks as advisory locks;
* ``memory://``: everything in this process.

Supporting another database is one :class:`~app.storage.backends.base.StorageBackend` subclass
and one entry in :data:`BACKENDS`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

from langgraph.checkpoint.base import BaseCheckpointSaver

from app.settings import Settings
from app.storage.artifacts.folder_blobs import FolderBlobs
from app.storage.backends.base import (
    ArtifactStoreBackend,
    Backend,
    StorageBackend,
    UnsupportedDatabaseUrl,
    check_kept_with,
)
from app.storage.backends.memory import MemoryBackend
from app.storage.backends.postgres import PostgresBackend
from app.storage.backends.sqlite import SqliteBackend, sqlite_path
from app.storage.encryption import KeyRing
from app.storage.ledger import RunLedgerBackend
from app.storage.ledger.base import SqlRunLedger
from app.storage.postgres import DEFAULT_TIMEOUT, describe_url
from graphs.errors import HandoffError

__all__ = [
    "BACKENDS",
    "ArtifactStoreBackend",
    "Backend",
    "StorageBackend",
    "UnsupportedDatabaseUrl",
    "artifact_store_for",
    "backend_for",
    "init_database",
    "ledger_for_url",
    "open_backend",
    "open_checkpointer",
    "sqlite_path",
    "storage_errors",
]

BACKENDS: dict[str, StorageBackend] = {
    "memory": MemoryBackend(),
    "sqlite": SqliteBackend(),
    "postgresql": PostgresBackend(),
    "postgres": PostgresBackend(),
}
"""Every database URL scheme the project can open, and the backend that opens it."""


def backend_for(url: str) -> StorageBackend:
    """The backend registered for the URL's scheme; an unknown scheme names the known ones."""
    scheme = urlparse(url).scheme
    backend = BACKENDS.get(scheme)
    if backend is None:
        known = ", ".join(f"{name} ({kind.example})" for name, kind in sorted(BACKENDS.items()))
        raise UnsupportedDatabaseUrl(
            f"HANDOFF_DATABASE_URL: unsupported database URL scheme {scheme!r} in "
            f"{describe_url(url)!r}; supported schemes: {known}"
        )
    return backend


def open_checkpointer(
    url: str, *, timeout: float = DEFAULT_TIMEOUT, keys: KeyRing | None = None
) -> contextlib.AbstractContextManager[BaseCheckpointSaver[str]]:
    """Open (and set up, idempotently) the bare saver for ``url``; close it on exit.

    ``keys``: checkpoints are sealed under them (``app.storage.encryption``).
    """
    return backend_for(url).checkpointer(url, timeout=timeout, keys=keys)


def ledger_for_url(url: str, keys: KeyRing | None = None) -> RunLedgerBackend:
    """The ledger that lives beside the checkpoints at ``url``; opens nothing yet.

    ``keys``: its payloads are sealed under them (``app.storage.encryption``).
    """
    ledger = backend_for(url).ledger(url)
    if isinstance(ledger, SqlRunLedger):
        ledger.keys = keys
    return ledger


def artifact_store_for(settings: Settings, pool: Any | None = None) -> ArtifactStoreBackend:
    """The artifact store the settings name; a database store shares ``pool`` if given."""
    return backend_for(settings.resolved_database_url()).artifact_store(settings, pool)


@contextlib.contextmanager
def storage_errors(settings: Settings) -> Iterator[None]:
    """Turn a storage failure (damaged database, full disk) into the project's error.

    Such failures surface as the database driver's or the OS's exceptions wherever a read
    or write happens (setup, a node's audit record, a checkpoint); the backend of the
    settings' URL says which of them are storage failures and names the file.
    """
    try:
        yield
    except HandoffError:
        raise
    except Exception as error:
        failure = backend_for(settings.resolved_database_url()).failure(error, settings)
        if failure is None:
            raise
        raise failure from error


@contextlib.contextmanager
def open_backend(settings: Settings, *, read_only: bool = False) -> Iterator[Backend]:
    """Open (creating any missing table) the backend the settings name; close it on exit.

    ``read_only``: for inspection only; nothing is set up or written where the backend can
    avoid it (see :meth:`StorageBackend.open`).
    """
    kind = backend_for(settings.resolved_database_url())
    with contextlib.ExitStack() as stack:
        backend = kind.open(settings, stack, read_only=read_only)
        check_kept_with(kind.outlives_process, backend.where, backend.ledger, backend.store)
        yield backend


def init_database(settings: Settings) -> list[str]:
    """Create every table the settings need (idempotent); returns what now exists."""
    kind = backend_for(settings.resolved_database_url())
    with storage_errors(settings), open_backend(settings) as backend:
        found = kind.tables(backend)
        if isinstance(backend.store, FolderBlobs):
            found.append(f"artifacts in the folder {backend.store.root}")
        return found
