"""The workflow served as an A2A agent, driven by the a2a-sdk client against a real server.

Each test starts ``handoff a2a`` as a subprocess on SQLite and on PostgreSQL and checks
what a client sees against what the thread stored: the contracts, their hashes, the
audit, and ``handoff status`` of the same thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import urllib.error
import urllib.request

import pytest
from a2a.types import AgentCard, CancelTaskRequest, ListTasksRequest, TaskState
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from google.protobuf.json_format import ParseDict

from app.a2a.tasks import CONTRACT_ARTIFACTS
from contracts import (
    DraftArticle,
    HumanDecision,
    HumanRequest,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
)
from tests.app.a2a.conftest import (
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
    stream,
    text_message,
    writer_started,
)
from tests.cli import handoff
from tests.conftest import OBJECTIVE

pytestmark = [pytest.mark.e2e]

CONTRACTS = {"research": ResearchBundle, "draft": DraftArticle, "review": ReviewResult}


def test_agent_card_validates_against_the_sdk_types(a2a_server: A2AServer) -> None:
    a2a_server.start()
    with urllib.request.urlopen(f"{a2a_server.url}.well-known/agent-card.json") as response:
        served = json.load(response)
    card = ParseDict(served, AgentCard())  # unknown or mistyped fields raise here
    assert card.name == "handoff"
    assert card.capabilities.streaming
    assert card.supported_interfaces[0].url == a2a_server.url
    assert card.supported_interfaces[0].protocol_binding == "JSONRPC"
    (skill,) = card.skills
    assert skill.id == "research-write-review"
    for field in (
        "objective",
        "constraints.max_words",
        "constraints.required_sections",
        "questions",
        "corpus",
    ):
        assert f"{field}:" in skill.description
    assert "corpus roots" in skill.description
    assert "application/json" in card.default_input_modes
    assert "text/markdown" in card.default_output_modes


def test_send_completes_with_the_article_and_three_contract_artifacts(
    a2a_server: A2AServer,
) -> None:
    a2a_server.start()

    async def scenario() -> None:
        async with client_of(a2a_server) as client:
            task = await send(client, spec_message(UNATTENDED))
            assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
            assert task.metadata["result_status"] == "completed"
            read = await get(client, task.id)
            assert read.status.state == task.status.state
            assert [a.name for a in read.artifacts] == ["article", *CONTRACT_ARTIFACTS]
            assert read.artifacts == task.artifacts, "the stream ended where tasks/get stands"
            with a2a_server.workflow() as workflow:
                assert read.context_id == workflow.state(task.id)["task"].task_id
                article = read.artifacts[0]
                text = article.parts[0].text.encode()
                assert hashlib.sha256(text).hexdigest() == article.metadata["sha256"]
                assert workflow.artifact(task.id, "article") == text
                for artifact in read.artifacts[1:]:
                    contract = CONTRACTS[artifact.name].model_validate(data_of(artifact.parts[0]))
                    assert contract == workflow.state(task.id)[artifact.name]
                    assert artifact.metadata["schema_version"] == contract.schema_version
                    stored = workflow.artifact(task.id, artifact.name)
                    assert hashlib.sha256(stored).hexdigest() == artifact.metadata["sha256"]
                    ref = workflow.artifact_ref(task.id, artifact.name)
                    assert artifact.metadata["revision"] == ref.revision
            outcome = RunOutcome.model_validate(data_of(read.status.message.parts[1]))
            assert outcome.thread_id == task.id
            status = status_json(a2a_server, task.id)
            assert status["outcome"]["state"] == TaskState.Name(read.status.state)
            assert status["outcome"]["result_status"] == read.metadata["result_status"]
            ran = f"a2a: run {task.id}: TASK_STATE_COMPLETED in "  # one line per task
            assert sum(ran in line for line in a2a_server.tail().splitlines()) == 1, (
                a2a_server.tail()
            )

    asyncio.run(scenario())


def test_a_streamed_task_reports_each_node_and_ends_where_tasks_get_stands(
    a2a_server: A2AServer,
) -> None:
    a2a_server.start()

    async def scenario() -> None:
        async with client_of(a2a_server, streaming=True) as client:
            events = await stream(client, text_message(OBJECTIVE))
            first = events[0].task
            assert first.status.state == TaskState.TASK_STATE_SUBMITTED
            updates = [e.status_update for e in events if e.HasField("status_update")]
            states = [u.status.state for u in updates]
            assert states[0] == TaskState.TASK_STATE_WORKING
            assert states[-1] == TaskState.TASK_STATE_COMPLETED
            nodes = [u.metadata["node"] for u in updates if "node" in u.metadata]
            assert "writer" in nodes and "reviewer" in nodes
            writer = next(
                u for u in updates if "node" in u.metadata and u.metadata["node"] == "writer"
            )
            assert writer.status.message.parts[0].text.startswith("writer: ")
            streamed = [
                e.artifact_update.artifact.name for e in events if e.HasField("artifact_update")
            ]
            assert streamed == ["article", *CONTRACT_ARTIFACTS]
            read = await get(client, first.id)
            assert read.status.state == states[-1]
            with a2a_server.workflow() as workflow:
                assert workflow.state(first.id)["task"].objective == OBJECTIVE

    asyncio.run(scenario())


def test_a_pause_is_input_required_and_an_invalid_decision_changes_nothing(
    a2a_server: A2AServer,
) -> None:
    a2a_server.start()

    async def scenario() -> None:
        async with client_of(a2a_server) as client:
            task = await paused(client)
            parts = task.status.message.parts
            request = HumanRequest.model_validate(data_of(parts[1]))
            schema = data_of(parts[2])
            assert set(schema["properties"]) >= {"interrupt_id", "action"}
            assert request.thread_id == task.id
            wrong = {"interrupt_id": request.interrupt_id, "action": "publish-now"}
            with pytest.raises(InvalidParamsError, match="action"):
                await send(client, data_message(wrong, task_id=task.id, context_id=task.context_id))
            with pytest.raises(InvalidParamsError, match="HumanDecision"):
                await send(client, text_message("yes please", task_id=task.id))
            still = await get(client, task.id)
            assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert (
                status_json(a2a_server, task.id)["outcome"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            )
            decision = HumanDecision(
                interrupt_id=request.interrupt_id, action="approve", decided_by="a2a test"
            )
            done = await send(
                client, data_message(decision.model_dump(mode="json"), task_id=task.id)
            )
            assert done.status.state == TaskState.TASK_STATE_COMPLETED, done.status
            assert [a.name for a in done.artifacts] == ["article", *CONTRACT_ARTIFACTS]

    asyncio.run(scenario())


def test_a_follow_up_on_an_ended_task_is_a_new_task_and_the_old_one_is_unchanged(
    a2a_server: A2AServer,
) -> None:
    a2a_server.start()

    async def scenario() -> None:
        async with client_of(a2a_server) as client:
            first = await send(client, spec_message(UNATTENDED))
            assert first.status.state == TaskState.TASK_STATE_COMPLETED
            with pytest.raises(UnsupportedOperationError, match="reference_task_ids"):
                await send(client, text_message("again", task_id=first.id))
            revision = {"max_words": 250, "reason": "shorter, please"}  # a revision by its fields
            with pytest.raises(InvalidParamsError, match='add "kind": "task_revision"'):
                await send(
                    client,
                    data_message({**revision, "objective": "x"}, reference_task_ids=[first.id]),
                )
            second = await send(
                client,
                data_message(revision, reference_task_ids=[first.id], context_id=first.context_id),
            )
            assert second.id != first.id
            assert second.context_id == first.context_id
            assert second.status.state == TaskState.TASK_STATE_COMPLETED, second.status
            assert second.metadata["refines"] == first.id
            assert second.metadata["task_version"] == 2
            revised = handoff(
                "revise",
                first.id,
                "--max-words",
                "200",
                "--reason",
                "in place",
                env=a2a_server.env(),
            )
            assert revised.returncode == 6 and "ended sealed" in revised.stderr, revised.stderr
            after = await get(client, first.id)
            assert after.artifacts == first.artifacts
            assert after.status.state == first.status.state
            listed = await client.list_tasks(ListTasksRequest(context_id=first.context_id))
            assert {task.id for task in listed.tasks} == {first.id, second.id}
            assert all(not task.artifacts for task in listed.tasks), "asked for none"
            with a2a_server.workflow() as workflow:
                assert workflow.state(second.id)["task"].constraints.max_words == 250
                assert workflow.state(first.id)["task"].task_version == 1

    asyncio.run(scenario())


def test_cancel_while_working_is_the_audited_cancel(a2a_server: A2AServer) -> None:
    gate = a2a_server.folder / "open-writer"
    a2a_server.start(HANDOFF_FAULT=f"wait:writer:{gate}")

    async def scenario() -> None:
        async with client_of(a2a_server) as client:
            task = await send(client, spec_message(UNATTENDED), immediately=True)
            await writer_started(a2a_server)
            with pytest.raises(UnsupportedOperationError, match="busy"):
                await send(client, text_message("hurry", task_id=task.id))
            cancelling = asyncio.ensure_future(client.cancel_task(CancelTaskRequest(id=task.id)))
            await asyncio.sleep(0.5)
            gate.touch()  # the writer finishes its step; the run stops after it
            cancelled = await cancelling
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            read = await get(client, task.id)
            assert read.status.state == TaskState.TASK_STATE_CANCELED
            with a2a_server.workflow() as workflow:
                assert workflow.outcome(task.id).state.value == "TASK_STATE_CANCELED"
                labels = [run.node_id for run in workflow.history(task.id)]
                assert "cancel by a2a client" in labels
                assert "reviewer" not in labels, "the run stopped after the writer's step"
                assert all(run.status != "running" for run in workflow.history(task.id))
            assert status_json(a2a_server, task.id)["outcome"]["state"] == "TASK_STATE_CANCELED"

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_server_killed_mid_task_restarts_truthful_and_a_resend_resumes(
    a2a_server: A2AServer,
) -> None:
    a2a_server.start(HANDOFF_FAULT="kill:writer:start")

    async def killed() -> str:
        async with client_of(a2a_server) as client:
            task = await send(client, spec_message(UNATTENDED), immediately=True)
            return task.id

    thread_id = asyncio.run(killed())
    assert a2a_server.wait_killed() != 0
    a2a_server.start()

    async def resumed() -> None:
        async with client_of(a2a_server) as client:
            stopped = await get(client, thread_id)
            assert stopped.status.state == TaskState.TASK_STATE_WORKING
            assert stopped.metadata["running"] is False
            assert (
                "send any message to this task to resume it" in stopped.status.message.parts[0].text
            )
            assert status_json(a2a_server, thread_id)["outcome"]["state"] == "TASK_STATE_WORKING"
            done = await send(client, text_message("resume", task_id=thread_id))
            assert done.status.state == TaskState.TASK_STATE_COMPLETED, done.status
            with a2a_server.workflow() as workflow:
                runs = workflow.history(thread_id)
                researched = [
                    r for r in runs if r.node_id.startswith("research") and r.status == "succeeded"
                ]
                branches = {r.node_id for r in researched}
                assert len(researched) == len(branches), "no finished research was redone"
                assert sum(r.node_id == "writer" and r.status == "succeeded" for r in runs) == 1
            assert status_json(a2a_server, thread_id)["outcome"]["state"] == "TASK_STATE_COMPLETED"

    asyncio.run(resumed())


def test_bad_input_is_refused_naming_the_field_and_makes_no_task(a2a_server: A2AServer) -> None:
    a2a_server.start()
    outside = a2a_server.folder.parent / "elsewhere"
    outside.mkdir()
    (outside / "notes.md").write_text("# Notes\n\nA sentence to read.\n", encoding="utf-8")

    async def scenario() -> None:
        async with client_of(a2a_server) as client:
            too_long = {"objective": OBJECTIVE, "constraints": {"max_words": -3}}
            with pytest.raises(InvalidParamsError, match=r"constraints\.max_words"):
                await send(client, spec_message(too_long))
            with pytest.raises(InvalidParamsError, match="corpus roots|outside"):
                await send(client, spec_message({"objective": OBJECTIVE, "corpus": [str(outside)]}))
            with pytest.raises(InvalidParamsError, match="empty message"):
                await send(client, text_message("   "))
            with pytest.raises(InvalidParamsError, match="context_id"):
                await send(
                    client, spec_message({**UNATTENDED, "task_id": "mine"}, context_id="other")
                )
        with a2a_server.workflow() as workflow:
            assert workflow.threads() == [], "nothing refused was saved"

    asyncio.run(scenario())
    oversized = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"x": "y" * 2_000_000}}
    )
    request = urllib.request.Request(
        a2a_server.url, data=oversized.encode(), headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 413
    small = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}})
    as_a_form_would = urllib.request.Request(  # a page on another site can send this unasked
        a2a_server.url, data=small.encode(), headers={"Content-Type": "text/plain"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(as_a_form_would)
    assert refused.value.code == 415
    deep = b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"x": '
    deep += b"[" * 100_000 + b"]" * 100_000 + b"}}"
    nested = urllib.request.Request(
        a2a_server.url, data=deep, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(nested) as answered:
        error = json.loads(answered.read())["error"]
    assert error["code"] == -32700, error
    assert "nests deeper than" in error["message"] and "\n" not in error["message"]
