"""A cancelled or superseded served run lets go of its thread only when its node has stopped.

Cancelling a served run cancels the asyncio task awaiting the node, not the worker thread
running the node's body. Each round holds the writer inside its attempt
(``HANDOFF_FAULT=wait:writer:<gate>``), cancels the run (``runs.cancel``, or a new run with
``multitask_strategy="interrupt"``), and tries ``handoff resume`` while the node still runs:
it must be refused as busy. Once the gate opens, the thread finishes, and the audit shows
exactly one attempt at a time: no two attempts' start–end intervals overlap, and the
writer's work is done once (the resume reuses the attempt the cancelled run finished).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from app.exit_codes import ExitCode
from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import NodeRun, TaskState
from tests.server.conftest import (
    RunningServer,
    approval,
    cli_resume,
    start,
    writing,
)

pytestmark = pytest.mark.server

ROUNDS = 20
BUSY_RETRY_SECONDS = 60.0


async def resume_once_free(folder: Path, thread_id: str) -> tuple[int, str]:
    """``handoff resume`` until it is no longer refused as busy."""
    deadline = asyncio.get_running_loop().time() + BUSY_RETRY_SECONDS
    while True:
        code, output = await cli_resume(folder, thread_id)
        if code != ExitCode.THREAD_BUSY or asyncio.get_running_loop().time() > deadline:
            return code, output
        await asyncio.sleep(0.2)


def overlapping(runs: list[NodeRun]) -> list[tuple[str, str]]:
    """Pairs of attempts whose start–end intervals overlap (an unfinished one never ends)."""
    never = datetime.max.replace(tzinfo=UTC)
    spans = sorted((run.started_at, run.ended_at or never, run) for run in runs)
    return [
        (f"{a.node_id}#{a.attempt}", f"{b.node_id}#{b.attempt}")
        for (_, a_end, a), (b_start, _, b) in zip(spans, spans[1:], strict=False)
        if a_end > b_start
    ]


@dataclass(frozen=True)
class Round:
    """What one round saw: the busy refusal, the later resume, how a superseding run ended."""

    thread_id: str
    how: str
    busy: tuple[int, str]
    resumed: tuple[int, str]
    superseding_run: str | None

    def told(self) -> str:
        code, output = self.resumed
        return (
            f"{self.thread_id} ({self.how}): superseding run {self.superseding_run}; "
            f"resume exit {code}: {output[:400]}"
        )


async def one_round(server: RunningServer, workflow: Workflow, number: int, how: str) -> Round:
    """Cancel (``how``: cancel or supersede) a run held in its writer, then resume from the CLI."""
    client = get_client(url=server.url)
    gate = server.folder / "gate"
    gate.unlink(missing_ok=True)
    thread_id, request = await start(client, f"cancel-{number}")
    run = await client.runs.create(thread_id, GRAPH_ID, command={"resume": approval(request)})
    await writing(workflow, thread_id)
    superseding = None
    if how == "cancel":
        await client.runs.cancel(thread_id, run["run_id"], action="interrupt")
    else:
        superseding = await client.runs.create(thread_id, GRAPH_ID, multitask_strategy="interrupt")
    await asyncio.sleep(0.5)  # the cancelled run's task has ended by now; its node has not
    busy_code, busy_output = await cli_resume(server.folder, thread_id)
    gate.touch()
    superseded_by = None
    if superseding is not None:
        joined = await client.runs.join(thread_id, superseding["run_id"])
        ended = await client.runs.get(thread_id, superseding["run_id"])
        # shown when the round fails: how that run ended, and its error if it had one
        superseded_by = f"{ended['status']} {joined.get('__error__', '') if joined else ''}"
    code, output = await resume_once_free(server.folder, thread_id)
    return Round(thread_id, how, (busy_code, busy_output), (code, output), superseded_by)


def test_a_cancelled_served_run_keeps_the_thread_until_its_node_stops(
    gated_server: RunningServer,
) -> None:
    async def rounds(workflow: Workflow) -> list[Round]:
        return [
            await one_round(gated_server, workflow, number, ("cancel", "supersede")[number % 2])
            for number in range(ROUNDS)
        ]

    with Workflow(gated_server.settings) as workflow:
        results = asyncio.run(rounds(workflow))
        for result in results:
            thread_id = result.thread_id
            busy_code, busy_output = result.busy
            assert busy_code == ExitCode.THREAD_BUSY, result
            assert "is busy" in busy_output and "Traceback" not in busy_output, result
            code, _ = result.resumed
            if result.how == "supersede":  # the superseding run finished the thread
                assert code == ExitCode.ALREADY_FINISHED, result.told()
            else:
                assert code == ExitCode.COMPLETED, result.told()
            assert workflow.outcome(thread_id).state == TaskState.COMPLETED
            runs = workflow.history(thread_id)
            assert not overlapping(runs), f"{thread_id}: {overlapping(runs)}"
            done = Counter(
                (run.node_id, run.input_hash)
                for run in runs
                if run.status == "succeeded" and not run.reused
            )
            assert max(done.values()) == 1, f"{thread_id}: a node did its work twice: {done}"
            assert not [run for run in runs if run.status == "running"]
