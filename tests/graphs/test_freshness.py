"""An artifact in a contract a project adds is pinned and checked as the shipped ones are.

A node a project adds stores its own kind of artifact and hands the reference over in its own
contract. The envelope pins that revision, and the node reading it refuses it once it has
changed, gone, or belongs to another thread: nothing is consumed, and the thread waits at
that step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import Field
from typing_extensions import TypedDict

from app.services import build_context
from app.settings import Settings
from app.storage.serde import contract_serializer
from contracts import ArtifactRef, TaskSpec, VersionedContract
from contracts.artifacts import example_ref
from graphs import RunContext, build_graph, get_step_info, node
from graphs.errors import IntegrityError, StaleInput
from graphs.freshness import refs_in
from graphs.routing import STOP

MD = "text/markdown"


class Summary(VersionedContract):
    """A summary of the task, its text in the artifact store."""

    kind: Literal["summary"] = Field(default="summary", description="Discriminator.")
    text: ArtifactRef = Field(description="The summary's text.")

    EXAMPLES = [{"text": example_ref("summary", "t-summary")}]


class ReadBack(VersionedContract):
    """What the reader found: the length of the summary it read."""

    kind: Literal["read_back"] = Field(default="read_back", description="Discriminator.")
    length: int = Field(ge=0, description="Bytes read.")

    EXAMPLES = [{"length": 3}]


class SummarizeInput(TypedDict):
    task: TaskSpec


class SummarizeOutput(TypedDict, total=False):
    summary: Summary | None


class ReadInput(TypedDict):
    task: TaskSpec
    summary: Summary | None


class ReadOutput(TypedDict, total=False):
    read_back: ReadBack | None


@node("summarize", reads=SummarizeInput, writes=SummarizeOutput)
def summarize(state: SummarizeInput, runtime: Any) -> SummarizeOutput:
    """Stores a kind of artifact no shipped node stores, and hands over its reference."""
    step = get_step_info()
    text = state["task"].objective.encode()
    ref = runtime.context.store.put(step.artifact_id("summary"), "summary", text, MD)
    return {"summary": Summary(text=ref)}


@node("read_summary", reads=ReadInput, writes=ReadOutput, terminal=True)
def read_summary(state: ReadInput, runtime: Any) -> ReadOutput:
    summary = state["summary"]
    assert summary is not None
    return {"read_back": ReadBack(length=len(runtime.context.store.get(summary.text)))}


def paused_before_reader(tmp_path: Path, thread: str) -> tuple[Any, RunContext, Any]:
    """The graph run up to the reader, with the summarizer's envelope in state."""
    services = build_context(Settings(data_dir=tmp_path, database_url="memory://"))
    graph: CompiledStateGraph[Any, Any, Any, Any] = build_graph(
        wiring=((summarize, "read_summary"), (read_summary, STOP))
    ).compile(
        checkpointer=InMemorySaver(serde=contract_serializer()),
        interrupt_before=["read_summary"],
    )
    config: Any = {"configurable": {"thread_id": thread}}
    task = TaskSpec(task_id=thread, objective="Sum it up")
    graph.invoke({"task": task}, config, context=services)
    return graph, services, config


def test_the_envelope_pins_an_artifact_of_a_contract_a_project_adds(tmp_path: Path) -> None:
    graph, services, config = paused_before_reader(tmp_path, "t-pin")
    values = graph.get_state(config).values
    ref = values["summary"].text
    assert ref.kind == "summary" and ref.artifact_id == "t-pin-summary"
    assert ref in values["handoff"].artifacts

    graph.invoke(None, config, context=services)
    assert graph.get_state(config).values["read_back"].length == len(b"Sum it up")


def test_a_reader_refuses_a_project_artifact_that_changed_since_it_was_handed_over(
    tmp_path: Path,
) -> None:
    graph, services, config = paused_before_reader(tmp_path, "t-stale")
    services.store.put("t-stale-summary", "summary", b"Edited behind its back", MD)

    with pytest.raises(StaleInput) as refused:
        graph.invoke(None, config, context=services)

    message = refused.value.message
    assert message.startswith(
        "read_summary refused its inputs: summary artifact://summary/t-stale-summary@1: stale"
    )
    assert "nothing was consumed" in message
    state = graph.get_state(config)
    assert state.next == ("read_summary",) and "read_back" not in state.values
    [refused_run] = [
        run for run in services.ledger.runs("t-stale") if run.node_id == "read_summary"
    ]
    assert refused_run.error is not None and refused_run.error.kind == "stale_input"
    assert "t-stale-summary@1: stale" in refused_run.error.detail, "the audit says why it waits"


def test_a_reader_refuses_another_threads_artifact_put_in_its_state(tmp_path: Path) -> None:
    graph, services, config = paused_before_reader(tmp_path, "t-victim")
    donor = services.store.put("t-donor-summary", "summary", b"Not yours", MD)
    graph.update_state(config, {"summary": Summary(text=donor)}, as_node="summarize")

    with pytest.raises(IntegrityError, match="t-donor-summary is not this thread's artifact"):
        graph.invoke(None, config, context=services)
    assert "read_back" not in graph.get_state(config).values


def test_references_are_found_however_deep_a_contract_holds_them() -> None:
    ref = ArtifactRef.model_validate(ArtifactRef.EXAMPLES[0])
    nested = {"a": [Summary(text=ref)], "b": (ref,), "c": "artifact://draft/x"}
    assert list(refs_in(nested)) == [ref, ref]
    assert list(refs_in(ReadBack(length=1))) == []
