"""The served task's lifecycle at its edges: races, cancels from every state, rejections,
subscriptions to what is not running, and requests the server must not take.

Each test drives a real ``handoff a2a`` (SQLite and PostgreSQL) with the a2a-sdk client and
checks the thread's own record, and ``handoff status``, against what the client was told.
"""

from __future__ import annotations

import asyncio
import http.client
import json
from datetime import UTC, datetime

import pytest
from a2a.types import CancelTaskRequest, SubscribeToTaskRequest, TaskState
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError

from contracts import ErrorCode, HumanDecision, HumanRequest, RunOutcome
from graphs.human import EXPIRED
from tests.app.a2a.conftest import (
    APPROVAL,
    UNATTENDED,
    A2AServer,
    client_of,
    data_message,
    data_of,
    get,
    paused,
    send,
    spec_message,
    status_json,
    writer_started,
)

pytestmark = [pytest.mark.e2e]


def decision(task: object, action: str, **fields: str) -> dict[str, object]:
    request = HumanRequest.model_validate(data_of(task.status.message.parts[1]))  # type: ignore[attr-defined]
    made = HumanDecision(interrupt_id=request.interrupt_id, action=action, **fields)
    return made.model_dump(mode="json")


def test_two_decisions_sent_at_once_are_one_applied_and_one_refused(a2a_server: A2AServer) -> None:
    a2a_server.start()

    async def scenario() -> None:
        async with client_of(a2a_server) as first, client_of(a2a_server) as second:
            task = await paused(first)
            approve = data_message(decision(task, "approve"), task_id=task.id)
            reject = data_message(decision(task, "reject", reason="not good"), task_id=task.id)
            answers = await asyncio.gather(
                send(first, approve), send(second, reject), return_exceptions=True
            )
            refused = [a for a in answers if isinstance(a, UnsupportedOperationError)]
            applied = [a for a in answers if not isinstance(a, BaseException)]
            assert len(refused) == 1 and len(applied) == 1, answers
            assert "busy" in str(refused[0]) or "has ended" in str(refused[0])
            read = await get(first, task.id)
            assert read.status.state == applied[0].status.state
            assert read.status.state in (
                TaskState.TASK_STATE_COMPLETED,
                TaskState.TASK_STATE_REJECTED,
            )
            with a2a_server.workflow() as workflow:
                asked = [r for r in workflow.history(task.id) if r.node_id == "approve_research"]
                assert len([r for r in asked if r.status == "succeeded"]) == 1, "decided once"

    asyncio.run(scenario())


def test_a_person_rejecting_the_research_ends_the_task_rejected(a2a_server: A2AServer) -> None:
    a2a_server.start()

    async def scenario() -> None:
        async with client_of(a2a_server) as client:
            task = await paused(client)
            no = data_message(decision(task, "reject", reason="wrong sources"), task_id=task.id)
            ended = await send(client, no)
            assert ended.status.state == TaskState.TASK_STATE_REJECTED
            outcome = RunOutcome.model_validate(data_of(ended.status.message.parts[1]))
            assert [error.code for error in outcome.errors] == [ErrorCode.HUMAN_REJECTED]
            assert ended.metadata["result_status"] == "failed"
            assert status_json(a2a_server, task.id)["outcome"]["state"] == "TASK_STATE_REJECTED"

    asyncio.run(scenario())


def test_an_approval_sent_after_the_expiry_is_refused_and_the_default_recorded(
    a2a_server: A2AServer,
) -> None:
    a2a_server.start()
    expiring = {**APPROVAL, "policies": {"require_approval": True, "decision_timeout": "1s"}}

    async def scenario() -> None:
        async with client_of(a2a_server) as client:
            task = await send(client, spec_message(expiring))
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task.status
            request = HumanRequest.model_validate(data_of(task.status.message.parts[1]))
            assert request.expires_at is not None
            await asyncio.sleep((request.expires_at - datetime.now(UTC)).total_seconds() + 0.1)
            late = data_message(decision(task, "approve"), task_id=task.id)
            with pytest.raises(InvalidParamsError, match="can no longer be answered"):
                await send(client, late)
            assert (await get(client, task.id)).status.state == TaskState.TASK_STATE_REJECTED
            with a2a_server.workflow() as workflow:
                log = workflow.state(task.id)["decisions"]
            assert [(d.action, d.decided_by) for d in log.decisions] == [("reject", EXPIRED)]

    asyncio.run(scenario())


def test_the_sender_of_a_cancelled_task_is_told_it_was_cancelled(a2a_server: A2AServer) -> None:
    gate = a2a_server.folder / "open-writer"
    a2a_server.start(HANDOFF_FAULT=f"wait:writer:{gate}")

    async def scenario() -> None:
        async with client_of(a2a_server) as sender, client_of(a2a_server) as other:
            sending = asyncio.ensure_future(send(sender, spec_message(UNATTENDED)))
            task_id = await writer_started(a2a_server)
            cancelling = asyncio.ensure_future(other.cancel_task(CancelTaskRequest(id=task_id)))
            await asyncio.sleep(0.5)
            gate.touch()
            cancelled, told = await cancelling, await sending
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            assert told.status.state == TaskState.TASK_STATE_CANCELED, "the blocking send"
            assert status_json(a2a_server, task_id)["outcome"]["state"] == "TASK_STATE_CANCELED"

    asyncio.run(scenario())


def test_a_waiting_task_is_cancelled_by_a_restarted_server_as_the_cli_would(
    a2a_server: A2AServer,
) -> None:
    a2a_server.start()

    async def waiting() -> str:
        async with client_of(a2a_server) as client:
            return (await paused(client)).id

    task_id = asyncio.run(waiting())
    a2a_server.stop()
    a2a_server.start()

    async def cancelled() -> None:
        async with client_of(a2a_server) as client, client_of(a2a_server, streaming=True) as live:
            with pytest.raises(UnsupportedOperationError, match="not running in this server"):
                async for _ in live.subscribe(SubscribeToTaskRequest(id=task_id)):
                    pass
            ended = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert ended.status.state == TaskState.TASK_STATE_CANCELED
            assert (await get(client, task_id)).status.state == TaskState.TASK_STATE_CANCELED
            with a2a_server.workflow() as workflow:
                labels = [run.node_id for run in workflow.history(task_id)]
                assert "cancel by a2a client" in labels
                assert workflow.pending(task_id) is None, "its request was withdrawn"

    asyncio.run(cancelled())


def test_requests_a_browser_or_a_rebound_name_could_send_are_refused(
    a2a_server: A2AServer,
) -> None:
    a2a_server.start()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}})

    def post(headers: dict[str, str], chunks: list[bytes] | None = None) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", a2a_server.port, timeout=30)
        try:
            if chunks is None:
                connection.request("POST", "/", body=body.encode(), headers=headers)
            else:
                connection.request(
                    "POST", "/", body=iter(chunks), headers=headers, encode_chunked=True
                )
            return connection.getresponse().status
        finally:
            connection.close()

    json_type = {"Content-Type": "application/json"}
    assert post(json_type) == 200
    assert post({**json_type, "Host": f"attacker.example:{a2a_server.port}"}) == 400
    big = [b"{" + b" " * 600_000, b" " * 600_000 + b"}"]  # no Content-Length: sent in chunks
    assert post({**json_type, "Transfer-Encoding": "chunked"}, big) == 413
