"""The SQLite ledger: fsynced where nothing durable follows, a killed writer loses nothing, and
records and stored updates are kept compressed."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import zlib
from contextlib import closing
from pathlib import Path

import pytest

from app.storage.encryption import KeyRing
from app.storage.ledger.sqlite import (
    DICTIONARIES,
    LEDGER_DICTIONARY,
    SQLITE_SCHEMA,
    SqliteRunLedger,
    compressed,
    decompressed,
)
from contracts import NodeRun, Usage
from tests.app.storage.ledger.test_ledger import a_run


def _synchronous(ledger: SqliteRunLedger) -> int:
    assert ledger._conn is not None
    [(level,)] = ledger._conn.execute("PRAGMA synchronous").fetchall()
    return int(level)


def test_sqlite_rows_a_checkpoint_follows_skip_their_own_fsync_and_the_rest_take_one(
    tmp_path: Path,
) -> None:
    ledger = SqliteRunLedger(tmp_path / "handoff.db")
    try:
        seq = ledger.start("t", a_run())
        assert _synchronous(ledger) == 1, "NORMAL: made durable by the next FULL commit"
        ledger.finish("t", seq, a_run("succeeded"), result="{}")
        assert _synchronous(ledger) == 1, "a succeeded attempt: its checkpoint follows"
        failed = ledger.start("t", a_run())
        ledger.finish("t", failed, a_run("failed"))
        assert _synchronous(ledger) == 2, "FULL: nothing may follow a failure"
        ledger.start("t", a_run())
        assert ledger.abandon_running("t", "killed") == 1
        assert _synchronous(ledger) == 2
    finally:
        ledger.close()


@pytest.mark.e2e
def test_a_start_row_survives_its_process_being_killed_right_after_it(tmp_path: Path) -> None:
    database = tmp_path / "handoff.db"
    code = (
        "import os, signal\n"
        "from pathlib import Path\n"
        "from app.storage.ledger.sqlite import SqliteRunLedger\n"
        "from contracts import NodeRun\n"
        f"run = NodeRun.model_validate_json({a_run().model_dump_json()!r})\n"
        f"SqliteRunLedger(Path({str(database)!r})).start('t-killed', run)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    ledger = SqliteRunLedger(database)
    try:
        assert [run.status for run in ledger.runs("t-killed")] == ["running"]
    finally:
        ledger.close()


def test_a_stored_update_is_kept_compressed_and_one_stored_as_text_reads_as_before(
    tmp_path: Path,
) -> None:
    database = tmp_path / "handoff.db"
    update = '{"draft": {"claims": [' + ", ".join(f'"claim-{n}"' for n in range(200)) + "]}}"
    ledger = SqliteRunLedger(database)
    try:
        for input_hash, result in (("a" * 64, update), ("b" * 64, "{}")):
            seq = ledger.start("t", a_run(input_hash=input_hash))
            ledger.finish("t", seq, a_run("succeeded", input_hash), result=result)
        with closing(sqlite3.connect(database)) as conn:
            stored = dict(conn.execute("SELECT input_hash, result FROM handoff_node_runs"))
            conn.execute(
                "INSERT INTO handoff_node_runs (thread_id, seq, node_id, input_hash, status, "
                "record, result) SELECT thread_id, seq + 10, node_id, ?, "
                "status, record, ? FROM handoff_node_runs WHERE seq = 1",
                ("c" * 64, update),
            )
            conn.commit()
        assert isinstance(stored["a" * 64], bytes) and len(stored["a" * 64]) < len(update) / 3
        assert stored["b" * 64] == "{}", "an update compression would not shrink: kept as text"
        node = a_run().node_id
        assert ledger.result("t", node, "a" * 64) == update
        assert ledger.result("t", node, "b" * 64) == "{}"
        assert ledger.result("t", node, "c" * 64) == update, "a row stored as text before"
    finally:
        ledger.close()
    sealed = SqliteRunLedger(tmp_path / "sealed.db")
    sealed.keys = KeyRing(b"k" * 32)
    try:
        seq = sealed.start("t", a_run())
        sealed.finish("t", seq, a_run("succeeded"), result=update)
        assert sealed.result("t", a_run().node_id, a_run().input_hash) == update
    finally:
        sealed.close()


LEDGER_DICTIONARY_ID = 0xFE430246
"""The Adler-32 of the dictionary, as the zlib header of each row compressed with it names it."""

TABLE_BEFORE_SPENT_COLUMNS = "".join(
    line for line in SQLITE_SCHEMA.splitlines(keepends=True) if "spent_" not in line
)
assert TABLE_BEFORE_SPENT_COLUMNS != SQLITE_SCHEMA


def spending(run: NodeRun, calls: int, *, reused: bool = False) -> NodeRun:
    return run.model_copy(
        update={"usage": Usage(tool_calls=calls, tokens=10 * calls), "reused": reused}
    )


def test_records_are_kept_compressed_and_a_file_from_before_still_sums_its_text_records(
    tmp_path: Path,
) -> None:
    database = tmp_path / "handoff.db"
    before = spending(a_run("succeeded", "b" * 64), 2)
    with closing(sqlite3.connect(database)) as conn:  # a file made before the spent columns
        conn.execute(TABLE_BEFORE_SPENT_COLUMNS)
        conn.execute(
            "INSERT INTO handoff_node_runs VALUES ('t', 1, ?, ?, 'succeeded', ?, NULL)",
            (before.node_id, before.input_hash, before.model_dump_json()),
        )
        conn.commit()
    with closing(SqliteRunLedger(database, read_only=True)) as reader:
        assert reader.tally("t", "nobody", "z" * 64).spent == Usage(tool_calls=2, tokens=20)
    worked, reused = spending(a_run("succeeded"), 3), spending(a_run("succeeded"), 5, reused=True)
    with closing(SqliteRunLedger(database)) as ledger:
        for run in (worked, reused):
            seq = ledger.start("t", run.model_copy(update={"status": "running"}))
            ledger.finish("t", seq, run)
        assert ledger.runs("t") == [before, worked, reused]
        assert ledger.tally("t", "nobody", "z" * 64).spent == Usage(tool_calls=5, tokens=50)
    with closing(sqlite3.connect(database)) as conn:
        query = "SELECT typeof(record), length(record) FROM handoff_node_runs ORDER BY seq"
        stored = conn.execute(query).fetchall()
    assert stored[0][0] == "text", "a record stored before is left as it was"
    assert [kind for kind, _ in stored[1:]] == ["blob", "blob"]
    assert all(size < len(worked.model_dump_json()) * 0.8 for _, size in stored[1:])
    with closing(SqliteRunLedger(database, read_only=True)) as reader:
        assert reader.runs("t") == [before, worked, reused]
        assert reader.tally("t", "nobody", "z" * 64).spent == Usage(tool_calls=5, tokens=50)


def test_a_ledger_whose_first_call_is_a_tally_sums_its_compressed_records(
    tmp_path: Path,
) -> None:
    database = tmp_path / "handoff.db"
    worked = spending(a_run("succeeded"), 3)
    with closing(SqliteRunLedger(database)) as ledger:
        seq = ledger.start("t", worked.model_copy(update={"status": "running"}))
        ledger.finish("t", seq, worked)
    for read_only in (False, True):
        with closing(SqliteRunLedger(database, read_only=read_only)) as fresh:
            tally = fresh.tally("t", worked.node_id, worked.input_hash)
            assert (tally.spent, tally.attempts) == (Usage(tool_calls=3, tokens=30), 1)


def test_the_ledger_dictionary_is_the_one_rows_were_compressed_with() -> None:
    """Edited, it would leave every row compressed with it unreadable (see its docstring)."""
    assert zlib.adler32(LEDGER_DICTIONARY) == LEDGER_DICTIONARY_ID
    assert DICTIONARIES[LEDGER_DICTIONARY_ID] == LEDGER_DICTIONARY


def test_a_row_compressed_with_a_dictionary_this_code_lacks_is_refused_by_name() -> None:
    text = a_run().model_dump_json()
    stored = compressed(text)
    assert isinstance(stored, bytes) and decompressed(stored) == text
    assert decompressed(zlib.compress(text.encode())) == text, "no dictionary: as before"
    compressor = zlib.compressobj(zdict=b'{"schema_version":"9.9"}')
    foreign = compressor.compress(text.encode()) + compressor.flush()
    with pytest.raises(ValueError, match="does not have: read the file with the version"):
        decompressed(foreign)
