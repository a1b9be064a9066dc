"""SQLite database files: created whole, refused when damaged, opened read-only for reading.

Every connection the project makes to an SQLite file (the checkpoint saver's and the
audit ledger's) is opened here, because three things must hold for all of them:

* **A damaged file is never written to.** SQLite opens a garbled or truncated file
  without complaint and a 0-byte file as an empty database; the saver's setup would then
  write fresh tables into it, and the store would look healthy but have lost every thread.
  So the file is checked before it is opened (:func:`check_file`), and SQLite's own
  "corrupt" and "not a database" errors become :class:`~app.errors.StorageDamaged`.
* **A 0-byte file is damage only when the store was used.** The rule: a 0-byte database
  is damaged when there is evidence that it held data: its thread-lock folder
  ``<file>-locks`` exists (made by the first run, after the tables), its ``-wal`` file
  holds data, or the artifact folder beside it holds an artifact. Otherwise it is an
  empty database, as SQLite itself reads it. A fresh start cannot trip the rule: a new
  database is made under a temporary name and linked into place once it has its header
  (:func:`_create`), so no handoff process ever shows another one a 0-byte file.
* **Reading needs no free space.** Read-only commands open the file with ``mode=ro`` and
  run no setup. A WAL database needs its ``-shm`` index, which SQLite must create (and
  allocate) when no other connection has it open; on a full disk that fails, so a reader
  then opens the file ``immutable`` instead, which is exact when no ``-wal`` file holds
  data (every commit is then in the main file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import sqlite3
from collections import OrderedDict
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from app.errors import StorageDamaged, StorageFull
from graphs.errors import HandoffError

DAMAGED = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})
"""SQLite's primary error names for a file that is not (or no longer) a sound database."""
NO_ROOM = frozenset({"SQLITE_FULL", "SQLITE_IOERR_SHMSIZE"})
"""SQLite's error names for a write that found no space; SHMSIZE: the WAL index (-shm)
could not be extended, which on a local disk means it is full."""
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
"""errno values that mean the disk (or the user's quota) is full."""

_MAGIC = b"SQLite format 3\0"
_WAL_HEADER = 32


class ReadOnlyConnection(sqlite3.Connection):
    """A connection opened for reading only: its database has its tables, set nothing up."""


def lock_folder(path: Path) -> Path:
    """The thread-lock folder beside a database (``app.storage.locks.FileThreadLock.beside``)."""
    return path.with_name(f"{path.name}-locks")


def _wal_has_data(path: Path) -> bool:
    wal = path.with_name(f"{path.name}-wal")
    try:
        return wal.stat().st_size > _WAL_HEADER
    except FileNotFoundError:
        return False


def _has_artifacts(artifact_dir: Path | None) -> bool:
    """A blob (or, in the layout before histories moved into the database, a history)."""
    if artifact_dir is None:
        return False
    return any(
        (artifact_dir / folder).is_dir()
        and next((artifact_dir / folder).rglob(pattern), None) is not None
        for folder, pattern in (("blobs", "*/*"), ("refs", "*.json"))
    )


def damaged(path: Path, reason: str) -> StorageDamaged:
    """The one-line error for a database file that is not a handoff database any more."""
    return StorageDamaged(
        f"database file {path} is damaged ({reason}): it is not a usable handoff database "
        "and nothing was written to it. Restore it from a backup, or move it (with its "
        "-wal and -shm files) aside to start an empty store"
    )


def full(where: Path | str, reason: str) -> StorageFull:
    """The one-line error for a write that found no space."""
    return StorageFull(
        f"no space left to write {where} ({reason}); everything saved before stays as it was. "
        "Free some space and run the command again (a stopped run continues with "
        "`handoff resume ID`)"
    )


_HEADER_READERS: OrderedDict[tuple[int, int], int] = OrderedDict()
"""Descriptors kept open, one per database file this process checked (see _read_header)."""
_KEPT_READERS = 32
"""How many are kept; the least recently checked file's is closed beyond that (a process
using that many database files at once is not one this project runs)."""


def _read_header(path: Path) -> bytes:
    """The first 100 bytes of the file, read without ever closing a descriptor of it.

    SQLite's locks on a database file are POSIX locks, and POSIX drops all of a process's
    locks on a file when the process closes *any* descriptor of that file. Opening and
    closing the file here, while a connection of this process (the dev server's, the
    Workflow's other one) holds locks on it, would silently release them and break that
    connection (SQLite reports "disk I/O error") or let another process corrupt the
    file. So each file is opened once per process, and its descriptor kept.
    """
    stat = path.stat()
    key = (stat.st_dev, stat.st_ino)
    fd = _HEADER_READERS.get(key)
    if fd is None:
        fd = _HEADER_READERS[key] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        while len(_HEADER_READERS) > _KEPT_READERS:
            os.close(_HEADER_READERS.popitem(last=False)[1])
    _HEADER_READERS.move_to_end(key)
    return os.pread(fd, 100, 0)


def check_file(path: Path, artifact_dir: Path | None = None) -> None:
    """Refuse a database file that is visibly damaged, before SQLite opens (or writes) it.

    A missing file is a fresh start. A 0-byte file follows the rule in the module
    docstring. Otherwise the header must be SQLite's, and the file at least as long as the
    header says (unless a ``-wal`` file holds data: a checkpoint cut short may leave the
    main file shorter while the WAL still has the pages).
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        if lock_folder(path).is_dir() or _wal_has_data(path) or _has_artifacts(artifact_dir):
            raise damaged(path, "the file is empty (0 bytes) but the store beside it was used")
        return
    header = _read_header(path)
    if len(header) < 100 or not header.startswith(_MAGIC):
        raise damaged(path, "not an SQLite database: its header is missing or garbled")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counter_valid = header[24:28] == header[92:96]
    if counter_valid and pages and size < pages * page_size and not _wal_has_data(path):
        raise damaged(
            path, f"truncated: its header records {pages * page_size} bytes, the file has {size}"
        )


def _name(error: sqlite3.Error, *, primary: bool = False) -> str:
    """SQLite's name for the error (``SQLITE_IOERR_SHMSIZE``), or its primary code's."""
    name = str(getattr(error, "sqlite_errorname", ""))
    return "_".join(name.split("_")[:2]) if primary else name


def _no_room(error: sqlite3.Error) -> bool:
    return _name(error) in NO_ROOM or _name(error, primary=True) in NO_ROOM


def failure(error: BaseException, path: Path) -> HandoffError | None:
    """The project's error for an SQLite (or OS) error on ``path``, or None if it is neither.

    SQLITE_CORRUPT and SQLITE_NOTADB (damage found while reading) become StorageDamaged;
    SQLITE_FULL, a WAL index that could not grow, and ENOSPC/EDQUOT become StorageFull.
    """
    if isinstance(error, sqlite3.DatabaseError):
        if _name(error, primary=True) in DAMAGED:
            return damaged(path, str(error))
        if _no_room(error):
            return full(path, str(error))
    if isinstance(error, OSError) and error.errno in NO_SPACE:
        return full(error.filename or path, error.strerror or "no space left on device")
    return None


def synchronous(conn: sqlite3.Connection, level: str, current: str) -> str:
    """Set the connection's ``synchronous`` level (FULL or NORMAL) if it is not ``current``.

    Returns the level now in force, for the caller to pass back next time: the pragma
    is set only when it changes, as callers switch per transaction.
    """
    if current != level:
        conn.execute(f"PRAGMA synchronous={level}")
    return level


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that excludes every other writer of the file from its start.

    Committed when the block ends, rolled back if it raises (unless SQLite already ended
    it itself, as it does on some errors such as SQLITE_FULL).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


PAGE_SIZE = 8192
"""Bytes per page of a new file, as PostgreSQL's. The rows here are a few KB each (a
finished attempt's audit row and its compressed update, a compressed envelope): 4 KiB
pages hold one or two and leave the rest empty (the ledger's rows fill 60 % of its pages'
bytes in bench P9), 8 KiB pages pack them (86 %). A file made before keeps its page size."""


def _create(path: Path) -> None:
    """Make a new database whole: under a temporary name, then linked into place.

    ``sqlite3.connect`` would create a 0-byte file that another process could take for an
    emptied store until the first write. The WAL switch writes the header, so the file
    appears with its header or not at all; if another process linked its file first,
    that one is used. Its pages are :data:`PAGE_SIZE` bytes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    name = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.new")
    os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))  # as SQLite would
    try:
        with contextlib.closing(sqlite3.connect(name)) as conn:
            conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # fixed once the header is written
            conn.execute("PRAGMA journal_mode=WAL")
        with contextlib.suppress(FileExistsError):
            os.link(name, path)
    except OSError as error:  # no hard links here: let SQLite create the file in place
        if error.errno in NO_SPACE:
            raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _read_only(
    path: Path, needs: Collection[str], options: dict[str, Any]
) -> sqlite3.Connection | None:
    """A ``mode=ro`` connection if the file has the tables ``needs``, else None."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    options = {**options, "factory": ReadOnlyConnection}
    try:
        conn, found = _open_listing(uri, options)
    except sqlite3.OperationalError as error:
        if not _no_room(error) or _wal_has_data(path):
            raise
        conn, found = _open_listing(f"{uri}&immutable=1", options)
    if not set(needs) <= found:
        conn.close()
        return None
    return conn


def _open_listing(uri: str, options: dict[str, Any]) -> tuple[sqlite3.Connection, set[str]]:
    """A connection and the tables it sees (reading them maps the WAL index, finds damage)."""
    conn = cast(sqlite3.Connection, sqlite3.connect(uri, uri=True, **options))
    try:
        return conn, _tables(conn)
    except BaseException:
        conn.close()
        raise


def connect(
    path: Path,
    *,
    read_only: bool = False,
    needs: Collection[str] = (),
    artifact_dir: Path | None = None,
    **options: Any,
) -> sqlite3.Connection:
    """A connection to the database at ``path``, checked first and created whole if missing.

    ``read_only`` opens it for reading only, without setup, when it already has the
    tables in ``needs``; a file without them (or no file) is opened for writing, so that
    its tables can be made: check for :class:`ReadOnlyConnection` to know which it got.
    ``options`` go to ``sqlite3.connect``.
    """
    options = {"check_same_thread": False, "timeout": 30, **options}
    check_file(path, artifact_dir)
    if read_only and path.exists():
        conn = _read_only(path, needs, options)
        if conn is not None:
            return conn
    if not path.exists():
        _create(path)
    return cast(sqlite3.Connection, sqlite3.connect(str(path), **options))
