"""Artifacts for an SQLite database: blobs in the artifact folder, histories in the file.

The blobs are the filesystem store's (``blobs/<sha[:2]>/<sha>``, written once, fsynced
with their directory before anything names them). The revision histories live in the
SQLite file that holds the thread's checkpoints and audit, one row per revision::

    handoff_artifact_revisions  (artifact_id, revision) -> the ArtifactRef recorded for it

Why in the file: a history kept as a JSON file per artifact cost a new file, an fsync and
a rename per put, and every file the store created was journaled again by the next SQLite
commit. A row costs one commit in the write-ahead log the checkpoints already use.

Inside :meth:`SqliteArtifactStore.batch` (one node's puts) those commits skip their own
fsync, and the block's end adds none either: the rows become durable with the next
fsynced commit of the log, and the first thing that records their refs is one (the
node's finish row is not, but the checkpoint LangGraph commits right after the node is;
see ``app.storage.ledger.sqlite``). That is as durable as an fsync per put because the log
is one file written in commit order and SQLite recovers a valid prefix of it: a commit
that survives a power loss brings every earlier one with it. A killed process loses
nothing at all (the OS holds what it wrote). So no surviving record ever names a row that
was lost, and no row survives the blob it names, which is fsynced before the row is
committed.
:meth:`~SqliteArtifactStore.sync` (and :meth:`~SqliteArtifactStore.close`) fsync the log
on demand.

Blobs are shared by content, so one is deleted (:meth:`~SqliteArtifactStore.sweep`, after
retention forgot a thread's histories) only inside a write transaction that finds no row
naming it; a put checks for its blob inside its own write transaction and writes it again
if a sweep took it, so no committed row names a deleted blob.

A store that kept its histories as ``refs/<id>.json`` files (before this layout) has them
imported the first time it is used; the folder is then renamed ``refs.imported``.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Collection, Iterator
from pathlib import Path

from app.storage import sqlite_files
from app.storage.artifacts import files
from app.storage.artifacts.base import ArtifactStoreBase
from app.storage.artifacts.batching import BatchedSyncs
from app.storage.artifacts.folder_blobs import FolderBlobs
from app.storage.artifacts.legacy_refs import (
    LEGACY_REFS,
    legacy_histories,
    retire_legacy_refs,
    unrecorded,
)
from app.storage.artifacts.records import (
    candidate,
    check_entry,
    check_id,
    next_revision,
    parse_entry,
)
from app.storage.file_digests import DIGESTS, FileDigests
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import InvalidArtifactId

TABLE = "handoff_artifact_revisions"
CHANGES = "handoff_artifact_changes"
SQLITE_SCHEMA = (
    f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    artifact_id TEXT NOT NULL,
    revision INTEGER NOT NULL CHECK (revision >= 1),
    sha256 TEXT NOT NULL,
    ref TEXT NOT NULL,
    PRIMARY KEY (artifact_id, revision)
) WITHOUT ROWID
""",
    f"CREATE TABLE IF NOT EXISTS {CHANGES} "
    "(id INTEGER PRIMARY KEY CHECK (id = 1), changes INTEGER NOT NULL)",
    f"INSERT OR IGNORE INTO {CHANGES} (id, changes) VALUES (1, 0)",
    *(
        f"CREATE TRIGGER IF NOT EXISTS {TABLE}_{event.lower()} AFTER {event} ON {TABLE} "
        f"BEGIN UPDATE {CHANGES} SET changes = changes + 1 WHERE id = 1; END"
        for event in ("INSERT", "UPDATE", "DELETE")
    ),
)
"""The histories, and a count of their changes that triggers keep for every connection."""
STAMP_QUERY = f"SELECT changes FROM {CHANGES} WHERE id = 1"
MAX_CACHED_HISTORIES = 4096
"""Parsed histories kept between reads; the cache starts over beyond that."""


class SqliteArtifactStore(FolderBlobs, BatchedSyncs, ArtifactStoreBase[sqlite3.Connection]):
    """Revisioned, hash-verified artifacts: blobs in ``root``, histories in the database.

    One connection serves every thread of the process (behind a mutex); a put takes the
    next revision inside ``BEGIN IMMEDIATE``, which excludes every other writer of the
    file, so puts from any number of processes get revisions 1, 2, 3 … with no gap and
    no duplicate. Nothing is opened until first use. A put is durable when it returns;
    inside :meth:`batch` its commit is made durable by the next fsynced commit of the log
    (see the module docstring).
    ``read_only`` stores (for inspection) open a file that has the table without setting
    anything up, so reading needs no free space (see ``app.storage.sqlite_files``).
    """

    sync_at_end = False

    def __init__(
        self,
        root: Path,
        database: Path,
        *,
        read_only: bool = False,
        digests: FileDigests = DIGESTS,
    ) -> None:
        FolderBlobs.__init__(self, root, digests)
        BatchedSyncs.__init__(self)
        self._database = Path(database)
        self._read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._mutex = threading.RLock()
        self._synchronous = ""
        self._unsynced = False
        self._histories: dict[str, list[ArtifactRef]] = {}
        self._stamp: int | None = None
        self._stamp_query = STAMP_QUERY

    @property
    def database(self) -> Path:
        """The SQLite file that holds the histories."""
        return self._database

    # -- the connection ------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """The connection, with the table made and any legacy histories imported."""
        if self._conn is None:
            conn = sqlite_files.connect(
                self._database,
                read_only=self._read_only,
                needs=(TABLE,),
                artifact_dir=self.root,
                isolation_level=None,
            )
            if isinstance(conn, sqlite_files.ReadOnlyConnection):
                # For reading only: it has the table, set nothing up (the count of
                # changes may be missing in an older file; any commit drops the cache).
                self._stamp_query = "PRAGMA data_version"
                self._conn = conn
                return conn
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("BEGIN IMMEDIATE")
                for statement in SQLITE_SCHEMA:
                    conn.execute(statement)
                conn.execute("COMMIT")
                self._stamp_query = STAMP_QUERY
                self._conn = conn
                self._import_legacy_histories()
            except BaseException:
                self._conn = None
                conn.close()
                raise
        return self._conn

    @contextlib.contextmanager
    def _session(self) -> Iterator[sqlite3.Connection]:
        with self._mutex:
            yield self._connection()

    @contextlib.contextmanager
    def _transaction(self, *, durable: bool) -> Iterator[sqlite3.Connection]:
        """One write transaction; ``durable``: its commit fsyncs the log itself."""
        with self._session() as conn:
            level = "FULL" if durable else "NORMAL"
            self._synchronous = sqlite_files.synchronous(conn, level, self._synchronous)
            with sqlite_files.immediate(conn):
                yield conn
            if not durable:
                self._unsynced = True

    def setup(self) -> None:
        """Create the table now (and import older histories); it is otherwise done on first use."""
        with self._session():
            pass

    def close(self) -> None:
        """Make pending commits durable and close the connection (it reopens on use)."""
        with self._mutex:
            if self._conn is not None:
                self.sync()
                self._conn.close()
                self._conn = None
                self._synchronous = ""
                self._histories.clear()
                self._stamp = None

    # -- histories -----------------------------------------------------------------------

    def _load_history(self, session: sqlite3.Connection, artifact_id: str) -> list[ArtifactRef]:
        """The history, parsed once for as long as no history in the database changes.

        Triggers count every insert, update and delete of a history row, whichever
        connection makes it (another process, the ``sqlite3`` shell); when the count moved
        the cache is dropped whole. Commits to other tables (checkpoints, the audit) leave
        it, which ``PRAGMA data_version`` (what a read-only store watches) would not. A put
        keeps the cache current with its own insert (see :meth:`put`).
        """
        [(stamp,)] = session.execute(self._stamp_query).fetchall()
        if stamp != self._stamp or len(self._histories) > MAX_CACHED_HISTORIES:
            self._histories.clear()
            self._stamp = stamp
        history = self._histories.get(artifact_id)
        if history is None:
            rows = session.execute(
                f"SELECT revision, ref FROM {TABLE} WHERE artifact_id = ? ORDER BY revision",
                (artifact_id,),
            ).fetchall()
            refs = [parse_entry(artifact_id, revision, raw) for revision, raw in rows]
            history = [check_entry(artifact_id, n, ref) for n, ref in enumerate(refs, 1)]
            self._histories[artifact_id] = history
        return list(history)

    def _insert(self, conn: sqlite3.Connection, ref: ArtifactRef) -> None:
        self._histories.pop(ref.artifact_id, None)
        conn.execute(
            f"INSERT INTO {TABLE} (artifact_id, revision, sha256, ref) VALUES (?, ?, ?, ?)",
            (ref.artifact_id, ref.revision, ref.sha256, ref.model_dump_json()),
        )

    # -- batches -------------------------------------------------------------------------

    def sync(self) -> None:
        """Fsync the write-ahead log if a batched commit left it unsynced (any thread's)."""
        with self._mutex:
            if not self._unsynced:
                return
            # Only the log is opened: SQLite locks the database file with POSIX locks,
            # which closing any descriptor of it in this process would drop.
            # No log (FileNotFoundError): a checkpoint moved its commits into the database
            # file, and a checkpoint fsyncs the log before and the database file after it.
            with contextlib.suppress(FileNotFoundError):
                files.fsync(self._database.with_name(f"{self._database.name}-wal"))
            self._unsynced = False

    # -- legacy histories ----------------------------------------------------------------

    def _import_legacy_histories(self) -> None:
        """Bring ``refs/<id>.json`` histories into the table, then rename the folder.

        Runs inside ``BEGIN IMMEDIATE``, so two processes importing at once take turns
        (see ``app.storage.artifacts.legacy_refs``).
        """
        if not (self.root / LEGACY_REFS).is_dir():
            return
        with self._transaction(durable=True) as conn:
            for artifact_id, history in legacy_histories(self.root):
                recorded = self._load_history(conn, artifact_id)
                for ref in unrecorded(
                    artifact_id, history, recorded, root=self.root, database=self._database
                ):
                    self._insert(conn, ref)
        retire_legacy_refs(self.root)

    # -- public API ----------------------------------------------------------------------

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content; identical content to the head returns the head unchanged."""
        # Validate id, kind and media type before anything touches the disk.
        content, first = candidate(artifact_id, kind, content, media_type)
        self._write_blob(first.sha256, content)
        durable = not self._in_batch
        with self._mutex:
            with self._transaction(durable=durable) as conn:
                history = self._load_history(conn, artifact_id)
                checked = self._stamp  # the count of changes the history is current at
                head = history[-1] if history else None
                ref = next_revision(first, head.kind if head else None, head)
                if ref is not head:
                    self._insert(conn, ref)
                if not self._has_blob(first.sha256):  # swept since it was written: again
                    self._write_blob(first.sha256, content)
            if ref is not head:
                # Committed, and the only change since the cache was checked (no other
                # writer gets in after BEGIN IMMEDIATE): the cache stays good, and the
                # count of changes is the one it was checked at plus this insert's
                # (the trigger adds one per row), so it is not read back.
                self._histories[artifact_id] = [*history, ref]
                self._stamp = None if checked is None else checked + 1
        if durable and ref is head:
            # Nothing was committed, so nothing was fsynced; the head's own commit may be
            # another process's batched one, not yet durable.
            self._unsynced = True
            self.sync()
        return ref

    def ids(self) -> list[str]:
        """Every stored artifact id, sorted."""
        with self._session() as conn:
            rows = conn.execute(f"SELECT DISTINCT artifact_id FROM {TABLE}").fetchall()
        found: list[str] = []
        for (artifact_id,) in rows:
            with contextlib.suppress(InvalidArtifactId):
                found.append(check_id(str(artifact_id)))
        return sorted(found)

    def forget(self, artifact_ids: Collection[str]) -> None:
        """Delete the histories of ``artifact_ids``; their blobs stay until :meth:`sweep`."""
        with self._transaction(durable=True) as conn:
            conn.execute(
                f"DELETE FROM {TABLE} WHERE artifact_id IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(artifact_ids)),),
            )

    def sweep(self, sha256s: Collection[str]) -> set[str]:
        """Delete each of these blobs no row names, inside a write transaction of the file.

        A put checks its blob inside its own write transaction and writes it again if it
        is gone, so it sees a sweep either whole or not at all.
        """
        with self._transaction(durable=True) as conn:
            rows = conn.execute(
                f"SELECT DISTINCT sha256 FROM {TABLE} "
                "WHERE sha256 IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(sha256s)),),
            ).fetchall()
            named = {str(sha256) for (sha256,) in rows}
            return self._delete_blobs(set(sha256s) - named)
