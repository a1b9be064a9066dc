"""Expiring approvals at the command line: shown by status, refused by resume, swept.

The policy's timeout is one second of the real clock, which the test waits out: the CLI
builds its own services, so its clock is the system's.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner, Result

from app.cli import cli
from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from contracts import TaskState
from graphs.human import EXPIRED
from tests.backends import backend_env
from tests.conftest import OBJECTIVE

SHORT = {"require_approval": True, "decision_timeout": "1s"}


def handoff(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def expired(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Two threads whose approval requests have expired; the CLI's environment names them."""
    for name in [name for name in os.environ if name.startswith("HANDOFF_")]:
        monkeypatch.delenv(name)
    for name, value in backend_env(settings).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HANDOFF_MODEL", "offline")
    started = handoff(
        "run", OBJECTIVE, "--thread", "t-a", "--require-approval", "--decision-timeout", "1s"
    )
    assert started.exit_code == ExitCode.WAITING_FOR_HUMAN, started.output
    with Workflow(settings) as workflow:
        workflow.run(workflow.task(OBJECTIVE, policies=SHORT), "t-b")
        requests = [workflow.pending(thread) for thread in ("t-a", "t-b")]
    deadline = max(request.expires_at for request in requests if request and request.expires_at)
    shown = handoff("status", "t-a")
    # a slow machine may already be past the one second: status says so then
    assert re.search(r"expire(s at .* the request takes|d at .* records) reject", shown.output)
    time.sleep(max(0.0, (deadline - datetime.now(UTC)).total_seconds()) + 0.1)
    return ["t-a", "t-b"]


def test_approving_an_expired_request_exits_2_and_the_default_is_recorded(
    settings: Settings, expired: list[str]
) -> None:
    refused = handoff("resume", "t-a", "--approve")
    assert refused.exit_code == ExitCode.USAGE, refused.output
    assert "expired at" in refused.stderr and "can no longer be answered" in refused.stderr
    with Workflow(settings, read_only=True) as workflow:
        assert workflow.outcome("t-a").state == TaskState.REJECTED
        decisions = workflow.state("t-a")["decisions"].decisions
    assert [(d.action, d.decided_by) for d in decisions] == [("reject", EXPIRED)]


def test_handoff_sweep_answers_each_expired_request_once(
    settings: Settings, expired: list[str]
) -> None:
    swept = handoff("sweep")
    assert swept.exit_code == 0, swept.output
    assert swept.stdout.splitlines() == [
        "expired t-a: TASK_STATE_REJECTED",
        "expired t-b: TASK_STATE_REJECTED",
        "total: 2 expired requests answered",
    ]
    again = handoff("sweep")
    assert again.stdout.splitlines() == ["total: 0 expired requests answered"]
