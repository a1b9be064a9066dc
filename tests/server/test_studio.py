"""What a LangGraph Studio user does: type an objective, configure an assistant, run it.

Studio draws its input form from the schemas the server gives it. The input is the
objective alone (no task id), and an assistant's context chooses the review rounds and the
approval policy; the run behaves as chosen and the audit says so.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client

from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import HumanRequest, RunOutcome, TaskSpec, TaskState
from graphs import WorkflowInput, WorkflowOutput
from graphs.human import request_in
from tests.conftest import OBJECTIVE
from tests.server.conftest import RunningServer, approval, check_article

pytestmark = pytest.mark.server


def test_studio_gets_an_input_form_and_the_output_schema(dev_server: RunningServer) -> None:
    """A schema the server cannot build is sent as null (and logged): no form to type in."""

    async def schemas() -> dict[str, Any]:
        client = get_client(url=dev_server.url)
        [assistant] = await client.assistants.search(
            graph_id=GRAPH_ID, metadata={"created_by": "system"}
        )
        return dict(await client.assistants.get_schemas(assistant["assistant_id"]))

    given = asyncio.run(schemas())
    assert given["input_schema"] is not None, dev_server.log_tail()
    assert set(given["input_schema"]["properties"]) == set(WorkflowInput.__annotations__)
    assert given["output_schema"] is not None, dev_server.log_tail()
    assert set(given["output_schema"]["properties"]) == set(WorkflowOutput.__annotations__)
    assert "Failed to get" not in dev_server.log_tail(1 << 20)


def test_a_run_given_only_an_objective_gets_a_stable_task_id_and_finishes(
    dev_server: RunningServer,
) -> None:
    async def run() -> tuple[str, dict[str, Any], dict[str, Any]]:
        client = get_client(url=dev_server.url)
        thread = await client.threads.create()
        result = await client.runs.wait(
            thread["thread_id"], GRAPH_ID, input={"task": {"objective": OBJECTIVE}}
        )
        state = await client.threads.get_state(thread["thread_id"])
        return thread["thread_id"], result, state["values"]

    thread_id, result, values = asyncio.run(run())
    outcome = RunOutcome.model_validate(result["outcome"])
    assert outcome.state == TaskState.COMPLETED, outcome.reason
    assert outcome.task_id == TaskSpec.model_validate(values["task"]).task_id
    assert outcome.task_id.startswith("task-")
    check_article(dev_server, thread_id, outcome)


def test_an_assistant_chooses_approval_and_review_rounds_and_the_audit_shows_it(
    dev_server: RunningServer,
) -> None:
    chosen = {"require_approval": True, "max_review_rounds": 1}

    async def run() -> tuple[str, HumanRequest, dict[str, Any], dict[str, Any]]:
        client = get_client(url=dev_server.url)
        assistant = await client.assistants.create(GRAPH_ID, context=chosen, name="careful")
        thread = await client.threads.create()
        thread_id = thread["thread_id"]
        task = {"task": {"objective": OBJECTIVE}}  # the task itself asks for no approval
        await client.runs.wait(thread_id, assistant["assistant_id"], input=task)
        state = await client.threads.get_state(thread_id)
        [pending] = state["interrupts"]
        request = request_in(pending["value"])
        decided = await client.runs.wait(
            thread_id, assistant["assistant_id"], command={"resume": approval(request)}
        )
        return thread_id, request, state["values"], decided

    thread_id, request, waiting, decided = asyncio.run(run())
    assert request.request_kind == "approve_research", "the assistant's approval policy held"
    task = TaskSpec.model_validate(waiting["task"])
    assert task.policies.require_approval and task.budget.max_review_rounds == 1
    outcome = RunOutcome.model_validate(decided["outcome"])
    assert outcome.state == TaskState.COMPLETED and outcome.review_rounds == 1
    with Workflow(dev_server.settings) as workflow:
        audit = [run.node_id for run in workflow.history(thread_id)]
    assert "choose: require_approval=True, max_review_rounds=1" in audit
    assert audit.index("choose: require_approval=True, max_review_rounds=1") < audit.index(
        "approve_research"
    ), "the choice is recorded before the step it changed"
