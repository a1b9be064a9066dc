"""Acceptance: the workflow served by ``langgraph dev`` and driven through langgraph-sdk.

Same contracts and same artifacts as the CLI: every value the server returns validates as
its contract, the article's bytes match the sha256 the thread recorded, and the CLI reads
(and can finish) threads the server started, because the server checkpoints into the
project's database.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import (
    DecisionLog,
    Handoff,
    HumanRequest,
    RecordedDecision,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs import workflow_channels
from graphs.boundary import validate_channel
from graphs.decision_schema import IGNORED
from graphs.human import EXPIRED
from graphs.nodes.approve_research import APPROVAL
from graphs.pauses import INBOX_RESPONSES
from tests import forked
from tests.conftest import OBJECTIVE
from tests.server.conftest import RunningServer, approval, check_article, start, waiting

pytestmark = pytest.mark.server


def validated_state(values: dict[str, Any]) -> dict[str, Any]:
    """Every channel of a state (as the server returns it: JSON) as its contract."""
    return {
        channel: validate_channel("sdk", channel, value, workflow_channels())
        for channel, value in values.items()
        if value is not None
    }


def handoff_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI, run where the server runs: it reads the same .env, so the same database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    return forked.run(args, env=env, cwd=folder, timeout=60)


def test_run_interrupt_and_resume_through_the_sdk(dev_server: RunningServer) -> None:
    async def until_interrupted() -> tuple[str, HumanRequest]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "sdk-main")
        assert (await client.threads.get(thread_id))["status"] == "interrupted"
        return thread_id, request

    async def answer(thread_id: str, request: HumanRequest) -> tuple[Any, dict[str, Any]]:
        client = get_client(url=dev_server.url)
        wrong_id = approval(request, interrupt_id="approve-research-s99")
        not_allowed = approval(request, action="grant_round")
        for invalid, field, reason in (
            (wrong_id, "interrupt_id", "does not match the open request"),
            (not_allowed, "action", "is not allowed here"),
        ):
            with pytest.raises(Exception, match="ValidationError") as refused:
                await client.runs.wait(thread_id, GRAPH_ID, command={"resume": invalid})
            assert field in str(refused.value) and reason in str(refused.value)
            assert await waiting(client, thread_id) == request, "still waiting, same request"

        output = await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)})
        state = await client.threads.get_state(thread_id)
        assert state["next"] == [] and state["interrupts"] == []
        return output, state["values"]

    thread_id, request = asyncio.run(until_interrupted())
    assert request.request_kind == "approve_research"
    assert request.fact_count > 0 and request.top_facts

    status = handoff_cli(dev_server.folder, "status", thread_id, "--json")
    assert status.returncode == 0, status.stderr
    reported = json.loads(status.stdout)
    assert reported["thread_id"] == thread_id and reported["next"] == ["approve_research"]
    waiting_outcome = RunOutcome.model_validate(reported["outcome"])
    assert waiting_outcome.state == TaskState.INPUT_REQUIRED
    assert waiting_outcome.human_request == request

    output, values = asyncio.run(answer(thread_id, request))
    final = validated_state(values)
    assert validated_state(output).keys() <= final.keys()
    outcome: RunOutcome = final["outcome"]
    assert outcome.thread_id == thread_id
    assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
    assert final["review"].verdict == "approved"
    assert final["task"].policies.require_approval
    handoff: Handoff = final["handoff"]
    assert any(item.text == "approve by sdk-test" for item in handoff.accepted_decisions)

    article = check_article(dev_server, thread_id, outcome)
    assert article.startswith(b"# ")
    with Workflow(dev_server.settings) as workflow:
        assert workflow.artifact(thread_id, "article") == article
        assert workflow.outcome(thread_id) == outcome
        history = workflow.history(thread_id)
    nodes = iter(run.node_id for run in history)
    expected = ("research", "approve_research", "writer", "reviewer", "finalize")
    assert all(node in nodes for node in expected), "the audit log has every step, in order"
    assert all(run.status == "succeeded" for run in history)


def test_agent_inbox_sees_each_request_and_its_responses_become_the_declared_decisions(
    dev_server: RunningServer,
) -> None:
    text = "Mention Thomas Young's earlier work."
    arguments: dict[str, Any] = {
        "accept": None,
        "ignore": None,
        "response": text,
        "edit": {"action": APPROVAL.kind, "args": {"constraints": [text]}},
    }

    async def respond() -> dict[str, RecordedDecision]:
        client = get_client(url=dev_server.url)
        decided: dict[str, RecordedDecision] = {}
        for response in INBOX_RESPONSES:
            thread_id, request = await start(client, f"inbox-{response}")
            [pending] = (await client.threads.get_state(thread_id))["interrupts"]
            [view] = pending["value"]
            assert view["action_request"]["action"] == request.request_kind
            assert view["config"]["allow_accept"] and request.question in view["description"]
            malformed = [{"type": response, "args": 7}]
            with pytest.raises(Exception, match="ValidationError") as refused:
                await client.runs.wait(thread_id, GRAPH_ID, command={"resume": malformed})
            assert "args" in str(refused.value)
            assert await waiting(client, thread_id) == request, "still waiting, same request"
            answer = [{"type": response, "args": arguments[response]}]
            await client.runs.wait(thread_id, GRAPH_ID, command={"resume": answer})
            values = (await client.threads.get_state(thread_id))["values"]
            decided[response] = DecisionLog.model_validate(values["decisions"]).decisions[0]
        return decided

    decided = asyncio.run(respond())
    for response, decision in decided.items():
        action = APPROVAL.responses().get(response)
        assert action is not None and decision.action == action.name, response
    assert decided["edit"].constraints == [text] == decided["response"].constraints
    assert decided["ignore"].reason == IGNORED


def test_a_served_approval_after_the_expiry_is_answered_by_the_default_once(
    dev_server: RunningServer,
) -> None:
    spec = TaskSpec(
        task_id="served-expiry",
        objective=OBJECTIVE,
        policies={"require_approval": True, "decision_timeout": "1s"},
    )

    async def late() -> tuple[HumanRequest, dict[str, Any]]:
        client = get_client(url=dev_server.url)
        thread_id = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread_id, GRAPH_ID, input={"task": spec.model_dump(mode="json")})
        request = await waiting(client, thread_id)
        assert request.expires_at is not None
        await asyncio.sleep(
            max(0.0, (request.expires_at - datetime.now(UTC)).total_seconds()) + 0.1
        )
        await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)})
        return request, (await client.threads.get_state(thread_id))["values"]

    request, values = asyncio.run(late())
    [decision] = DecisionLog.model_validate(values["decisions"]).decisions
    assert (decision.action, decision.decided_by) == ("reject", EXPIRED)
    assert request.expires_at is not None and request.expires_at.isoformat()[:19] in (
        decision.reason or ""
    ).replace(" ", "T")
    assert RunOutcome.model_validate(values["outcome"]).state == TaskState.REJECTED


def test_two_threads_run_concurrently(dev_server: RunningServer) -> None:
    async def one(client: LangGraphClient, task_id: str) -> tuple[str, dict[str, Any]]:
        thread_id, request = await start(client, task_id)
        output = await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)})
        return thread_id, output

    async def both() -> list[tuple[str, dict[str, Any]]]:
        client = get_client(url=dev_server.url)
        return list(await asyncio.gather(one(client, "sdk-a"), one(client, "sdk-b")))

    results = asyncio.run(both())
    assert len({thread_id for thread_id, _ in results}) == 2
    articles = set()
    for thread_id, output in results:
        outcome = RunOutcome.model_validate(output["outcome"])
        assert outcome.thread_id == thread_id
        assert outcome.state == TaskState.COMPLETED
        check_article(dev_server, thread_id, outcome)
        assert outcome.article is not None
        articles.add(outcome.article.artifact_id)
    assert len(articles) == 2, "each thread writes its own article"


def test_the_cli_finishes_a_thread_the_server_started(dev_server: RunningServer) -> None:
    async def interrupted() -> tuple[str, HumanRequest]:
        return await start(get_client(url=dev_server.url), "sdk-handover")

    thread_id, request = asyncio.run(interrupted())
    with Workflow(dev_server.settings) as workflow:
        assert workflow.pending(thread_id) == request
        outcome = workflow.resume(thread_id, approval(request))
    assert outcome.state == TaskState.COMPLETED
    check_article(dev_server, thread_id, outcome)

    async def seen_by_server() -> dict[str, Any]:
        state = await get_client(url=dev_server.url).threads.get_state(thread_id)
        values: dict[str, Any] = state["values"]
        return values

    assert RunOutcome.model_validate(asyncio.run(seen_by_server())["outcome"]) == outcome
