"""A confirmed write runs exactly once, even when the process is SIGKILLed around it.

Real ``handoff`` processes on both backends: the run pauses for the export's
confirmation, the approving resume is killed just before the write (``before_write``) or
just after it and before its record (``after_write``), and a second approving resume
finishes. The file is written once: absent before the first kill point, and at the second
the very file the killed process wrote (same inode, same bytes) is what the run reports.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from contracts import WriteConfirmation
from tests.backends import BACKENDS, backend_env, backend_settings
from tests.cli import handoff
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.e2e
THREAD = "t-crash-export"


@pytest.fixture(params=[pytest.param(kind, marks=getattr(pytest.mark, kind)) for kind in BACKENDS])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    with backend_settings(request.param, tmp_path / "data") as settings:
        yield settings


def approve(settings: Settings, fault: str | None = None) -> int:
    env = backend_env(settings)
    if fault is not None:
        env["HANDOFF_FAULT"] = fault
    return handoff("resume", THREAD, "--approve", env=env).returncode


@pytest.mark.parametrize("point", ["before_write", "after_write"])
def test_a_confirmed_export_runs_once_across_a_sigkill_around_the_write(
    backend: Settings, point: str
) -> None:
    started = handoff("run", OBJECTIVE, "--thread", THREAD, "--export", env=backend_env(backend))
    assert started.returncode == ExitCode.WAITING_FOR_HUMAN, started.stderr
    with Workflow(backend) as workflow:
        request = workflow.pending(THREAD)
    assert request is not None and request.request_kind == "confirm_write"
    call_id = WriteConfirmation.model_validate(request.details).call_id
    target = backend.resolved_export_dir() / f"{THREAD}.md"

    assert approve(backend, f"kill:export_article:{point}") == -signal.SIGKILL
    written = target.stat() if target.exists() else None
    assert (written is not None) == (point == "after_write")

    assert approve(backend) == ExitCode.COMPLETED
    with Workflow(backend) as workflow:
        article = workflow.artifact(THREAD, "article")
        effect = workflow.ledger.tool_effect(THREAD, call_id)
        exports = [
            run
            for run in workflow.history(THREAD)
            if run.node_id == "export_article" and run.status == "succeeded"
        ]
        waiting = workflow.pending(THREAD)
    assert target.read_bytes() == article and waiting is None
    assert effect is not None and json.loads(effect)["output"]["path"] == str(target)
    assert [receipt.call_id for run in exports for receipt in run.tool_receipts] == [call_id]
    if written is not None:  # the killed process wrote it: the resume did not write again
        now = target.stat()
        assert (now.st_ino, now.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
