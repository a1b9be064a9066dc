"""A thread's artifacts over HTTP from a real ``langgraph dev`` (langgraph.json ``http.app``).

A langgraph-sdk client runs a thread to its end, then reads the article by name at
``/threads/{thread_id}/artifacts/article``: the bytes the store holds, verified against the
hash the thread recorded, with the media type, revision and hash in the headers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import urllib.error
import urllib.request
import uuid
from email.message import Message
from typing import Any

import pytest
from langgraph_sdk import get_client

from app.server.artifacts_http import ROUTE
from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import RunOutcome
from tests.server.conftest import RunningServer, approval, start

pytestmark = pytest.mark.server


def fetch(server: RunningServer, thread_id: str, name: str) -> tuple[int, Message, bytes]:
    """GET a thread's artifact: status, headers, body (an error's too)."""
    path = ROUTE.format(thread_id=thread_id, name=name)
    try:
        with urllib.request.urlopen(f"{server.url}{path}", timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers, refused.read()


def test_a_finished_threads_article_is_read_over_http_verified(
    dev_server: RunningServer,
) -> None:
    async def finished() -> tuple[str, dict[str, Any]]:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "http-article")
        await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)})
        return thread_id, (await client.threads.get_state(thread_id))["values"]

    thread_id, values = asyncio.run(finished())
    outcome = RunOutcome.model_validate(values["outcome"])
    assert outcome.article is not None
    assert outcome.article_path == ROUTE.format(thread_id=thread_id, name="article")
    status, headers, body = fetch(dev_server, thread_id, "article")
    assert status == 200
    with Workflow(dev_server.settings) as workflow:
        assert body == workflow.artifact(thread_id, "article")
    assert hashlib.sha256(body).hexdigest() == outcome.article.sha256
    assert headers["X-Artifact-Sha256"] == outcome.article.sha256
    assert headers["X-Artifact-Revision"] == str(outcome.article.revision)
    assert str(headers["Content-Type"]).startswith(outcome.article.media_type)
    source_status, _, snapshot = fetch(dev_server, thread_id, "src-1")
    assert source_status == 200 and snapshot


def copy_in_database(server: RunningServer, source: str) -> str:
    """A copy of a thread's checkpoints under a new id, written straight to the database.

    The server refuses ``threads.copy``; a copy can still be made outside it, as LangGraph's
    server made one (each checkpoint put again, oldest first, with its parent and writes).
    """
    target = str(uuid.uuid4())
    with Workflow(server.settings) as workflow:
        saver = workflow.saver
        items = list(saver.list({"configurable": {"thread_id": source}}))
        for item in sorted(items, key=lambda each: each.config["configurable"]["checkpoint_id"]):
            configurable = {"thread_id": target, "checkpoint_ns": ""}
            if item.parent_config:
                configurable["checkpoint_id"] = item.parent_config["configurable"]["checkpoint_id"]
            versions = item.checkpoint["channel_versions"]
            stored = saver.put(
                {"configurable": configurable}, item.checkpoint, item.metadata, versions
            )
            for task_id, channel, value in item.pending_writes or []:
                saver.put_writes(stored, [(channel, value)], task_id)
    return target


def test_a_copied_thread_is_not_served_its_source_threads_artifacts(
    dev_server: RunningServer,
) -> None:
    async def finished() -> str:
        client = get_client(url=dev_server.url)
        thread_id, request = await start(client, "http-copied")
        await client.runs.wait(thread_id, GRAPH_ID, command={"resume": approval(request)})
        return thread_id

    source = asyncio.run(finished())
    copy = copy_in_database(dev_server, source)
    for name in ("article", "draft", "notes", "review", "src-1"):
        status, _, body = fetch(dev_server, copy, name)
        assert status == 409, (name, body)
        detail = json.loads(body)["detail"]
        assert f"names {source}-{name} " in detail and f"expected {copy}-{name}" in detail
        assert "\n" not in detail
        assert fetch(dev_server, source, name)[0] == 200


@pytest.mark.parametrize(
    ("thread_id", "name", "status", "says"),
    [
        pytest.param("no-such-thread", "article", 404, "no thread", id="unknown thread"),
        pytest.param("{thread}", "secrets", 404, "unknown artifact", id="unknown name"),
        pytest.param("{thread}", "src-999", 404, "src-999", id="a source it never read"),
        pytest.param("{thread}", "article", 404, "no article", id="not published yet"),
        pytest.param("bad id!", "article", 400, "thread id", id="an unsafe thread id"),
    ],
)
def test_what_is_not_the_threads_own_artifact_is_refused_saying_why(
    dev_server: RunningServer, thread_id: str, name: str, status: int, says: str
) -> None:
    async def waiting_thread() -> str:
        return (await start(get_client(url=dev_server.url), f"http-refused-{status}"))[0]

    thread = asyncio.run(waiting_thread())
    got, _, body = fetch(dev_server, urllib.request.quote(thread_id.format(thread=thread)), name)
    assert got == status, body
    assert says in json.loads(body)["detail"]
