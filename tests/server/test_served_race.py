"""One writer per thread, whichever way in: a served run and a CLI resume race for a thread.

Each round resumes one waiting thread twice: through the server (langgraph-sdk
``runs.wait`` with ``Command(resume=…)``) and through ``handoff resume`` in its own
process, the second while the first is held inside the writer (``HANDOFF_FAULT=wait:…``
keeps it there until the test opens a gate file, so the overlap does not depend on how
fast either process starts).
Exactly one may proceed; the other must be told the thread is busy, and the thread must
keep a single chain of checkpoints with no node run twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from langgraph_sdk import get_client

from app.exit_codes import ExitCode
from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import HumanRequest, TaskState
from tests.server.conftest import (
    RunningServer,
    approval,
    cli_resume,
    start,
    writing,
)

pytestmark = pytest.mark.server

ROUNDS = 20


async def race(
    server: RunningServer, workflow: Workflow, thread_id: str, request: HumanRequest, first: str
) -> dict[str, Any]:
    """Both resumes of one thread; the second runs while the first is held in the writer.

    ``first`` alternates between rounds, so each side is the one turned away in half of
    them. The first is let go (the gate opens) only once the second has had its answer.
    """
    client = get_client(url=server.url)

    def served() -> Any:
        return client.runs.wait(
            thread_id, GRAPH_ID, command={"resume": approval(request)}, raise_error=False
        )

    gate = server.folder / "gate"
    gate.unlink(missing_ok=True)
    if first == "server":
        leader = asyncio.create_task(served())
        await writing(workflow, thread_id)
        code, cli_output = await cli_resume(server.folder, thread_id, "--approve")
        gate.touch()
        outcome = await leader
    else:
        leading = asyncio.create_task(cli_resume(server.folder, thread_id, "--approve"))
        await writing(workflow, thread_id)
        outcome = await served()
        gate.touch()
        code, cli_output = await leading
    return {"first": first, "served": outcome, "cli_code": code, "cli_output": cli_output}


def served_error(served: Any) -> str | None:
    """The error a served run ended with, or None if it ran."""
    if isinstance(served, dict) and "__error__" in served:
        error = served["__error__"]
        return f"{error.get('error')}: {error.get('message')}"
    return None


def single_chain(workflow: Workflow, thread_id: str) -> None:
    """Every checkpoint has a distinct parent: the chain never forked."""
    tuples = list(workflow.saver.list({"configurable": {"thread_id": thread_id}}))
    parents = [
        item.parent_config["configurable"]["checkpoint_id"]
        for item in tuples
        if item.parent_config and item.config["configurable"].get("checkpoint_ns", "") == ""
    ]
    forks = [parent for parent, count in Counter(parents).items() if count > 1]
    assert not forks, f"{thread_id}: checkpoints {forks} have more than one child"


def test_a_served_resume_and_a_cli_resume_never_both_proceed(gated_server: RunningServer) -> None:
    async def rounds(workflow: Workflow) -> list[tuple[str, dict[str, Any]]]:
        client = get_client(url=gated_server.url)
        results = []
        for number in range(ROUNDS):
            thread_id, request = await start(client, f"race-{number}")
            first = ("server", "cli")[number % 2]
            results.append(
                (thread_id, await race(gated_server, workflow, thread_id, request, first))
            )
        return results

    winners = Counter[str]()
    with Workflow(gated_server.settings) as workflow:
        results = asyncio.run(rounds(workflow))
        for thread_id, result in results:
            served_refusal = served_error(result["served"])
            cli_won = result["cli_code"] == ExitCode.COMPLETED
            served_won = served_refusal is None
            assert cli_won != served_won, f"{thread_id}: exactly one proceeds: {result}"
            assert ("cli" if cli_won else "server") == result["first"], result
            if cli_won:
                winners["cli"] += 1
                assert served_refusal is not None and "is busy" in served_refusal, result
            else:
                winners["server"] += 1
                assert result["cli_code"] == ExitCode.THREAD_BUSY, result
                assert "is busy" in result["cli_output"], result
                assert "Traceback" not in result["cli_output"]
            assert workflow.outcome(thread_id).state == TaskState.COMPLETED
            single_chain(workflow, thread_id)
            done = Counter(
                (run.node_id, run.input_hash)
                for run in workflow.history(thread_id)
                if run.status == "succeeded"
            )
            assert max(done.values()) == 1, f"{thread_id}: a node ran twice: {done}"
    print(f"race winners over {ROUNDS} rounds: {dict(winners)}")


def test_a_late_served_decision_on_a_finished_thread_is_refused(
    gated_server: RunningServer,
) -> None:
    async def late() -> Any:
        client = get_client(url=gated_server.url)
        thread_id, request = await start(client, "race-late")
        (gated_server.folder / "gate").touch()  # nothing to race here: let the writer go
        code, output = await cli_resume(gated_server.folder, thread_id, "--approve")
        assert code == ExitCode.COMPLETED, output
        return await client.runs.wait(
            thread_id, GRAPH_ID, command={"resume": approval(request)}, raise_error=False
        )

    refusal = served_error(asyncio.run(late()))
    assert refusal is not None and "is complete" in refusal and "nothing was changed" in refusal


def test_a_served_state_update_of_a_thread_being_resumed_is_refused_and_writes_nothing(
    gated_server: RunningServer,
) -> None:
    async def update_while_held() -> tuple[str | None, int, int, int]:
        client = get_client(url=gated_server.url)
        thread_id, _ = await start(client, "race-update")
        gate = gated_server.folder / "gate"
        gate.unlink(missing_ok=True)
        with Workflow(gated_server.settings) as workflow:
            leading = asyncio.create_task(cli_resume(gated_server.folder, thread_id, "--approve"))
            await writing(workflow, thread_id)
            before = workflow.checkpoint_count(thread_id)
            refusal: str | None = None
            try:
                await client.threads.update_state(thread_id, {"freshness": None})
            except Exception as error:  # the SDK raises the server's error response
                refusal = f"{error} {getattr(getattr(error, 'response', None), 'text', '')}"
            after = workflow.checkpoint_count(thread_id)
            gate.touch()
            code, _ = await leading
        return refusal, before, after, code

    refusal, before, after, code = asyncio.run(update_while_held())
    # The server refuses every state edit (app/server/auth.py) before the lock is tried.
    assert refusal is not None and "does not let clients edit a thread's state" in refusal
    assert after == before, "the refused update wrote no checkpoint"
    assert code == ExitCode.COMPLETED, "the resume that held the thread finished"
