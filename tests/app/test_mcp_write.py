"""An MCP server's write tool as the export step's write: confirmed, then applied once.

Real ``handoff`` processes on both backends, and a real MCP server (``notes_mcp_server.py``)
whose ``save_article`` keeps one line per key in a log file. The approving resume is
SIGKILLed just before the write (``before_write``) or just after it, before its record
(``after_write``); a resume without a decision then finishes the export, and the log holds
exactly one line. Nothing was sent before the first kill point; at the second the call is
sent again with the same key (the article's sha256), which the server takes as done, as a
file already holding the article's bytes is left as it is by the folder export.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from contracts import TaskState, WriteConfirmation
from tests.backends import BACKENDS, backend_env, backend_settings
from tests.cli import handoff
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.e2e
THREAD = "t-mcp-export"
SERVER_FILE = Path(__file__).with_name("notes_mcp_server.py")


@pytest.fixture(params=[pytest.param(kind, marks=getattr(pytest.mark, kind)) for kind in BACKENDS])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    with backend_settings(request.param, tmp_path / "data") as settings:
        yield settings


def mcp_env(settings: Settings, log: Path) -> dict[str, str]:
    """The CLI's environment: the backend, and the notes server's tool as the export's write."""
    server = {"command": sys.executable, "args": [str(SERVER_FILE)], "env": {"NOTES_LOG": str(log)}}
    grant = {
        "node": "export_article",
        "server": "notes",
        "tool": "save_article",
        "kind": "write",
        "timeout_seconds": 30,
        "arguments": {"file_name": "file_name", "markdown": "markdown", "key": "sha256"},
    }
    return {
        **backend_env(settings),
        "HANDOFF_MCP_SERVERS": json.dumps({"notes": server}),
        "HANDOFF_MCP_TOOLS": json.dumps([grant]),
    }


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("point", ["before_write", "after_write"])
def test_an_approved_mcp_write_killed_around_it_runs_exactly_once(
    backend: Settings, point: str, tmp_path: Path
) -> None:
    log = tmp_path / "notes.log"
    env = mcp_env(backend, log)
    started = handoff("run", OBJECTIVE, "--thread", THREAD, "--export", env=env)
    assert started.returncode == ExitCode.WAITING_FOR_HUMAN, started.stderr
    with Workflow(backend) as workflow:
        request = workflow.pending(THREAD)
    assert request is not None and request.request_kind == "confirm_write"
    asked = WriteConfirmation.model_validate(request.details)
    assert asked.target == f"MCP tool 'save_article' of server 'notes' ({THREAD}.md)"
    assert lines(log) == [], "nothing is sent before a person confirms"

    fault = {**env, "HANDOFF_FAULT": f"kill:export_article:{point}"}
    killed = handoff("resume", THREAD, "--approve", env=fault)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(lines(log)) == (1 if point == "after_write" else 0)

    finished = handoff("resume", THREAD, env=env)
    assert finished.returncode == ExitCode.COMPLETED, finished.stderr
    with Workflow(backend) as workflow:
        outcome = workflow.outcome(THREAD)
        effect = workflow.ledger.tool_effect(THREAD, asked.call_id)
    assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
    assert outcome.reason == f"exported to mcp://notes/save_article/{THREAD}.md"
    assert effect is not None
    [line] = lines(log)  # sent exactly once, whichever process sent it
    assert line.startswith(f"{THREAD}.md ")


def test_an_mcp_write_the_server_refuses_ends_published_and_unexported(
    backend: Settings, tmp_path: Path
) -> None:
    env = mcp_env(backend, tmp_path / "missing-folder" / "notes.log")  # the log cannot open
    handoff("run", OBJECTIVE, "--thread", THREAD, "--export", env=env)
    approved = handoff("resume", THREAD, "--approve", env=env)
    assert approved.returncode != -signal.SIGKILL, approved.stderr
    with Workflow(backend) as workflow:
        outcome = workflow.outcome(THREAD)
    [error] = outcome.errors
    assert error.field == "policies.export_article"
    assert "published but not exported" in error.detail and "save_article" in error.detail
