"""An export that failed for a reason that may pass is asked again, so it can be retried.

Through the ``handoff`` command on both backends: a directory where the article's file
goes blocks the write; the run reports the article published, the export failed and
retryable, and waits on the export's confirmation again; once the path is free an
approving resume writes the file exactly once and the thread completes with no error.
"""

from __future__ import annotations

import json
import shutil

import pytest

from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from contracts import ErrorCode, TaskState
from tests.backends import backend_env
from tests.cli import handoff
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.e2e
THREAD = "t-export-retry"


def status(settings: Settings) -> dict[str, object]:
    shown = handoff("status", THREAD, "--json", env=backend_env(settings))
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def test_a_blocked_export_waits_to_be_retried_and_then_writes_the_file_once(
    backend: Settings,
) -> None:
    env = backend_env(backend)
    target = backend.resolved_export_dir() / f"{THREAD}.md"
    target.mkdir(parents=True)  # a directory where the file goes: the write fails
    started = handoff("run", OBJECTIVE, "--thread", THREAD, "--export", env=env)
    assert started.returncode == ExitCode.WAITING_FOR_HUMAN, started.stderr

    blocked = handoff("resume", THREAD, "--approve", env=env)
    assert blocked.returncode == ExitCode.WAITING_FOR_HUMAN, blocked.stderr
    assert "published but not exported" in blocked.stdout
    waiting = status(backend)
    assert waiting["next"] == ["confirm_export"]
    outcome = waiting["outcome"]
    assert isinstance(outcome, dict)
    assert outcome["state"] == TaskState.INPUT_REQUIRED.value and outcome["retryable"] is True
    assert [error["code"] for error in outcome["errors"]] == [ErrorCode.TRANSIENT.value]
    assert outcome["article"] is not None, "the article stays published"
    request = outcome["human_request"]
    assert request["request_kind"] == "confirm_write" and "failed" in request["question"]
    assert target.is_dir()

    shutil.rmtree(target)
    retried = handoff("resume", THREAD, "--approve", env=env)
    assert retried.returncode == ExitCode.COMPLETED, retried.stdout + retried.stderr
    done = status(backend)
    outcome = done["outcome"]
    assert isinstance(outcome, dict) and done["next"] == []
    assert (outcome["state"], outcome["result_status"]) == (TaskState.COMPLETED.value, "completed")
    assert (outcome["errors"], outcome["retryable"]) == ([], False)
    with Workflow(backend) as workflow:
        article = workflow.artifact(THREAD, "article")
        exports = [run for run in workflow.history(THREAD) if run.node_id == "export_article"]
        decided = [
            entry.action
            for entry in workflow.state(THREAD)["decisions"].decisions
            if entry.request_kind == "confirm_write"
        ]
    assert target.read_bytes() == article
    receipts = [receipt for run in exports for receipt in run.tool_receipts]
    assert [receipt.error is not None for receipt in receipts] == [True, False]
    assert decided == ["approve", "approve"]
    again = handoff("resume", THREAD, "--approve", env=env)
    assert again.returncode == ExitCode.ALREADY_FINISHED, again.stderr
    assert target.read_bytes() == article
