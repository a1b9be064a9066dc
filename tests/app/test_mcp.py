"""An MCP server's tools given to a node by settings, called through the tool boundary.

The server is real (``notes_mcp_server.py``, the ``mcp`` SDK over stdio), started by each
call. The writer's agent is the offline one with a few calls added before it writes: it
is what a model-backed agent's tool calls go through too (``by_model``).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.agents.writer import OfflineWriterAgent
from app.mcp import (
    McpGrant,
    McpServer,
    McpTool,
    McpUnavailable,
    mcp_export,
    tool_spec,
    with_mcp_tools,
)
from app.server.dev_server import free_port
from app.services import build_context
from app.settings import Settings
from app.workflow import Workflow
from contracts import DraftArticle, TaskState
from graphs import WIRING, AgentOutput, WriteRequest
from graphs.errors import Omitted
from graphs.tools.toolbox import ToolResult
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.e2e  # each call starts the server's process

SERVER = McpServer(
    command=sys.executable, args=(str(Path(__file__).with_name("notes_mcp_server.py")),)
)


def granted(settings: Settings, *tools: str, **bounds: Any) -> Settings:
    """``settings`` with the notes server, and its ``tools`` given to the writer."""
    grants = [{"node": "writer", "server": "notes", "tool": tool, **bounds} for tool in tools]
    return settings.with_overrides(mcp_servers={"notes": SERVER.model_dump()}, mcp_tools=grants)


@dataclass
class CallingWriter(OfflineWriterAgent):
    """The offline writer, making ``calls`` through its request's tools before it writes."""

    calls: list[tuple[str, dict[str, Any], bool]] = field(default_factory=list)
    answers: list[ToolResult] = field(default_factory=list)

    def run(self, request: WriteRequest) -> AgentOutput[DraftArticle]:
        assert request.tools is not None
        for name, args, by_model in self.calls:
            self.answers.append(request.tools.call(name, args, by_model=by_model))
        return super().run(request)


def run_with(settings: Settings, writer: CallingWriter, thread: str) -> Workflow:
    context = build_context(settings).with_agent("writer", writer)
    with Workflow(settings, context=context) as workflow:
        outcome = workflow.run(OBJECTIVE, thread)
        assert outcome.state == TaskState.COMPLETED, outcome
        return workflow


def writer_receipts(settings: Settings, thread: str) -> list[Any]:
    with Workflow(settings, read_only=True) as workflow:
        writer = next(run for run in workflow.history(thread) if run.node_id == "writer")
    return writer.tool_receipts


def test_a_granted_mcp_tool_answers_the_writer_through_the_boundary_and_is_receipted(
    settings: Settings,
) -> None:
    chosen = granted(settings, "lookup", max_calls=2)
    writer = CallingWriter(
        calls=[
            ("notes_lookup", {"term": "Rosetta"}, False),
            ("notes_lookup", {"term": 7}, True),  # the schema wants a string
            ("notes_lookup", {"term": "stele"}, False),  # over max_calls: never runs
        ]
    )
    run_with(chosen, writer, "t-mcp")
    found, refused, over = writer.answers
    assert found.error is None and found.output.content.startswith("notes on Rosetta")
    assert refused.error is not None and refused.error.code == "fix_arguments"
    assert "term" in refused.error.message and not refused.error.retryable
    assert over.error is not None and over.error.code == "budget_exhausted"
    receipts = writer_receipts(chosen, "t-mcp")
    assert [(r.tool, r.cost) for r in receipts] == [
        ("notes_lookup", 1),
        ("notes_lookup", 1),
        ("notes_lookup", 0),
    ]
    assert receipts[0].output_sha256 is not None and "Rosetta" in receipts[0].input_summary


def test_a_tool_the_node_was_not_given_is_refused_to_a_model_and_fails_code(
    settings: Settings,
) -> None:
    chosen = granted(settings, "lookup")
    asked = CallingWriter(calls=[("notes_vanish", {}, True)])
    run_with(chosen, asked, "t-denied")
    [denied] = asked.answers
    assert denied.error is not None and denied.error.code == "permission_denied"
    assert "notes_lookup" in denied.error.message
    context = build_context(chosen).with_agent(
        "writer", CallingWriter(calls=[("notes_vanish", {}, False)])
    )
    with (
        Workflow(chosen, context=context) as workflow,
        pytest.raises(Omitted, match="notes_vanish"),
    ):
        workflow.run(OBJECTIVE, "t-omitted")


def test_a_server_that_dies_mid_call_or_cannot_start_is_a_retryable_tool_error(
    settings: Settings,
) -> None:
    chosen = granted(settings, "vanish", "refuse")
    writer = CallingWriter(
        calls=[("notes_vanish", {}, False), ("notes_refuse", {"term": "x"}, False)]
    )
    run_with(chosen, writer, "t-vanish")  # the writer goes on: the run completes
    vanished, refused = writer.answers
    assert vanished.error is not None and vanished.error.code == "retryable"
    assert vanished.error.retryable and "unavailable" in vanished.error.message
    assert refused.error is not None and refused.error.code == "fix_arguments"
    assert "no notes about x" in refused.error.message
    missing = settings.with_overrides(
        mcp_servers={"notes": {"command": str(Path(settings.data_dir) / "no-such-server")}},
        mcp_tools=[{"node": "writer", "server": "notes", "tool": "lookup"}],
    )
    down = CallingWriter(calls=[("notes_lookup", {"term": "Rosetta"}, False)])
    run_with(missing, down, "t-down")
    [answer] = down.answers
    assert answer.error is not None and answer.error.code == "retryable"


def test_a_large_answer_goes_to_the_artifact_store_and_the_caller_gets_its_ref(
    settings: Settings,
) -> None:
    chosen = granted(settings, "long_note", trim_bytes=1000)
    writer = CallingWriter(calls=[("notes_long_note", {"words": 500}, False)])
    workflow = run_with(chosen, writer, "t-long")
    [answer] = writer.answers
    assert answer.error is None and answer.output is None and answer.ref is not None
    with Workflow(chosen, read_only=True) as reader:
        assert b"papyrus papyrus" in reader.context.store.get(answer.ref)
    assert workflow is not None


def test_a_grant_naming_no_node_or_server_is_refused_naming_what_exists() -> None:
    servers = {"notes": SERVER}
    with pytest.raises(ValueError, match="no node 'editor'.*writer"):
        with_mcp_tools(WIRING, servers, [McpGrant(node="editor", server="notes", tool="x")])
    with pytest.raises(ValueError, match="no server 'wiki'.*notes"):
        with_mcp_tools(WIRING, servers, [McpGrant(node="writer", server="wiki", tool="x")])
    with pytest.raises(ValueError, match="command.*url"):
        McpServer(command="python", url="http://127.0.0.1:1/mcp")
    writer_write = McpGrant(node="writer", server="notes", tool="x", kind="write")
    with pytest.raises(ValueError, match="serves the export step's write.*'writer'"):
        mcp_export(servers, [writer_write])
    with pytest.raises(ValueError, match="this grant reads"):
        McpGrant(node="writer", server="notes", tool="x", arguments={"text": "markdown"})


def test_a_model_is_offered_the_tool_s_own_schema_and_told_when_it_asks_for_another(
    tmp_path: Path,
) -> None:
    from app.agents import LLMWriterAgent
    from app.storage.artifacts import FilesystemArtifactStore
    from graphs.tools import Toolbox, ToolEnv
    from tests.app.agents.scripted import calling, draft, reply, scripted_with_tools
    from tests.app.agents.test_llm_agents import FIXED, HANDOFF, TASK, _bundle_and_draft, _step

    store = FilesystemArtifactStore(tmp_path)
    bundle, _ = _bundle_and_draft(store, "# A\n\nText [claim-1].\n")
    lookup = tool_spec(McpGrant(node="writer", server="notes", tool="lookup"), SERVER)
    env = ToolEnv(store=store, step=_step("writer"), clock=lambda: FIXED)
    tools = Toolbox(node="writer", tools=(lookup,), env=env)
    asks = calling(("notes_lookup", {"term": "Rosetta"}), ("notes_vanish", {}))
    model, _ = scripted_with_tools(asks, reply(draft()))
    LLMWriterAgent(model).run(
        WriteRequest(TASK, HANDOFF, bundle, None, None, store, _step("writer"), tools=tools)
    )
    [offered] = model.offered
    assert offered["function"]["name"] == "notes_lookup"
    assert offered["function"]["parameters"]["properties"]["term"]["type"] == "string"
    answered, denied = tools.receipts
    assert (answered.tool, answered.error) == ("notes_lookup", None)
    assert denied.error is not None and denied.error.code == "permission_denied"
    assert "notes_lookup" in denied.error.message


def test_a_server_over_streamable_http_is_reached_by_its_url(settings: Settings) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, SERVER.args[0], "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the HTTP server never listened"
            time.sleep(0.1)
        chosen = settings.with_overrides(
            mcp_servers={"notes": {"url": f"http://127.0.0.1:{port}/mcp"}},
            mcp_tools=[{"node": "writer", "server": "notes", "tool": "lookup"}],
        )
        writer = CallingWriter(calls=[("notes_lookup", {"term": "cartouche"}, False)])
        run_with(chosen, writer, "t-http")
    finally:
        server.terminate()
        server.wait(10)
    [answer] = writer.answers
    assert answer.error is None and answer.output.content.startswith("notes on cartouche")


def test_a_slow_answer_or_a_server_speaking_garbage_is_a_retryable_tool_error(
    settings: Settings, tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage_server.py"
    garbage.write_text(
        "import sys\nprint('this is no JSON-RPC', flush=True)\nsys.stdin.readline()\n"
    )
    slow = McpTool("notes", SERVER, "slow", timeout_seconds=1)
    junk = McpTool("junk", McpServer(command=sys.executable, args=(str(garbage),)), "x", 5)
    started = time.monotonic()
    for tool, arguments, why in (
        (slow, {"seconds": 30}, "did not answer within 1 s"),
        (junk, {}, "unavailable"),
    ):
        with pytest.raises(McpUnavailable, match=why):
            tool.call(arguments)
    assert time.monotonic() - started < 25, "neither call hung"
    chosen = granted(settings, "slow", timeout_seconds=1)
    writer = CallingWriter(calls=[("notes_slow", {"seconds": 30}, False)])
    run_with(chosen, writer, "t-slow")
    [late] = writer.answers
    assert late.error is not None and late.error.code == "retryable"
