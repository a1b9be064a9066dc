"""The SQLite ledger: fsynced where nothing durable follows, a killed writer loses nothing, and
stored updates are kept compressed."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from app.storage.encryption import KeyRing
from app.storage.ledger.sqlite import SqliteRunLedger
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
                "INSERT INTO handoff_node_runs SELECT thread_id, seq + 10, node_id, ?, "
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
