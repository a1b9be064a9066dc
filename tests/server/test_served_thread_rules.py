"""A served thread obeys its rules, through langgraph-sdk against a real ``langgraph dev``.

A run on a thread that has history may answer its pending request, revise its task or
continue it, nothing more: a new task for it (whether the server or the CLI started it),
a revision carrying anything beside itself, a decision nobody asked for, and a run from
any checkpoint but the latest are refused, and the thread keeps its state, its pending
request and its audit exactly as they were. A rule that depends on the thread's history
is checked again under the thread's lock, so a run admitted before the thread moved on is
refused when it starts: a revision checked against the task as it was, too.
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
from contracts import RunOutcome, TaskSpec, TaskState
from tests.conftest import OBJECTIVE
from tests.server.conftest import RunningServer, approval, cli_in, start, waiting
from tests.server.test_served_race import served_error, single_chain
from tests.server.test_server_auth import refused

pytestmark = pytest.mark.server

BEES = "A completely different objective about bees"
LATER = 3
"""Seconds a run admitted now waits before it starts: the thread moves on meanwhile."""


def saved(server: RunningServer, thread_id: str) -> tuple[Any, ...]:
    """What a refused run must leave as it was: state, pending request, audit, checkpoints."""
    with Workflow(server.settings) as workflow:
        return (
            workflow.state(thread_id),
            workflow.pending(thread_id),
            workflow.history(thread_id),
            workflow.checkpoint_count(thread_id),
        )


def objective(server: RunningServer, thread_id: str) -> str:
    with Workflow(server.settings) as workflow:
        return TaskSpec.model_validate(workflow.state(thread_id)["task"]).objective


async def one_refused(
    client: LangGraphClient, thread_id: str, first: dict[str, Any], **later: Any
) -> str:
    """Admit a run (``later``) now but start it after one (``first``) that moves the thread on.

    Both are admitted while the thread is as it is now; the queue starts the one created
    without delay first. Returns the error the later run ended with.
    """
    delayed = await client.runs.create(thread_id, GRAPH_ID, after_seconds=LATER, **later)
    done = await client.runs.wait(thread_id, GRAPH_ID, multitask_strategy="enqueue", **first)
    assert isinstance(done, dict) and "__error__" not in done, done
    joined = await client.runs.join(thread_id, delayed["run_id"])
    run = await client.runs.get(thread_id, delayed["run_id"])
    error = served_error(joined)
    assert run["status"] == "error" and error is not None, (run, joined)
    return error


def test_a_served_run_cannot_replace_the_task_of_a_thread_the_cli_started(
    dev_server: RunningServer,
) -> None:
    thread_id = str(uuid.uuid4())

    async def scenario() -> tuple[Any, tuple[Any, ...], tuple[Any, ...], Any]:
        code, output = await cli_in(
            dev_server.folder, "run", OBJECTIVE, "--thread", thread_id, "--require-approval"
        )
        assert code == ExitCode.WAITING_FOR_HUMAN, output
        before = saved(dev_server, thread_id)
        client = get_client(url=dev_server.url)
        await client.threads.create(thread_id=thread_id, if_exists="do_nothing")
        answer = await client.runs.wait(
            thread_id, GRAPH_ID, input={"task": {"objective": BEES}}, raise_error=False
        )
        after = saved(dev_server, thread_id)
        request = after[1]  # the server shows no state for a thread it has never run
        result = await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)})
        return answer, before, after, result

    answer, before, after, result = asyncio.run(scenario())
    error = served_error(answer)
    assert error is not None and error.startswith("ThreadExists: "), answer
    assert thread_id in error and "already has a task" in error, error
    assert "command={'resume'" in error and "input={'revision'" in error, error
    assert before[1].interrupt_id in error, "it names the request to answer"
    assert after == before, "the refused run changed the thread"
    assert RunOutcome.model_validate(result["outcome"]).state == TaskState.COMPLETED
    assert objective(dev_server, thread_id) == OBJECTIVE


def test_a_new_task_for_a_served_thread_with_history_is_refused_and_changes_nothing(
    dev_server: RunningServer,
) -> None:
    async def scenario() -> tuple[str | None, tuple[Any, ...], tuple[Any, ...], str, str]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "rules-waiting")
        before = saved(dev_server, thread_id)
        answer = served_error(
            await client.runs.wait(
                thread_id, GRAPH_ID, input={"task": {"objective": BEES}}, raise_error=False
            )
        )
        after = saved(dev_server, thread_id)
        assert await waiting(client, thread_id) == request
        fresh = (await client.threads.create())["thread_id"]
        spec = TaskSpec(task_id="rules-first", objective=OBJECTIVE)
        first = {"input": {"task": spec.model_dump(mode="json")}}
        error = await one_refused(client, fresh, first, input={"task": {"objective": BEES}})
        return answer, before, after, fresh, error

    answer, before, after, fresh, error = asyncio.run(scenario())
    assert answer is not None and answer.startswith("ThreadExists: "), answer
    assert "already has a task" in answer and "nothing was changed" in answer, answer
    assert after == before, "the refused run changed the thread"
    assert "ThreadExists" in error and fresh in error and "already has a task" in error, error
    assert objective(dev_server, fresh) == OBJECTIVE


def test_a_decision_for_a_thread_that_waits_for_none_is_refused(
    dev_server: RunningServer,
) -> None:
    async def scenario() -> Any:
        client = get_client(url=dev_server.url)
        _, request = await start(client, "rules-decision")
        fresh = (await client.threads.create())["thread_id"]
        return await client.runs.wait(
            fresh, GRAPH_ID, command={"resume": approval(request)}, raise_error=False
        )

    error = served_error(asyncio.run(scenario()))
    assert error is not None and "NotWaiting" in error, error
    assert "not waiting for a decision" in error and "nothing was changed" in error, error


def test_a_revision_input_carries_only_its_revision_and_unknown_input_is_refused(
    dev_server: RunningServer,
) -> None:
    revision = {"max_words": 150, "reason": "shorter"}
    inputs: list[tuple[Any, str]] = [
        ({"revision": revision, "task": {"objective": BEES}}, "'task'"),
        ({"revision": revision, "research": {"facts": []}}, "'research'"),
        ({"task": {"objective": BEES}, "outcome": {}}, "'outcome'"),
        ({}, "'task' or 'revision'"),
    ]

    async def scenario() -> tuple[list[tuple[int, str]], tuple[int, str], tuple[Any, ...], str]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "rules-revision")
        before = saved(dev_server, thread_id)
        answers = [
            await refused(client.runs.wait(thread_id, GRAPH_ID, input=given)) for given, _ in inputs
        ]
        both = await refused(
            client.runs.wait(
                thread_id,
                GRAPH_ID,
                input={"revision": revision},
                command={"resume": approval(request)},
            )
        )
        assert await waiting(client, thread_id) == request
        return answers, both, before, thread_id

    answers, both, before, thread_id = asyncio.run(scenario())
    for (status, body), (_, field) in zip(answers, inputs, strict=True):
        assert status == 422, (status, body)
        assert field in body and "nothing was run" in body, body
    assert "'task' beside a revision" in answers[0][1], answers[0][1]
    assert both[0] == 422 and "input or command" in both[1], both
    assert saved(dev_server, thread_id) == before, "a refused run changed the thread"


def test_a_run_from_any_checkpoint_but_the_latest_is_refused_and_the_chain_never_forks(
    dev_server: RunningServer,
) -> None:
    async def scenario() -> tuple[list[tuple[int, str]], tuple[Any, ...], Any, str, str, Any]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "rules-fork")
        history = await client.threads.get_history(thread_id, limit=2)
        latest, earlier = (state["checkpoint"]["checkpoint_id"] for state in history)
        before = saved(dev_server, thread_id)
        rejected = {"resume": approval(request, action="reject", reason="a forked decision")}
        answers = [
            await refused(
                client.runs.wait(thread_id, GRAPH_ID, command=rejected, checkpoint_id=earlier)
            ),
            await refused(
                client.runs.wait(
                    thread_id,
                    GRAPH_ID,
                    command=rejected,
                    checkpoint={"checkpoint_id": earlier, "checkpoint_ns": ""},
                )
            ),
            await refused(
                client.runs.wait(
                    thread_id,
                    GRAPH_ID,
                    command=rejected,
                    config={"configurable": {"checkpoint_id": earlier}},
                )
            ),
        ]
        after = saved(dev_server, thread_id)
        # The latest checkpoint may be named: the run goes on from it, as without it.
        second, _ = await start(client, "rules-fork-latest")
        [state] = await client.threads.get_history(second, limit=1)
        admitted = state["checkpoint"]["checkpoint_id"]
        again = await waiting(client, second)
        error = await one_refused(
            client,
            second,
            {"command": {"resume": approval(again)}},
            command={"resume": approval(again, action="reject", reason="late and forked")},
            checkpoint_id=admitted,
        )
        third, last_request = await start(client, "rules-fork-named")
        [state] = await client.threads.get_history(third, limit=1)
        named = await client.runs.wait(
            third,
            GRAPH_ID,
            command={"resume": approval(last_request)},
            checkpoint_id=state["checkpoint"]["checkpoint_id"],
        )
        revised = await client.runs.wait(
            third, GRAPH_ID, input={"revision": {"max_words": 150, "reason": "shorter"}}
        )
        assert isinstance(revised, dict) and "__error__" not in revised, revised
        return answers, before, after, second, error, (third, named)

    answers, before, after, second, error, (third, named) = asyncio.run(scenario())
    for status, body in answers:
        assert status == 409, (status, body)
        assert "latest checkpoint" in body and "fork" in body, body
    assert after == before, "a refused run changed the thread"
    assert "CheckpointNotLatest" in error and second in error, error
    assert RunOutcome.model_validate(named["outcome"]).state == TaskState.COMPLETED
    with Workflow(dev_server.settings) as workflow:
        assert workflow.outcome(second).state == TaskState.COMPLETED
        for thread_id in (second, third):
            single_chain(workflow, thread_id)


def test_a_revision_admitted_before_the_thread_moved_on_is_refused_and_the_request_kept(
    dev_server: RunningServer,
) -> None:
    extra = {"add_sections": ["Legacy"], "reason": "the editor wants a legacy section"}

    async def scenario() -> tuple[str, str, Any]:
        client = get_client(url=dev_server.url)
        thread_id, _ = await start(client, "rules-revision-moved-on")
        # Both apply to task v1; once the first has made v2, the second cannot ("already
        # required"), and refused inside its run it would drop v2's pending request.
        error = await one_refused(
            client, thread_id, {"input": {"revision": extra}}, input={"revision": extra}
        )
        request = await waiting(client, thread_id)  # v2's request, still pending
        approved = await client.runs.wait(
            thread_id, GRAPH_ID, command={"resume": approval(request)}
        )
        return thread_id, error, approved

    thread_id, error, approved = asyncio.run(scenario())
    assert error.startswith("ThreadMovedOn: ") and thread_id in error, error
    assert "send the revision again" in error and "nothing was changed" in error, error
    assert RunOutcome.model_validate(approved["outcome"]).state == TaskState.COMPLETED
    with Workflow(dev_server.settings) as workflow:
        revised = [run for run in workflow.history(thread_id) if run.node_id == "revise_task"]
        task = TaskSpec.model_validate(workflow.state(thread_id)["task"])
        single_chain(workflow, thread_id)
    assert (task.task_version, task.constraints.required_sections) == (2, ["Legacy"]), task
    assert [(run.status, run.task_version) for run in revised] == [("succeeded", 1)], revised
