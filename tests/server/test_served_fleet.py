"""The dev server and the worker fleet share one database: a thread the server started and
left waiting is answered through the queue and finished by a worker, under the same lock."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from app.workflow import Workflow
from contracts import TaskState
from tests.cli import HANDOFF
from tests.server.conftest import served, start

pytestmark = [pytest.mark.server, pytest.mark.postgres]


def test_a_thread_the_server_started_is_decided_through_the_queue_and_finished_by_a_worker(
    tmp_path: Path,
) -> None:
    with served("postgres", tmp_path / "served") as server:
        thread_id, request = asyncio.run(start(get_client(url=server.url), "served-fleet"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
        env |= {
            "HANDOFF_DATABASE_URL": server.settings.resolved_database_url(),
            "HANDOFF_DATA_DIR": str(tmp_path / "cli-data"),
        }

        def handoff(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(HANDOFF), *args],
                cwd=server.folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )

        queued = handoff("submit", "--resume", thread_id, "--approve")
        assert queued.returncode == 0, queued.stderr
        worked = handoff("worker", "--burst")
        assert worked.returncode == 0, worked.stderr
        with Workflow(server.settings) as workflow:
            outcome = workflow.outcome(thread_id)
            assert outcome.state == TaskState.COMPLETED, outcome
            assert outcome.result_status == "completed"
            [decision] = workflow.state(thread_id)["decisions"].decisions
            assert decision.interrupt_id == request.interrupt_id
        state = asyncio.run(get_client(url=server.url).threads.get_state(thread_id))
        assert state["next"] == [] and state["values"]["outcome"]["state"] == "TASK_STATE_COMPLETED"
        # The server's registry keeps the status its own last run left (docs/fleet.md says so):
        # the checkpoints, which get_state and `handoff status` read, are the thread's truth.
        registry = asyncio.run(get_client(url=server.url).threads.get(thread_id))
        assert registry["status"] == "interrupted"
