"""With HANDOFF_ENCRYPTION_KEY a fleet's queued jobs carry their task and decision sealed:
nothing of the task is readable in the queue's table, and a worker opens them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from app.fleet import WORKFLOWS, Queue, decide_thread, run_thread
from app.settings import BUNDLED_CORPUS, Settings
from app.storage.encryption import new_key
from app.workflow import Workflow
from contracts import TaskSpec, TaskState
from tests.backends import postgres_schema
from tests.conftest import OBJECTIVE

pytestmark = [pytest.mark.postgres, pytest.mark.e2e]  # the queue library starts a process


def job_args(url: str, thread_id: str) -> list[dict[str, Any]]:
    """Each job's arguments as the queue's table keeps them, oldest first."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT args FROM procrastinate_jobs WHERE lock = %s ORDER BY id", (thread_id,)
        ).fetchall()
    return [dict(row[0]) for row in rows]


def test_a_sealed_job_hides_its_task_and_decision_and_a_worker_opens_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with postgres_schema("handoff_sealed") as url:
        env = {
            "HANDOFF_DATABASE_URL": url,
            "HANDOFF_DATA_DIR": str(tmp_path / "data"),
            "HANDOFF_CORPUS": json.dumps([str(BUNDLED_CORPUS)]),
            "HANDOFF_ENCRYPTION_KEY": new_key(),
            "HANDOFF_MODEL": "offline",
        }
        for name, value in env.items():  # the worker's bodies read the environment
            monkeypatch.setenv(name, value)
        settings = Settings(_env_file=None)  # type: ignore[call-arg]
        task = TaskSpec.model_validate(
            {"task_id": "sealed", "objective": OBJECTIVE, "policies": {"require_approval": True}}
        )
        try:
            with Workflow(settings) as workflow:
                Queue(workflow).submit(task, "t-sealed")
            [queued] = job_args(url, "t-sealed")
            assert "Rosetta" not in json.dumps(queued), queued
            assert set(queued["task"]) == {"sealed"}
            assert run_thread("t-sealed", queued["task"]) == TaskState.INPUT_REQUIRED.value

            with psycopg.connect(url, autocommit=True) as conn:  # the run job ended
                conn.execute("UPDATE procrastinate_jobs SET status = 'succeeded'")
            with Workflow(settings) as workflow:
                request = workflow.pending("t-sealed")
                assert request is not None
                decision = {"interrupt_id": request.interrupt_id, "action": "approve"}
                Queue(workflow).submit_decision("t-sealed", decision)
                again = Queue(workflow).submit_decision("t-sealed", decision)
                assert again.duplicate, "a queued decision is read back to compare"
            decided = job_args(url, "t-sealed")[-1]["decision"]
            assert set(decided) == {"sealed"}
            assert decide_thread("t-sealed", decided) == TaskState.COMPLETED.value
        finally:
            WORKFLOWS.close_all()
        with Workflow(settings) as workflow:
            assert b"Rosetta" in workflow.artifact("t-sealed", "article")
