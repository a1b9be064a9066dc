"""A served thread's history is never deleted, pruned, rolled back by run or copied.

Through langgraph-sdk against a real ``langgraph dev``, on a thread waiting for a decision
(the server's, and one the CLI started in the same database): deleting or pruning it,
deleting one of its runs, or copying it is refused with the reason, and the thread keeps
its checkpoints, its pending request and its audit, so its decision is still answered. A
run without a thread, which would delete the thread it makes when it ends, is refused too
(a cron without a thread as well, or switched to it), unless it keeps that thread.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from app.exit_codes import ExitCode
from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import RunOutcome, TaskState
from tests.conftest import OBJECTIVE
from tests.server.conftest import RunningServer, approval, cli_in, start, task, waiting
from tests.server.test_served_thread_rules import saved
from tests.server.test_server_auth import refused

pytestmark = pytest.mark.server


async def cli_waiting(server: RunningServer, client: LangGraphClient) -> str:
    """A thread the CLI started and left waiting, registered with the server as a client would."""
    thread_id = str(uuid.uuid4())
    code, output = await cli_in(
        server.folder, "run", OBJECTIVE, "--thread", thread_id, "--require-approval"
    )
    assert code == ExitCode.WAITING_FOR_HUMAN, output
    await client.threads.create(thread_id=thread_id, if_exists="do_nothing")
    return thread_id


def test_a_thread_with_history_is_not_deleted_pruned_or_rolled_back_by_deleting_its_run(
    dev_server: RunningServer,
) -> None:
    async def scenario() -> tuple[list[tuple[int, str]], dict[str, Any], list[Any], int]:
        client = get_client(url=dev_server.url)
        served, request = await start(client, "history-delete")
        cli = await cli_waiting(dev_server, client)
        before = {thread_id: saved(dev_server, thread_id) for thread_id in (served, cli)}
        [run] = await client.runs.list(served)
        answers = [
            await refused(client.threads.delete(served)),
            await refused(client.threads.delete(cli)),
            await refused(client.threads.prune([cli])),
            await refused(client.runs.delete(served, run["run_id"])),
        ]
        after = {thread_id: saved(dev_server, thread_id) for thread_id in (served, cli)}
        assert after == before, "a refused delete changed a thread"
        assert await waiting(client, served) == request
        outcomes = [
            await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(pending)})
            for thread_id, pending in ((served, request), (cli, before[cli][1]))
        ]
        empty = (await client.threads.create())["thread_id"]
        await client.threads.delete(empty)  # nothing to lose: a thread without history goes
        return answers, before, outcomes, len(await client.threads.search(ids=[empty]))

    answers, before, outcomes, left = asyncio.run(scenario())
    for status, body in answers[:3]:
        assert status == 403, (status, body)
        assert "not deleted" in body and "has history" in body and "pending request" in body
        assert "nothing was deleted" in body, body
    served, cli = before
    assert served in answers[0][1] and cli in answers[1][1] and cli in answers[2][1]
    assert answers[3][0] == 403 and "a run's checkpoints" in answers[3][1], answers[3]
    for outcome in outcomes:
        assert RunOutcome.model_validate(outcome["outcome"]).state == TaskState.COMPLETED
    assert left == 0


def test_a_thread_is_not_copied_into_a_second_history(dev_server: RunningServer) -> None:
    async def scenario() -> tuple[tuple[int, str], tuple[int, str], int, int]:
        client = get_client(url=dev_server.url)
        served, _ = await start(client, "history-copy")
        cli = await cli_waiting(dev_server, client)
        before = len(await client.threads.search(limit=1000))
        answers = (
            await refused(client.threads.copy(served)),
            await refused(client.threads.copy(cli)),
        )
        return *answers, before, len(await client.threads.search(limit=1000))

    served, cli, before, after = asyncio.run(scenario())
    for status, body in (served, cli):
        assert status == 403, (status, body)
        assert "not copied" in body and "second history" in body and "new thread" in body, body
    assert after == before, "a refused copy left a thread behind"


def test_a_run_without_a_thread_that_would_delete_it_is_refused_unless_it_keeps_it(
    dev_server: RunningServer,
) -> None:
    async def scenario() -> tuple[list[tuple[int, str]], Any, str]:
        client = get_client(url=dev_server.url)
        answers = [
            await refused(client.runs.wait(None, GRAPH_ID, input=task("threadless"))),
            await refused(client.runs.create(None, GRAPH_ID, input=task("threadless-2"))),
            await refused(client.crons.create(GRAPH_ID, schedule="0 0 1 1 *", input=task("cron"))),
        ]
        cron = await client.crons.create(
            GRAPH_ID, schedule="0 0 1 1 *", input=task("cron-kept"), on_run_completed="keep"
        )
        answers.append(
            await refused(client.crons.update(cron["cron_id"], on_run_completed="delete"))
        )
        await client.crons.delete(cron["cron_id"])
        kept = await client.runs.create(
            None, GRAPH_ID, input=task("threadless-kept"), on_completion="keep"
        )
        await client.runs.join(kept["thread_id"], kept["run_id"])
        request = await waiting(client, kept["thread_id"])
        return answers, request, kept["thread_id"]

    answers, request, kept = asyncio.run(scenario())
    for status, body in answers:
        assert status == 422, (status, body)
        assert "without a thread" in body and "='keep'" in body, body
    assert all("nothing was run" in body for _, body in answers[:2]), answers
    assert "crons.create_for_thread" in answers[2][1] and "nothing was scheduled" in answers[2][1]
    assert "on_run_completed='keep'" in answers[3][1] and "nothing was changed" in answers[3][1]
    with Workflow(dev_server.settings) as workflow:
        assert workflow.pending(kept) == request, "the kept thread still waits for its decision"
