"""A served thread's task revised through the documented run input ``{"revision": {...}}``.

A langgraph-sdk client runs a thread to its end on a real ``langgraph dev``, then starts a
run on the same (ended) thread whose input is a revision: the task's next version runs,
research is reused; a revision that fails its contract is refused at the door, one that
cannot apply to the task leaves the thread as it was.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client

from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import RunOutcome, TaskSpec
from tests.server.conftest import RunningServer, approval, start, waiting
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
        await client.runs.wait(thread_id, GRAPH_ID, input=cannot)
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
    [refusal] = [run for run in runs if run.node_id == "revise_task" and run.task_version == 1][:1]
    assert refusal.note is not None and "drop_sections[0]" in refusal.note
    research_v2 = [run for run in runs if run.node_id == "research" and run.task_version == 2]
    assert research_v2 and all(run.reused for run in research_v2)
