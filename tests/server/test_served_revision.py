"""A served thread's task revised through the documented run input ``{"revision": {...}}``.

A langgraph-sdk client runs a thread to its end on a real ``langgraph dev``, then starts a
run on the same (ended) thread whose input is a revision: the task's next version runs,
research is reused. A revision that fails its contract, cannot apply to the task or names a
corpus the rules refuse is refused at the door (422 naming the field or path) before its
run exists, so the thread stays as it was: a waiting one keeps its pending request.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client

from app.exit_codes import ExitCode
from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import RunOutcome, TaskSpec, TaskState
from tests.app.test_revise import assert_audited_refusal
from tests.server.conftest import RunningServer, approval, cli_resume, start, waiting
from tests.server.test_server_auth import refused

pytestmark = pytest.mark.server


def test_a_served_revision_runs_the_next_task_version_and_reuses_research(
    dev_server: RunningServer,
) -> None:
    async def revised() -> tuple[str, dict[str, Any], dict[str, Any]]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "served-revision")
        await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)})
        invalid = {"revision": {"max_words": 5, "reason": "too short"}}
        status, body = await refused(client.runs.wait(thread_id, GRAPH_ID, input=invalid))
        assert status == 422 and "invalid revision: max_words" in body, (status, body)
        cannot = {"revision": {"drop_sections": ["Nope"], "reason": "not required"}}
        status, body = await refused(client.runs.wait(thread_id, GRAPH_ID, input=cannot))
        assert status == 422 and "drop_sections[0]: 'Nope'" in body, (status, body)
        unchanged = (await client.threads.get_state(thread_id))["values"]
        shorter = {"revision": {"max_words": 120, "reason": "a shorter piece"}}
        await client.runs.wait(thread_id, GRAPH_ID, input=shorter)
        again = await waiting(client, thread_id)  # the new version's research, to approve
        await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(again)})
        return thread_id, unchanged, (await client.threads.get_state(thread_id))["values"]

    thread_id, unchanged, values = asyncio.run(revised())
    assert TaskSpec.model_validate(unchanged["task"]).task_version == 1
    assert RunOutcome.model_validate(unchanged["outcome"]).result_status == "completed"
    task = TaskSpec.model_validate(values["task"])
    assert (task.task_version, task.constraints.max_words) == (2, 120)
    outcome = RunOutcome.model_validate(values["outcome"])
    assert outcome.result_status == "completed" and outcome.article is not None
    assert outcome.article.revision == 2
    with Workflow(dev_server.settings) as workflow:
        runs = workflow.history(thread_id)
    revisions = [run for run in runs if run.node_id == "revise_task"]
    assert [(run.task_version, run.status) for run in revisions] == [
        (1, "failed"),  # the revision that could not apply, refused at the door
        (1, "succeeded"),
    ]
    research_v2 = [run for run in runs if run.node_id == "research" and run.task_version == 2]
    assert research_v2 and all(run.reused for run in research_v2)


def test_a_served_revision_to_a_corpus_the_rules_refuse_leaves_the_thread_as_it_was(
    dev_server: RunningServer,
) -> None:
    outside, missing = "/etc", "/no-such-corpus"

    async def refused_twice() -> tuple[str, list[Any], Any, tuple[int, str], TaskSpec]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "served-revision-corpus")
        await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)})
        seen = [await client.threads.get_state(thread_id)]
        for corpus in (outside, missing):
            revision = {"corpus": [corpus], "reason": "research elsewhere"}
            refusal = client.runs.wait(thread_id, GRAPH_ID, input={"revision": revision})
            status, body = await refused(refusal)
            assert status == 422 and f"corpus path {corpus}" in body, (status, body)
            assert "nothing was run" in body, body
            seen.append(await client.threads.get_state(thread_id))
        with Workflow(dev_server.settings) as workflow:  # what `handoff status` prints
            shown = workflow.status(thread_id)
        resumed = await cli_resume(dev_server.folder, thread_id)
        shorter = {"revision": {"max_words": 120, "reason": "a shorter piece"}}
        await client.runs.wait(thread_id, GRAPH_ID, input=shorter)
        await waiting(client, thread_id)  # the next version runs: its research, to approve
        state = await client.threads.get_state(thread_id)
        return thread_id, seen, shown, resumed, TaskSpec.model_validate(state["values"]["task"])

    thread_id, seen, shown, (code, output), revised = asyncio.run(refused_twice())
    ended = seen[0]
    assert ended["next"] == [] and ended["values"]["outcome"] is not None
    for after in seen[1:]:
        assert (after["values"], after["next"]) == (ended["values"], ended["next"])
    assert (shown.task_version, shown.next_nodes) == (1, ())
    assert shown.current.state == TaskState.COMPLETED, shown.current
    assert code == ExitCode.ALREADY_FINISHED and "nothing to resume" in output, output
    assert (revised.task_version, revised.constraints.max_words, revised.corpus) == (2, 120, [])
    with Workflow(dev_server.settings) as workflow:
        runs = [run for run in workflow.history(thread_id) if run.node_id == "revise_task"]
    *refusals, accepted = runs  # the refused revisions never ran: audited as refused
    for refusal, corpus in zip(refusals, (outside, missing), strict=True):
        assert_audited_refusal(refusal, f"corpus path {corpus}")
    assert accepted.status == "succeeded" and accepted.note is not None
    assert accepted.note.startswith("task v1 -> v2: max_words: 120")


def test_a_refused_revision_leaves_a_waiting_thread_waiting_on_the_same_request(
    dev_server: RunningServer,
) -> None:
    refusals = [
        ({"drop_sections": ["Nope"], "reason": "not required"}, "drop_sections[0]"),
        ({"corpus": ["/etc"], "reason": "research elsewhere"}, "corpus path /etc"),
    ]

    async def scenario() -> tuple[str, list[tuple[int, str]], list[Any], Any]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "served-revision-waiting")
        answers, still = [], []
        for revision, _ in refusals:
            refusal = client.runs.wait(thread_id, GRAPH_ID, input={"revision": revision})
            answers.append(await refused(refusal))
            still.append(await waiting(client, thread_id))
        approved = await client.runs.wait(
            thread_id, GRAPH_ID, command={"resume": approval(request)}
        )
        return thread_id, answers, [request, *still], approved

    thread_id, answers, requests, approved = asyncio.run(scenario())
    for (status, body), (_, named) in zip(answers, refusals, strict=True):
        assert status == 422 and named in body and "nothing was run" in body, (status, body)
    assert len({request.interrupt_id for request in requests}) == 1, requests
    assert RunOutcome.model_validate(approved["outcome"]).state == TaskState.COMPLETED
    with Workflow(dev_server.settings) as workflow:
        revised = [run for run in workflow.history(thread_id) if run.node_id == "revise_task"]
        decisions = workflow.state(thread_id)["decisions"].decisions
    for refusal, (_, named) in zip(revised, refusals, strict=True):  # audited, never run
        assert_audited_refusal(refusal, named)
    assert [decision.action for decision in decisions] == ["approve"], decisions
