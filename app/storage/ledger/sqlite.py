"""The audit ledger in a thread's SQLite file, beside its checkpoints."""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.storage import sqlite_files
from app.storage.ledger.base import Cursor, SqlRunLedger
from contracts import NodeRun, Usage

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_node_runs (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    result TEXT,
    spent_tool_calls INTEGER,
    spent_tokens INTEGER,
    PRIMARY KEY (thread_id, seq)
)
"""
LEDGER_DICTIONARY = b"".join(
    (
        b'{"draft":{"schema_version":"1.0","kind":"draft_article","task_id":"","result_status":'
        b'"completed","revision":1,"body":{"schema_version":"1.0","artifact_id":"","kind":"draft",'
        b'"uri":"artifact://draft/","media_type":"text/markdown","sha256":"","revision":1,'
        b'"size_bytes":1},"cited_claim_ids":["claim-"],"excluded_claim_ids":[],'
        b'"addressed_changes":[],"word_count":1,"errors":[]},"freshness":{"schema_version":"1.1",'
        b'"kind":"freshness_report","node":"reviewer","verdict":"fresh","checked":1,"checks":[],'
        b'"round":0},"review":{"schema_version":"1.1","kind":"review_result","task_id":"",'
        b'"draft_revision":1,"verdict":"approved","draft_sha256":"","accepted_claims":[],'
        b'"rejected_claims":[],"required_changes":[],"checked_sources":[],"report":{}}}',
        b'{"tool":"read_source","call_id":"read-src-1","input_summary":"","output_sha256":"",'
        b'"provenance":{"producer":"research","node":"research","step":1},"duration_ms":0.1,'
        b'"cost":1,"error":null},"note":"re-run for task v2: task changed since v1","inputs":'
        b'["branch:","code:","contracts:","draft:","fingerprint:","freshness:","handoff:","node:",'
        b'"research:","review:","task:"]}',
        b'{"schema_version":"1.4","kind":"node_run","task_version":1,"node_id":"research",'
        b'"attempt":1,"status":"succeeded","input_hash":"","started_at":'
        b'"2026-01-01T00:00:00.000000Z","ended_at":"2026-01-01T00:00:00.000000Z","duration_ms":0.1,'
        b'"usage":{"tool_calls":0,"tokens":0},"artifact_ids":[],"agent":null,"error":null,'
        b'"checked_inputs":["1 inputs checked: fresh"],"tool_receipts":[],"reused":false,'
        b'"note":"reused from v1: its inputs are unchanged","inputs":[]}',
    )
)
"""zlib's preset dictionary for records and stored updates: the field names and the common
values of an attempt's record and of a node's update, which a record of 1 KB otherwise
spells out in full, compressing to three fifths of it; with them, to a third.

Never edited: a row names the dictionary it was compressed with only by its Adler-32 (in
the zlib header), so a changed dictionary would leave every row made with this one
unreadable. A better one is added beside it, under a new name, in :data:`DICTIONARIES`."""
DICTIONARIES = {zlib.adler32(LEDGER_DICTIONARY): LEDGER_DICTIONARY}
"""Each dictionary a row may be compressed with, by its Adler-32."""
PRESET_DICTIONARY = 0x20
"""The FDICT bit of a zlib header's second byte: a dictionary id (Adler-32) follows."""


def compressed(text: str) -> str | bytes:
    """``text`` compressed with :data:`LEDGER_DICTIONARY`, as a BLOB, if that is smaller."""
    data = text.encode("utf-8")
    compressor = zlib.compressobj(zdict=LEDGER_DICTIONARY)
    smaller = compressor.compress(data) + compressor.flush()
    return smaller if len(smaller) < len(data) else text


def decompressed(stored: bytes) -> str:
    """The text of a BLOB :func:`compressed` made, or one compressed without a dictionary."""
    if len(stored) < 6 or not stored[1] & PRESET_DICTIONARY:
        return zlib.decompress(stored).decode("utf-8")
    dictionary = DICTIONARIES.get(int.from_bytes(stored[2:6], "big"))
    if dictionary is None:
        raise ValueError(
            f"a ledger row is compressed with dictionary {stored[2:6].hex()}, which this "
            "version of handoff does not have: read the file with the version that wrote it"
        )
    decompressor = zlib.decompressobj(zdict=dictionary)
    return (decompressor.decompress(stored) + decompressor.flush()).decode("utf-8")


SPENT_COLUMNS = ("spent_tool_calls", "spent_tokens")
"""What an attempt spent, 0 when reused, beside its record kept compressed (which the sums
cannot read); added to a table made before them."""
SQLITE_EFFECTS = """
CREATE TABLE IF NOT EXISTS handoff_tool_effects (
    thread_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    effect TEXT NOT NULL,
    PRIMARY KEY (thread_id, call_id)
)
"""


class SqliteRunLedger(SqlRunLedger):
    """A table in the thread's SQLite file; the connection opens on first use.

    One connection serves every thread of the process (guarded by a mutex); a new
    sequence number is taken inside ``BEGIN IMMEDIATE``, which locks out every other
    writer of the file until it commits, so no two processes can take the same one.

    An attempt's start row, its progress (a tool call's receipt, as the call ends), and
    the finish row of one that succeeded, are committed
    without an fsync of their own (``synchronous`` NORMAL); a failed or paused attempt's
    finish row and every other write are fsynced (FULL). A killed process loses nothing by
    it: the commit is in the write-ahead log, which the OS holds. Against a power loss a
    row is durable as soon as any later commit of the file is, because the log is one file
    written in commit order and SQLite recovers a valid prefix of it: after a node
    succeeds LangGraph commits its writes and checkpoint (fsynced) to this same file
    before the next node starts. What a power loss can take is the last node's work since
    then, which a resume redoes; never a row without the rows before it.
    ``read_only`` ledgers (for inspection) open the file without setting anything up, so
    reading the audit needs no free space (see ``app.storage.sqlite_files``).

    A succeeded attempt's stored update, and every record, is kept zlib-compressed, as a
    BLOB, when that is smaller: PostgreSQL compresses such text itself (TOAST), SQLite keeps
    it as given, and a record and an update hold field names and hashes that repeat. What
    the budget sums read of a compressed record is kept beside it (:data:`SPENT_COLUMNS`).
    A sealed update or record (``keys``) is kept as sealed text, and one stored before as
    the text it was.
    """

    spent_sql = (
        "CASE WHEN json_extract(record, '$.reused') THEN 0 "
        "ELSE coalesce(json_extract(record, '$.usage.{usage}'), 0) END"
    )
    record_columns = ("record", *SPENT_COLUMNS)

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._synchronous = ""
        self._spent_kept = False

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite_files.connect(
                self.path,
                read_only=self.read_only,
                needs=("handoff_node_runs",),
                isolation_level=None,
            )
            if not isinstance(conn, sqlite_files.ReadOnlyConnection):
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(SQLITE_SCHEMA)
                conn.execute(SQLITE_EFFECTS)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(handoff_node_runs)")}
            for column in SPENT_COLUMNS:
                if column not in columns and not isinstance(conn, sqlite_files.ReadOnlyConnection):
                    conn.execute(f"ALTER TABLE handoff_node_runs ADD COLUMN {column} INTEGER")
                    columns.add(column)
            self._spent_kept = set(SPENT_COLUMNS) <= columns
            self._conn = conn
        return self._conn

    @contextmanager
    def _cursor(self, *, fsync: bool = True) -> Iterator[Cursor]:
        with self._lock:
            yield self._synced(self._connection(), "FULL" if fsync else "NORMAL").cursor()

    def _synced(self, conn: sqlite3.Connection, level: str) -> sqlite3.Connection:
        """The connection with its next commits fsynced (FULL) or not (NORMAL)."""
        self._synchronous = sqlite_files.synchronous(conn, level, self._synchronous)
        return conn

    @contextmanager
    def _transaction(self, *, synchronous: str = "FULL") -> Iterator[Cursor]:
        with self._lock:
            with sqlite_files.immediate(self._synced(self._connection(), synchronous)) as conn:
                yield conn.cursor()

    def _spent(self, usage: str) -> str:
        """A compressed record's spending from its column, any other's from its JSON."""
        in_json = super()._spent(usage)
        if not self._spent_kept:  # a read-only file from before: every record is text
            return in_json
        return (
            f"CASE WHEN typeof(record) = 'blob' THEN coalesce(spent_{usage}, 0) ELSE {in_json} END"
        )

    def _stored_record(self, run: NodeRun) -> tuple[Any, ...]:
        """The record compressed when not sealed and that is smaller, and what it spent."""
        text = self._seal_record(run)
        stored = compressed(text) if self.keys is None else text
        spent = Usage() if run.reused else run.usage
        return stored, spent.tool_calls, spent.tokens

    def _text(self, stored: Any) -> str:
        """A compressed record or update (a BLOB) decompressed; text as it is."""
        if isinstance(stored, bytes):
            return decompressed(stored)
        return super()._text(stored)

    def _stored_result(self, result: str | None) -> Any:
        """The update compressed, when not sealed and that is smaller (see the class doc)."""
        if result is None or self.keys is not None:
            return super()._stored_result(result)
        return compressed(result)

    def _insert_next(self, statement: str, params: Sequence[Any]) -> int:
        with self._transaction(synchronous="NORMAL") as cursor:  # a start row: see above
            (seq,) = cursor.execute(statement, params).fetchall()[0]
        return int(seq)

    def close(self) -> None:
        """Close the connection (it reopens on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._synchronous = ""
