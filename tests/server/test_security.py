"""What a browser page or an API client can make the served graph do.

``langgraph dev`` answers every origin unless langgraph.json restricts CORS, and any
client can start a run naming files: these tests drive a real server to show that other
origins get no CORS permission, that a corpus outside the roots is refused before anything
is read, and that a source re-pointed at /dev/zero through ``update_state`` is refused
before it is written (the server lets no client edit state; a re-pointed source that does
reach a thread is refused by name: tests/app/corpus/test_corpus_security.py).
"""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from typing import Any

import pytest
from langgraph_sdk import get_client

from app.server.graph import GRAPH_ID
from app.workflow import Workflow
from contracts import ResearchBundle, TaskSpec
from tests.conftest import OBJECTIVE
from tests.server.conftest import RunningServer, start

pytestmark = pytest.mark.server

STUDIO_ORIGIN = "https://smith.langchain.com"
RUN_SECONDS = 60.0


def cors(server: RunningServer, origin: str, *, preflight: bool) -> tuple[int, dict[str, str]]:
    """Status and (lower-cased) headers of a request from ``origin``, or of its preflight."""
    headers = {"Origin": origin}
    if preflight:
        headers |= {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        }
    method = "OPTIONS" if preflight else "GET"
    path = "/threads/search" if preflight else "/ok"
    request = urllib.request.Request(f"{server.url}{path}", headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}


@pytest.mark.parametrize("preflight", [False, True], ids=["request", "preflight"])
def test_cors_allows_studio_and_local_pages_and_no_other_origin(
    dev_server: RunningServer, preflight: bool
) -> None:
    for origin in ("https://evil.example", "http://localhost.evil.example", "null"):
        status, headers = cors(dev_server, origin, preflight=preflight)
        assert "access-control-allow-origin" not in headers, (origin, headers)
        assert "access-control-allow-credentials" not in headers
        if preflight:
            assert status == 400, "the browser is told the preflight failed"
    for origin in (STUDIO_ORIGIN, "http://localhost:5173", "http://127.0.0.1:2024"):
        status, headers = cors(dev_server, origin, preflight=preflight)
        assert status == 200, (origin, status)
        assert headers.get("access-control-allow-origin") == origin


@pytest.mark.parametrize("corpus", [["/etc/passwd"], ["linked"]], ids=["absolute", "symlink"])
def test_a_served_run_with_a_corpus_outside_the_roots_is_refused_and_reads_nothing(
    dev_server: RunningServer, corpus: list[str]
) -> None:
    linked = dev_server.folder / "linked"
    if corpus == ["linked"] and not linked.exists():
        linked.mkdir()  # inside the server's working folder, a root; its link leads out
        (linked / "passwd.md").symlink_to("/etc/passwd")
    task = TaskSpec(task_id="sdk-refused", objective=OBJECTIVE, corpus=corpus)

    async def refused() -> tuple[str, dict[str, Any], dict[str, Any]]:
        client = get_client(url=dev_server.url)
        thread_id = (await client.threads.create())["thread_id"]
        output = await asyncio.wait_for(
            client.runs.wait(
                thread_id, GRAPH_ID, input={"task": task.model_dump(mode="json")}, raise_error=False
            ),
            RUN_SECONDS,
        )
        [run] = await client.runs.list(thread_id)
        return thread_id, output, run

    thread_id, output, run = asyncio.run(refused())
    assert run["status"] == "error"
    error = output["__error__"]
    assert error["error"] == "SourceRefused"
    message = error["message"]
    assert "\n" not in message and "outside the corpus roots" in message
    assert ("/etc/passwd" in message) and (corpus[0] in message)
    with Workflow(dev_server.settings) as workflow:
        assert workflow.ledger.runs(thread_id) == [], "refused before research was recorded"
        assert workflow.context.store.head(f"{thread_id}-src-1") is None, "nothing was read"
        assert workflow.context.store.head(f"{thread_id}-notes") is None


def test_a_served_source_repointed_at_dev_zero_is_refused_before_it_is_written(
    dev_server: RunningServer,
) -> None:
    async def scenario() -> tuple[str, int, str, list[str]]:
        client = get_client(url=dev_server.url)
        thread_id, _ = await start(client, "sdk-dev-zero")
        state = await client.threads.get_state(thread_id)
        bundle = ResearchBundle.model_validate(state["values"]["research"])
        first = bundle.sources[0].model_copy(update={"uri": "file:///dev/zero"})
        changed = bundle.model_copy(update={"sources": [first, *bundle.sources[1:]]})
        try:
            await client.threads.update_state(
                thread_id, {"research": changed.model_dump(mode="json")}
            )
        except Exception as error:  # the SDK raises the server's error response
            response = getattr(error, "response", None)
            if response is None:
                raise
            status, body = int(response.status_code), str(response.text)
        else:
            pytest.fail("the server accepted a state edit")
        after = await client.threads.get_state(thread_id)
        sources = [source["uri"] for source in after["values"]["research"]["sources"]]
        return thread_id, status, body, sources

    thread_id, status, body, sources = asyncio.run(scenario())
    assert status == 403 and "does not let clients edit a thread's state" in body, body
    assert "file:///dev/zero" not in sources, "nothing was written"
