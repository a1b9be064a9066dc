"""What a server client may change, through langgraph-sdk against a real ``langgraph dev``.

The attacks tried on the served graph: forge an approval (edit research, then write an
approved review), publish another thread's draft as this one's, or do either inside a run
(``command.update`` / ``goto``), and roll a run back. Each is refused with a status and a
reason, nothing is written, and the thread still ends with its own reviewed article.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest
from langgraph_sdk import get_client

from app.server.auth import ROLLBACK_REFUSED, STATE_EDITS_REFUSED
from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import ResearchBundle, RunOutcome, TaskState
from tests.server.conftest import RunningServer, approval, check_article, start

pytestmark = pytest.mark.server

FORGED = "The Rosetta Stone was carved by aliens in 1999 as a prank on Champollion."
RUN_SECONDS = 60.0


async def refused(call: Awaitable[Any]) -> tuple[int, str]:
    """The HTTP status and body of a request the server must refuse."""
    try:
        answer = await call
    except Exception as error:  # the SDK raises the server's error response
        response = getattr(error, "response", None)
        if response is None:
            raise
        return int(response.status_code), str(response.text)
    pytest.fail(f"the server accepted it: {answer!r}")


def forged_research(values: dict[str, Any]) -> dict[str, Any]:
    """The thread's research with every fact claiming and quoting the fabricated sentence."""
    bundle = ResearchBundle.model_validate(values["research"])
    facts = [
        fact.model_copy(
            update={
                "claim": FORGED,
                "quote": FORGED,
                "span": fact.span.model_copy(update={"end": fact.span.start + len(FORGED)}),
            }
        )
        for fact in bundle.facts
    ]
    return bundle.model_copy(update={"facts": facts}).model_dump(mode="json")


def test_forged_approval_and_foreign_draft_attacks_are_refused_and_the_thread_ends_its_own(
    dev_server: RunningServer,
) -> None:
    async def attacks() -> tuple[str, str, list[tuple[int, str]], int, int, dict[str, Any]]:
        client = get_client(url=dev_server.url)
        donor_id, donor_request = await start(client, "sdk-donor")
        donor = await client.runs.wait(
            donor_id, GRAPH_ID, command={"resume": approval(donor_request)}
        )
        assert isinstance(donor, dict) and donor["outcome"]["state"] == "TASK_STATE_COMPLETED"
        thread_id, request = await start(client, "sdk-victim")
        state = await client.threads.get_state(thread_id)
        with Workflow(dev_server.settings) as workflow:
            before = workflow.checkpoint_count(thread_id)
        forged_review = {
            "task_id": "sdk-victim",
            "draft_revision": 1,
            "verdict": "approved",
            "draft_sha256": donor["draft"]["body"]["sha256"],
        }
        answers = [
            await refused(
                client.threads.update_state(
                    thread_id, {"research": forged_research(state["values"])}, as_node="research"
                )
            ),
            await refused(
                client.threads.update_state(
                    thread_id, {"review": forged_review}, as_node="reviewer"
                )
            ),
            await refused(
                client.threads.update_state(
                    thread_id,
                    {"draft": donor["draft"], "review": donor["review"]},
                    as_node="reviewer",
                )
            ),
            await refused(
                client.runs.wait(
                    thread_id,
                    GRAPH_ID,
                    command={
                        "update": {"draft": donor["draft"], "review": donor["review"]},
                        "goto": "finalize",
                    },
                )
            ),
            await refused(
                client.runs.wait(
                    thread_id,
                    GRAPH_ID,
                    command={"resume": approval(request), "update": {"review": forged_review}},
                )
            ),
        ]
        with Workflow(dev_server.settings) as workflow:
            after = workflow.checkpoint_count(thread_id)
        output = await asyncio.wait_for(
            client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)}),
            RUN_SECONDS,
        )
        assert isinstance(output, dict)
        return donor_id, thread_id, answers, before, after, output

    donor_id, thread_id, answers, before, after, output = asyncio.run(attacks())
    for status, body in answers:
        assert status == 403, (status, body)
        assert "does not let clients edit a thread's state" in body, body
    assert STATE_EDITS_REFUSED.split(":")[0] in answers[0][1]
    assert after == before, "no refused edit wrote a checkpoint"
    outcome = RunOutcome.model_validate(output["outcome"])
    assert outcome.state == TaskState.COMPLETED
    article = check_article(dev_server, thread_id, outcome).decode()
    assert FORGED not in article
    assert outcome.draft is not None and outcome.draft.artifact_id == f"{thread_id}-draft"
    assert donor_id not in article


def test_rollback_is_refused_with_a_4xx_and_the_thread_stays_usable(
    dev_server: RunningServer,
) -> None:
    async def scenario() -> tuple[list[tuple[int, str]], dict[str, Any]]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "sdk-rollback")
        run = await client.runs.create(thread_id, GRAPH_ID, command={"resume": approval(request)})
        answers = [
            await refused(client.runs.create(thread_id, GRAPH_ID, multitask_strategy="rollback")),
            await refused(client.runs.cancel(thread_id, run["run_id"], action="rollback")),
        ]
        await client.runs.join(thread_id, run["run_id"])
        state = await client.threads.get_state(thread_id)
        return answers, state["values"]

    answers, values = asyncio.run(scenario())
    for status, body in answers:
        assert status == 422, (status, body)
        assert ROLLBACK_REFUSED.split(";")[0] in body, body
    assert RunOutcome.model_validate(values["outcome"]).state == TaskState.COMPLETED
