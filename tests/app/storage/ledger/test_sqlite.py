"""The SQLite ledger: fsynced where nothing durable follows, and a killed writer loses nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

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
