"""What a storage backend is: one object per URL scheme that opens every store together.

A Workflow stores through four things (checkpoint saver, audit ledger, artifact store,
thread lock) that must agree on where they live. A :class:`StorageBackend` opens all four
for one URL scheme; the registry in ``app.storage.backends`` maps each scheme to one of them, so
supporting another database is one new class and one registry entry.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from app.errors import DatabaseUnavailable
from app.settings import Settings
from app.storage.artifacts import (
    FilesystemArtifactStore,
    MemoryArtifactStore,
    PostgresArtifactStore,
    SqliteArtifactStore,
)
from app.storage.checkpointing import SingleWriterSaver
from app.storage.encryption import KeyRing, check_keys, key_ring
from app.storage.langgraph_store import SealedStore
from app.storage.ledger import RunLedgerBackend
from app.storage.ledger.base import SqlRunLedger
from app.storage.locks import ThreadLock
from app.storage.postgres import DEFAULT_TIMEOUT, describe_url, is_outage, redact
from app.storage.sqlite_files import NO_SPACE, full
from graphs.errors import HandoffError, UsageError

ArtifactStoreBackend = (
    FilesystemArtifactStore | MemoryArtifactStore | PostgresArtifactStore | SqliteArtifactStore
)


class UnsupportedDatabaseUrl(UsageError):
    """A database URL with a scheme this project cannot open, or a store it cannot host.

    The settings must change, so it is a usage error (exit code 2), refused before
    anything is opened.
    """


def check_kept_with(outlives_process: bool, where: str, ledger: object, store: object) -> None:
    """Refuse an audit or artifact store kept in this process beside lasting checkpoints.

    A thread saved there would, once the process ends, name artifacts that are gone, or
    have no audit: no reuse of finished work after a crash, and no reviewer attempt for
    finalize to prove an approval from. Whatever supplies them (the settings, a swapped
    backend, a caller's RunContext), they are refused before anything runs.
    """
    if not outlives_process:
        return
    lost = [
        f"the {role} ({type(part).__name__})"
        for role, part in (("run ledger", ledger), ("artifact store", store))
        if not getattr(part, "outlives_process", True)
    ]
    if lost:
        raise UnsupportedDatabaseUrl(
            f"{' and '.join(lost)} {'keeps' if len(lost) == 1 else 'keep'} nothing once the "
            f"process ends, but the checkpoints at {where!r} outlive it: a thread resumed "
            "after a restart would find its audit (reuse, the approval finalize proves) or its "
            "artifacts gone; give it one that persists beside them, or use "
            "HANDOFF_DATABASE_URL=memory:// with it"
        )


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
    langgraph_store: BaseStore | None = None
    """LangGraph's long-term store (``runtime.store``), beside the checkpoints; None when
    opened read-only (``app.storage.langgraph_store``)."""

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
        detail = redact(" ".join(str(error).split()), self.url)
        reason = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
        return DatabaseUnavailable(
            f"database unavailable at {self.where} during thread {thread_id!r} ({reason}); "
            "the run stopped and the thread keeps its last saved step. "
            f"Resume it with `handoff resume {thread_id}` once the database is reachable"
        )


class StorageBackend(ABC):
    """One kind of database: how its saver, ledger, artifact store and lock are opened."""

    example: ClassVar[str]
    """A URL of this kind, for messages that list what is supported."""

    @abstractmethod
    def checkpointer(
        self, url: str, *, timeout: float = DEFAULT_TIMEOUT, keys: KeyRing | None = None
    ) -> contextlib.AbstractContextManager[BaseCheckpointSaver[str]]:
        """The bare saver with its tables created (idempotently), closed on exit.

        ``keys``: checkpoints are sealed under them (``app.storage.encryption``).
        """

    @abstractmethod
    def async_checkpointer(
        self, url: str, *, keys: KeyRing | None = None
    ) -> contextlib.AbstractAsyncContextManager[BaseCheckpointSaver[Any]]:
        """An async saver for the dev server, its tables created by the sync saver first."""

    def recorded_keys(self, settings: Settings) -> frozenset[str]:
        """The ids of the keys the database was written under, read without writing.

        A database that outlives no process records none.
        """
        return frozenset()

    def record_key(self, settings: Settings, pool: Any | None, keys: KeyRing) -> None:
        """Record that the database is written under the current key (idempotent).

        A database that outlives no process has nothing to record.
        """
        return None

    def check_keys(self, settings: Settings) -> KeyRing | None:
        """The settings' keys, refused (exit 2) unless they open what the database holds."""
        keys = key_ring(settings)
        check_keys(
            self.recorded_keys(settings),
            keys,
            f"the database at {describe_url(settings.resolved_database_url())}",
        )
        return keys

    @abstractmethod
    def ledger(
        self, url: str, pool: Any | None = None, *, read_only: bool = False
    ) -> RunLedgerBackend:
        """The audit ledger beside the checkpoints; opens nothing until first use.

        ``read_only``: the caller only reads, so nothing need be set up or written.
        """

    @abstractmethod
    def lock(self, url: str, settings: Settings) -> ThreadLock:
        """The per-thread single-writer lock every process using ``url`` respects."""

    @abstractmethod
    def tables(self, backend: Backend) -> list[str]:
        """What now exists in the database, for ``handoff db init`` to report."""

    hosts_artifacts: ClassVar[bool] = False
    """Whether the database can hold the artifacts too (``HANDOFF_ARTIFACT_STORE=database``)."""

    outlives_process: ClassVar[bool] = True
    """Whether checkpoints stay after the process ends; only then may artifacts not."""

    def check(self, settings: Settings) -> None:
        """Refuse settings this backend cannot serve, before anything is opened or created.

        A memory artifact store is refused beside checkpoints that outlive the process: a
        thread saved there would name artifacts gone with the process, so a later resume,
        revision or read would fail on every one of them.
        """
        store = settings.resolved_artifact_store()
        where = describe_url(settings.resolved_database_url())
        if store == "database" and not self.hosts_artifacts:
            raise UnsupportedDatabaseUrl(
                f"HANDOFF_ARTIFACT_STORE=database needs a postgresql:// database URL, not "
                f"{where!r}; use 'filesystem' (or 'auto') for SQLite and memory://"
            )
        if store == "memory" and self.outlives_process:
            raise UnsupportedDatabaseUrl(
                f"HANDOFF_ARTIFACT_STORE=memory loses every artifact when the process ends, "
                f"but the checkpoints at {where!r} outlive it; use HANDOFF_DATABASE_URL="
                "memory:// with it, or 'auto' for a store that persists"
            )

    def database_artifact_store(
        self, settings: Settings, pool: Any | None = None
    ) -> ArtifactStoreBackend:
        """Artifacts kept in the database itself; a backend that ``hosts_artifacts`` says how."""
        raise NotImplementedError(f"{type(self).__name__} does not host artifacts")

    def artifact_store(
        self, settings: Settings, pool: Any | None = None, *, read_only: bool = False
    ) -> ArtifactStoreBackend:
        """The artifact store the settings name; a database store shares ``pool`` if given.

        ``read_only``: the caller only reads, so a store that can avoids setting anything up.
        """
        self.check(settings)
        store = settings.resolved_artifact_store()
        if store == "memory":
            return MemoryArtifactStore()
        if store == "filesystem":
            chosen = self.folder_artifact_store(settings, read_only=read_only)
        else:
            chosen = self.database_artifact_store(settings, pool)
        if not isinstance(chosen, MemoryArtifactStore):
            chosen.keys = key_ring(settings)
        return chosen

    def folder_artifact_store(
        self, settings: Settings, *, read_only: bool = False
    ) -> ArtifactStoreBackend:
        """Blobs in the artifact folder; the histories too, unless the backend keeps them."""
        return FilesystemArtifactStore(settings.resolved_artifact_dir())

    def langgraph_store(
        self, settings: Settings, stack: contextlib.ExitStack, pool: Any | None
    ) -> BaseStore:
        """LangGraph's long-term store where the checkpoints are; ``stack`` closes it.

        Here: in this process, as the checkpoints of ``memory://`` are.
        """
        return InMemoryStore()

    def failure(self, error: BaseException, settings: Settings) -> HandoffError | None:
        """The project's error for a storage failure under these settings, else None.

        Here: a disk (or quota) that is full. A backend adds what its database reports.
        """
        if isinstance(error, OSError) and error.errno in NO_SPACE:
            where = error.filename or settings.data_dir
            return full(where, error.strerror or "no space left on device")
        return None

    def _storage(
        self,
        settings: Settings,
        stack: contextlib.ExitStack,
        *,
        read_only: bool = False,
        keys: KeyRing | None = None,
    ) -> tuple[BaseCheckpointSaver[str], Any | None]:
        """The bare saver, open for the stack's life, and a pool the other parts share."""
        url = settings.resolved_database_url()
        saver = self.checkpointer(url, timeout=settings.database_timeout, keys=keys)
        return stack.enter_context(saver), None

    def open(
        self, settings: Settings, stack: contextlib.ExitStack, *, read_only: bool = False
    ) -> Backend:
        """Open every part (creating missing tables); ``stack`` closes them.

        ``read_only``: the caller only inspects threads, so a backend that can opens its
        database without setting anything up (an SQLite file then needs no free space).
        """
        self.check(settings)
        keys = self.check_keys(settings)
        url = settings.resolved_database_url()
        inner, pool = self._storage(settings, stack, read_only=read_only, keys=keys)
        if keys is not None and not read_only:
            self.record_key(settings, pool, keys)
        ledger = self.ledger(url, pool, read_only=read_only)
        if isinstance(ledger, SqlRunLedger):
            ledger.keys = keys
        stack.callback(ledger.close)
        store = self.artifact_store(settings, pool, read_only=read_only)
        stack.callback(store.close)
        lock = self.lock(url, settings)
        stack.callback(lock.close)
        kept = None if read_only else self.langgraph_store(settings, stack, pool)
        return Backend(
            url=url,
            saver=SingleWriterSaver(inner, lock.writer),
            ledger=ledger,
            store=store,
            lock=lock,
            pool=pool,
            langgraph_store=SealedStore(kept, keys) if kept and keys else kept,
        )

    async def _prepare(self, url: str) -> None:
        """Create the database and its tables exactly as the CLI would, off the event loop."""

        def prepare() -> None:
            with self.checkpointer(url):
                pass

        await asyncio.to_thread(prepare)
