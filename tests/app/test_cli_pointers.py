"""What the CLI points people to is where things are, and the commands it prints work."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from tests.backends import backend_env
from tests.cli import HANDOFF
from tests.conftest import OBJECTIVE

FRESH_PATH = "/usr/local/bin:/usr/bin:/bin"
"""A shell's PATH with no virtual environment activated."""


def in_fresh_shell(
    settings: Settings, cwd: Path, command: list[str] | str
) -> subprocess.CompletedProcess[str]:
    """``command`` run with no virtual environment activated; a string is a line pasted in."""
    return subprocess.run(
        command,
        shell=isinstance(command, str),
        cwd=cwd,
        env={**backend_env(settings), "PATH": FRESH_PATH},
        capture_output=True,
        text=True,
        timeout=120,
    )


def cli(settings: Settings, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``handoff`` as ``make demo`` runs it: by its path, the venv not activated."""
    return in_fresh_shell(settings, cwd, [str(HANDOFF), *args])


def completed(settings: Settings, cwd: Path, thread_id: str) -> str:
    """What ``handoff run`` prints for a thread it runs to completion."""
    run = cli(settings, cwd, "run", OBJECTIVE, "--thread", thread_id)
    assert run.returncode == ExitCode.COMPLETED, run.stderr
    return run.stdout


def line(output: str, prefix: str) -> str:
    [found] = [text for text in output.splitlines() if text.startswith(prefix)]
    return found.removeprefix(prefix).strip()


@pytest.mark.e2e
def test_the_printed_read_command_works_in_a_fresh_shell(
    settings: Settings, tmp_path: Path
) -> None:
    command = line(completed(settings, tmp_path, "t-pointer"), "read it:")
    shown = in_fresh_shell(settings, tmp_path, command)
    assert shown.returncode == 0, (command, shown.stderr)
    with Workflow(settings) as workflow:
        assert shown.stdout.encode() == workflow.artifact("t-pointer", "article")


@pytest.mark.e2e
def test_the_printed_location_of_the_article_is_where_its_bytes_are(
    settings: Settings, tmp_path: Path
) -> None:
    printed = completed(settings, tmp_path, "t-where")
    where = line(printed, "article:").split(") in ", 1)[1]
    with Workflow(settings) as workflow:
        ref = workflow.artifact_ref("t-where", "article")
    if settings.resolved_artifact_store() == "database":
        assert where.startswith("the database postgresql://"), where
        assert ".handoff" not in printed
    else:
        blob = (tmp_path / where).resolve() / "blobs" / ref.sha256[:2] / ref.sha256
        assert blob.is_file(), where


@pytest.mark.e2e
def test_status_says_no_result_until_there_is_one_and_its_json_has_the_freshness(
    settings: Settings, tmp_path: Path
) -> None:
    run = cli(settings, tmp_path, "run", OBJECTIVE, "--thread", "t-st", "--require-approval")
    assert run.returncode == ExitCode.WAITING_FOR_HUMAN, run.stderr
    assert "result: None" not in run.stdout
    status = cli(settings, tmp_path, "status", "t-st")
    assert "result: None" not in status.stdout and "TASK_STATE_INPUT_REQUIRED" in status.stdout
    resume = line(run.stdout, "answer with:") or ""
    approve = [
        text.strip() for text in run.stdout.splitlines() if text.strip().endswith("--approve")
    ]
    assert approve and not resume
    decided = in_fresh_shell(settings, tmp_path, approve[0])
    assert decided.returncode == ExitCode.COMPLETED, (approve[0], decided.stderr)
    payload = json.loads(cli(settings, tmp_path, "status", "t-st", "--json").stdout)
    assert payload["freshness"]["verdict"] == "fresh", "the report the text view prints"


@pytest.mark.e2e
def test_threads_show_each_threads_state_and_history_names_artifacts_in_full(
    settings: Settings, tmp_path: Path
) -> None:
    thread_id = "3f1c2a9e-8b7d-4c6e-9a1b-2c3d4e5f6a7b"  # a server's UUID thread id
    with Workflow(settings) as workflow:
        workflow.run(workflow.task(OBJECTIVE), thread_id)
        workflow.run(workflow.task(OBJECTIVE, policies={"require_approval": True}), "t-waits")
    rows = {
        row["thread_id"]: row
        for row in json.loads(cli(settings, tmp_path, "threads", "--json").stdout)
    }
    assert rows[thread_id]["state"] == "TASK_STATE_COMPLETED" and rows[thread_id]["next"] == []
    assert rows["t-waits"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert rows["t-waits"]["next"] == ["approve_research"] and rows["t-waits"]["updated_at"]
    table = cli(settings, tmp_path, "threads").stdout
    assert "INPUT_REQUIRED" in table and "approve_research" in table
    history = cli(settings, tmp_path, "history", thread_id).stdout
    for name in ("notes@1", "draft@1", "review@1", "article@1"):
        assert name in history, history
