"""The single-machine default needs no queue: running a thread on SQLite never imports
Procrastinate, and asking for the fleet there says what it needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.errors import QueueUnavailable
from app.exit_codes import ExitCode
from app.fleet import Fleet
from app.workflow import Workflow
from tests.backends import sqlite_settings

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from pathlib import Path
import app.cli
from app.workflow import Workflow
from tests.backends import sqlite_settings
with Workflow(sqlite_settings(Path(sys.argv[1]))) as workflow:
    outcome = workflow.run("Explain how the Rosetta Stone was deciphered", "plain")
    assert outcome.result_status == "completed", outcome
    assert workflow.job("plain") is None and workflow.queued() == {}
assert "procrastinate" not in sys.modules, "the default run imported the queue"
"""


def test_a_run_on_the_embedded_default_never_imports_the_queue(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_the_fleet_on_sqlite_is_refused_with_what_it_needs(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path / "data")
    with pytest.raises(QueueUnavailable, match="HANDOFF_DATABASE_URL=postgresql"):
        Fleet(settings)
    with Workflow(settings) as workflow, pytest.raises(QueueUnavailable, match="PostgreSQL"):
        workflow.submit("Explain how the Rosetta Stone was deciphered", "queued")
    with Workflow(settings, read_only=True) as workflow:
        assert workflow.threads() == []


def test_a_worker_whose_database_refuses_connections_exits_9_in_one_masked_line(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    env["HANDOFF_DATABASE_URL"] = "postgresql://fleet:s3cret-pw@127.0.0.1:1/nowhere"
    result = subprocess.run(
        [str(Path(sys.executable).parent / "handoff"), "worker"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == ExitCode.DATABASE_UNAVAILABLE, result.stderr
    assert "Traceback" not in result.stderr and "s3cret-pw" not in result.stderr
    assert "error: database unavailable at postgresql://fleet:***@127.0.0.1:1" in result.stderr
