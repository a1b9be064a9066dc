"""The single-machine default needs no queue: running a thread on SQLite (through the
Workflow or the CLI) imports neither Procrastinate nor the fleet, and asking for the fleet
there says what it needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.errors import QueueUnavailable
from app.exit_codes import ExitCode
from app.fleet import Fleet, Queue
from app.workflow import Workflow
from tests.backends import sqlite_settings

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import os
import sys
from pathlib import Path
from typer.testing import CliRunner
import app.cli
from app.workflow import Workflow
from tests.backends import backend_env, sqlite_settings
settings = sqlite_settings(Path(sys.argv[1]))
with Workflow(settings) as workflow:
    outcome = workflow.run("Explain how the Rosetta Stone was deciphered", "plain")
    assert outcome.result_status == "completed", outcome
os.environ.update(backend_env(settings))
runner = CliRunner()
for args, code in ((["status", "plain"], 0), (["threads"], 0), (["resume", "plain"], 6)):
    result = runner.invoke(app.cli.cli, args)
    assert result.exit_code == code, (args, result.exit_code, result.output)
    assert "job" not in result.output and "QUEUED" not in result.output, result.output
for name in ("procrastinate", "app.fleet"):
    assert name not in sys.modules, f"the default run imported {name}"
"""


@pytest.mark.e2e
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
    with Workflow(settings) as workflow:
        queue = Queue(workflow)
        assert queue.job("queued") is None and queue.queued() == {}
        with pytest.raises(QueueUnavailable, match="PostgreSQL"):
            queue.submit("Explain how the Rosetta Stone was deciphered", "queued")
    with Workflow(settings, read_only=True) as workflow:
        assert workflow.threads() == []


@pytest.mark.e2e
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
