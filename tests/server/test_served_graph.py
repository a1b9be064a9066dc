"""The graph langgraph.json exports, and the checkpointer it names, without a server.

The dev server hands nodes whatever its checkpointer loads, and ignores the saver's msgpack
allowlist: contracts may arrive as plain dicts. These tests run the served graph the way
the server does (compiled without a checkpointer, one attached afterwards, JSON context)
with a serializer that revives no contract at all, stopping before every node so each one
reads its input back from the checkpoint.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command

from app.server import graph as server
from app.server.checkpointer import checkpointer, open_async_checkpointer
from app.settings import Settings
from app.storage.backends import UnsupportedDatabaseUrl, artifact_store_for
from app.workflow import Workflow
from contracts import HumanDecision, RunOutcome, TaskSpec, TaskState
from graphs import WorkflowInput, WorkflowOutput, workflow_channels
from graphs.boundary import validate_channel
from graphs.human import request_in
from tests.conftest import OBJECTIVE
from tests.server.conftest import ROOT, folder_settings

THREAD = "t-served"


class PlainDicts(JsonPlusSerializer):
    """Revives no contract: what a server that ignores the allowlist hands the nodes."""

    def __init__(self) -> None:
        super().__init__(allowed_msgpack_modules=None)

    def with_msgpack_allowlist(self, extra_allowlist: Any) -> JsonPlusSerializer:
        return self


def graph_input(**policies: Any) -> dict[str, Any]:
    spec = TaskSpec(task_id="served", objective=OBJECTIVE, policies=policies)
    return {"task": spec.model_dump(mode="json")}


def answer(request: Any) -> Command:
    typed = request_in(request)
    decision = HumanDecision(interrupt_id=typed.interrupt_id, action="approve", decided_by="t")
    return Command(resume=decision.model_dump(mode="json"))


def test_langgraph_json_exports_the_graph_the_checkpointer_and_the_env() -> None:
    from langgraph_cli.config import validate_config_file

    config = validate_config_file(ROOT / "langgraph.json")
    assert config["dependencies"] == ["."]
    assert config["env"] == ".env"
    graph_path, graph_name = config["graphs"][server.GRAPH_ID].rsplit(":", 1)
    assert (ROOT / graph_path) == ROOT / "app" / "server" / "graph.py"
    assert graph_name == "make_graph"
    saver_path, saver_name = config["checkpointer"]["path"].rsplit(":", 1)
    assert (ROOT / saver_path) == ROOT / "app" / "server" / "checkpointer.py"
    assert saver_name == "checkpointer"


def test_the_exported_graph_has_no_checkpointer_and_a_json_context(served_folder: Path) -> None:
    graph = server.served_graph()
    assert graph.checkpointer is None, "langgraph dev refuses a graph with its own checkpointer"
    assert graph.context_schema is server.ServerContext
    assert server.ServerContext.model_validate({"thread_id": "x", "anything": 1})


def test_studio_gets_the_input_output_and_context_schemas(served_folder: Path) -> None:
    """What the dev server answers Studio's ``get_schemas`` with, built as it builds them.

    langgraph-api asks the compiled graph for each schema and, when one fails to build,
    logs it and sends null: Studio then has no input form. On Python 3.11 a ``typing``
    TypedDict made every one of them fail (``tests/graphs/test_typed_dicts.py``).
    """
    graph = server.served_graph()
    given = graph.get_input_jsonschema()
    assert set(given["properties"]) == set(WorkflowInput.__annotations__)  # a revision too
    assert "reason" in given["$defs"]["TaskRevision"]["required"]
    assert "objective" in given["$defs"]["TaskSpec"]["required"]
    returned = graph.get_output_jsonschema()
    assert set(returned["properties"]) == set(WorkflowOutput.__annotations__)
    assert "RunOutcome" in returned["$defs"]
    chosen = graph.get_context_jsonschema()
    assert chosen is not None
    assert set(chosen["properties"]) == set(server.ServerContext.model_fields)


def test_nodes_accept_plain_dicts_at_every_boundary(served_folder: Path) -> None:
    saver = InMemorySaver(serde=PlainDicts())
    graph = server.served_graph().copy(update={"checkpointer": saver})
    config = {"configurable": {"thread_id": THREAD}}
    context = {"thread_id": THREAD, "graph_id": server.GRAPH_ID}  # what the server sends
    payload: Any = graph_input(require_approval=True)
    visited: list[str] = []
    for _ in range(20):
        graph.invoke(payload, config, context=context, interrupt_before="*")
        state = graph.get_state(config)
        for channel, value in state.values.items():
            assert value is None or isinstance(value, dict), f"{channel} revived as a model"
        if not state.next:
            break
        visited.extend(state.next)
        payload = answer(state.interrupts[0].value) if state.interrupts else None
    else:
        pytest.fail(f"the run did not end; visited {visited}")

    assert {"research", "approve_research", "writer", "reviewer", "finalize"} <= set(visited)
    values = {
        channel: validate_channel("test", channel, value, workflow_channels())
        for channel, value in state.values.items()
        if value is not None
    }
    outcome: RunOutcome = values["outcome"]
    assert outcome.state == TaskState.COMPLETED and outcome.result_status == "completed"
    assert outcome.article is not None
    store = server.server_context().store
    assert store.get(outcome.article).startswith(b"# ")
    assert (served_folder / "data" / "artifacts").is_dir(), "artifacts land where settings say"


def test_the_server_checkpointer_writes_where_the_cli_reads(served_folder: Path) -> None:
    async def run_as_the_server_does() -> dict[str, Any]:
        async with checkpointer() as saver:
            graph = server.served_graph().copy(update={"checkpointer": saver})
            config = {"configurable": {"thread_id": THREAD}}
            await graph.ainvoke(graph_input(require_approval=True), config, context={})
            state = await graph.aget_state(config)
            return state.interrupts[0].value

    request = request_in(asyncio.run(run_as_the_server_does()))
    with Workflow(folder_settings(served_folder)) as workflow:
        assert workflow.threads() == [THREAD]
        assert workflow.pending(THREAD) == request
        assert workflow.outcome(THREAD).state == TaskState.INPUT_REQUIRED


def test_memory_means_one_saver_per_server_process(
    served_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDOFF_DATABASE_URL", "memory://")

    async def entered_twice() -> tuple[object, object]:
        async with checkpointer() as first, checkpointer() as second:
            return first, second

    first, second = asyncio.run(entered_twice())
    assert isinstance(first, InMemorySaver) and first is second


def test_an_unsupported_database_url_is_refused_by_name() -> None:
    async def open_it() -> None:
        async with open_async_checkpointer("mysql://db/x"):
            pass

    with pytest.raises(UnsupportedDatabaseUrl, match="mysql"):
        asyncio.run(open_it())


def test_services_come_from_settings_once_per_process(served_folder: Path) -> None:
    context = server.server_context()
    ref = context.store.put("probe", "notes", b"x", "text/plain")
    folder = Settings().resolved_artifact_dir()
    assert folder == served_folder / "data" / "artifacts"
    assert (folder / "blobs" / ref.sha256[:2] / ref.sha256).is_file()
    elsewhere = artifact_store_for(Settings())
    try:
        assert elsewhere.head("probe") == ref, "the history is where the settings say"
    finally:
        elsewhere.close()
    assert server.server_context() is context
