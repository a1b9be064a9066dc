"""A confirmed write runs exactly once, even when the process is SIGKILLed around it.

Real ``handoff`` processes on both backends: the run pauses for the export's
confirmation, the approving resume is killed just before the write (``before_write``) or
just after it and before its record (``after_write``). The approval is on record before
the write starts, so the thread asks nothing again: a contradicting ``--reject`` is
refused and changes nothing, and a resume without a decision finishes the export. The
file is written once: absent before the first kill point, and at the second the very file
the killed process wrote (same inode, same bytes) is what the run reports.
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
from contracts import TaskState, WriteConfirmation
from tests.backends import BACKENDS, backend_env, backend_settings
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.e2e
THREAD = "t-crash-export"


@pytest.fixture(params=[pytest.param(kind, marks=getattr(pytest.mark, kind)) for kind in BACKENDS])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    with backend_settings(request.param, tmp_path / "data") as settings:
        yield settings


def approve(settings: Settings, fault: str) -> int:
    env = {**backend_env(settings), "HANDOFF_FAULT": fault}
    return handoff("resume", THREAD, "--approve", env=env).returncode


@pytest.mark.parametrize("point", ["before_write", "after_write"])
def test_an_approved_export_killed_around_its_write_finishes_once_and_stays_approved(
    backend: Settings, point: str
) -> None:
    env = backend_env(backend)
    started = handoff("run", OBJECTIVE, "--thread", THREAD, "--export", env=env)
    assert started.returncode == ExitCode.WAITING_FOR_HUMAN, started.stderr
    with Workflow(backend) as workflow:
        request = workflow.pending(THREAD)
    assert request is not None and request.request_kind == "confirm_write"
    call_id = WriteConfirmation.model_validate(request.details).call_id
    target = backend.resolved_export_dir() / f"{THREAD}.md"

    assert approve(backend, f"kill:export_article:{point}") == -signal.SIGKILL
    written = target.stat() if target.exists() else None
    assert (written is not None) == (point == "after_write")
    with Workflow(backend) as workflow:
        asked, between = workflow.pending(THREAD), workflow.status(THREAD)
    assert asked is None, "the approval is on record: nothing is asked again"
    assert between.next_nodes == ("export_article",)
    assert between.current.state == TaskState.WORKING  # not reported as done before it is

    refused = handoff("resume", THREAD, "--reject", "--reason", "changed my mind", env=env)
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    assert "not waiting for a decision" in one_line_error(refused)
    assert "approve" in one_line_error(refused), "the error names the decision that stands"
    assert (target.stat() if target.exists() else None) == written  # the refusal changed nothing

    finished = handoff("resume", THREAD, env=env)
    assert finished.returncode == ExitCode.COMPLETED, finished.stderr
    with Workflow(backend) as workflow:
        article = workflow.artifact(THREAD, "article")
        effect = workflow.ledger.tool_effect(THREAD, call_id)
        exports = [
            run
            for run in workflow.history(THREAD)
            if run.node_id == "export_article" and run.status == "succeeded"
        ]
        waiting = workflow.pending(THREAD)
        decided = [
            (entry.action, entry.reason)
            for entry in workflow.state(THREAD)["decisions"].decisions
            if entry.request_kind == "confirm_write"
        ]
        outcome = workflow.outcome(THREAD)
    assert decided == [("approve", None)], "the approval is recorded, never a rejection"
    assert (outcome.state, outcome.result_status, outcome.errors) == (
        TaskState.COMPLETED,
        "completed",
        [],
    )
    assert target.read_bytes() == article and waiting is None
    assert effect is not None and json.loads(effect)["output"]["path"] == str(target)
    assert [receipt.call_id for run in exports for receipt in run.tool_receipts] == [call_id]
    if written is not None:  # the killed process wrote it: the resume did not write again
        now = target.stat()
        assert (now.st_ino, now.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)


def test_a_write_killed_before_its_attempt_ends_leaves_its_receipt_in_the_audit(
    backend: Settings,
) -> None:
    """The killed attempt's row keeps the call it made, and history shows it after resume."""
    env = backend_env(backend)
    started = handoff("run", OBJECTIVE, "--thread", THREAD, "--export", env=env)
    assert started.returncode == ExitCode.WAITING_FOR_HUMAN, started.stderr
    with Workflow(backend) as workflow:
        request = workflow.pending(THREAD)
    assert request is not None
    call_id = WriteConfirmation.model_validate(request.details).call_id

    assert approve(backend, "kill:export_article:after_write") == -signal.SIGKILL
    with Workflow(backend) as workflow:
        [killed] = [run for run in workflow.history(THREAD) if run.node_id == "export_article"]
    assert killed.status == "running", "nothing finished the attempt: its process was killed"
    assert [receipt.call_id for receipt in killed.tool_receipts] == [call_id]
    assert killed.tool_receipts[0].error is None and killed.tool_receipts[0].cost == 1
    assert killed.usage.tool_calls == 1, "the call that ran is charged"

    finished = handoff("resume", THREAD, env=env)
    assert finished.returncode == ExitCode.COMPLETED, finished.stderr
    listed = handoff("history", THREAD, "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    exports = [run for run in json.loads(listed.stdout) if run["node_id"] == "export_article"]
    assert [run["status"] for run in exports] == ["failed", "succeeded"]
    assert "did not finish" in exports[0]["error"]["detail"]
    assert [receipt["call_id"] for receipt in exports[0]["tool_receipts"]] == [call_id]
    assert [receipt["call_id"] for receipt in exports[1]["tool_receipts"]] == [call_id]
