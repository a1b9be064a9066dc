"""The blocks of docs/a2a.md: ``bash a2a`` starts the agent, ``python a2a`` drives one.

A start block is run as a reader would run it, in a scratch folder; it must print the URL
it serves and answer its agent card there. A client block is run against a ``handoff a2a``
started the same way on a free port (the start block's test alone asks for the default one,
so no two agents of a parallel run meet there), with the printed URL as its argument, and
must end with a completed task.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.server.dev_server import free_port
from tests.docs.snippets import Snippet
from tests.docs.test_snippets import (
    chosen,
    python,
    reader_env,
    start_block,
    stop_group,
    succeeded,
)

pytestmark = [pytest.mark.e2e]

READY_SECONDS = 60.0
_SERVING = re.compile(r"serving the A2A agent at (http://\S+)")


@contextmanager
def a2a_serving(script: str, folder: Path) -> Iterator[str]:
    """Run a block that starts ``handoff a2a`` in ``folder``; yield the URL it printed."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "a2a.log"
    process = start_block(script, folder, reader_env(HANDOFF_DATA_DIR=str(folder / "data")), log)
    try:
        began = time.monotonic()
        while time.monotonic() - began < READY_SECONDS:
            assert process.poll() is None, f"exited {process.returncode}:\n{log.read_text()}"
            found = _SERVING.search(log.read_text(encoding="utf-8", errors="replace"))
            if found:
                try:
                    card = f"{found.group(1)}.well-known/agent-card.json"
                    with urllib.request.urlopen(card, timeout=1) as response:
                        if response.status == 200:
                            yield found.group(1)
                            return
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
            time.sleep(0.2)
        pytest.fail(f"no agent answered within {READY_SECONDS:.0f}s:\n{log.read_text()}")
    finally:
        stop_group(process)


@pytest.mark.parametrize("snippet", chosen("bash", having="a2a"))
def test_an_a2a_block_starts_an_agent_that_serves_its_card(
    snippet: Snippet, tmp_path: Path
) -> None:
    with a2a_serving(snippet.text, tmp_path) as url:
        with urllib.request.urlopen(f"{url}.well-known/agent-card.json", timeout=10) as reply:
            card = json.load(reply)
    assert card["name"] == "handoff"
    assert card["supportedInterfaces"][0]["url"] == url


@pytest.mark.parametrize("snippet", chosen("python", having="a2a"))
def test_an_a2a_client_block_drives_the_agent_handoff_a2a_started(
    snippet: Snippet, tmp_path: Path
) -> None:
    folder = tmp_path / "agent"
    with a2a_serving(f"handoff a2a --port {free_port()}", folder) as url:
        result = python(snippet, folder, url, HANDOFF_DATA_DIR=str(folder / "data"))
    succeeded(result, snippet)
    assert "TASK_STATE_COMPLETED completed" in result.stdout
