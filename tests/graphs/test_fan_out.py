"""A fan-out over what an artifact holds: the keys function takes LangGraph's runtime.

State holds only an artifact's reference; the number of branches depends on its bytes. A
keys function that takes ``runtime`` gets the run's services as its context, as a node
does, so it reads the store; the join asks the same function which results to wait for.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime
from pydantic import Field
from typing_extensions import TypedDict

from app.services import build_context
from app.settings import Settings
from app.storage.serde import contract_serializer
from contracts import ArtifactRef, TaskSpec, VersionedContract
from graphs import NodeCall, NodeResult, RunContext, build_graph, no_task, node
from graphs.errors import EmptyFanOut
from graphs.routing import STOP
from tests.graphs.test_omissions import TaskOnly, run

TEXT = "alpha beta\ngamma\ndelta epsilon zeta\n"


class Lines(VersionedContract):
    """A text kept in the store, one line a unit of work."""

    kind: Literal["lines"] = Field(default="lines", description="Discriminator.")
    body: ArtifactRef = Field(description="The text.")


class LineWords(VersionedContract):
    """How many words one line has."""

    kind: Literal["line_words"] = Field(default="line_words", description="Discriminator.")
    words: int = Field(ge=0, description="Words in the line.")


class WordsCounted(VersionedContract):
    """The lines' words, summed by the join."""

    kind: Literal["words_counted"] = Field(default="words_counted", description="Discriminator.")
    lines: int = Field(ge=0, description="Lines counted.")
    words: int = Field(ge=0, description="Words in all of them.")


class LinesOutput(TypedDict, total=False):
    lines: Lines | None


class LineInput(TypedDict):
    task: TaskSpec
    lines: Lines | None


class LineOutput(TypedDict, total=False):
    line_words: LineWords | None


class CountedOutput(TypedDict, total=False):
    words_counted: WordsCounted | None


def text_of(state: Mapping[str, Any], context: RunContext) -> list[str]:
    lines = Lines.model_validate(state["lines"])
    return context.store.get(lines.body).decode().splitlines()


def line_keys(state: Mapping[str, Any], runtime: Runtime[RunContext]) -> list[str]:
    """One key per line of the stored text: the state alone could not say how many."""
    return [f"line-{number}" for number, _ in enumerate(text_of(state, runtime.context), 1)]


@node("write_lines", reads=TaskOnly, writes=LinesOutput, stores_artifacts=True)
def write_lines(call: NodeCall) -> NodeResult:
    ref = call.ctx.store.put(call.step.artifact_id("lines"), "notes", TEXT.encode(), "text/plain")
    return NodeResult({"lines": Lines(body=ref)})


@node("count_line", reads=LineInput, writes=LineOutput, branch=line_keys, task_view=no_task)
def count_line(call: NodeCall) -> NodeResult:
    assert call.step.branch is not None
    number = int(call.step.branch.removeprefix("line-"))
    line = text_of(call.state, call.ctx)[number - 1]
    return NodeResult({"line_words": LineWords(words=len(line.split()))})


@node("join_lines", reads=TaskOnly, writes=CountedOutput, joins=(count_line,))
def join_lines(call: NodeCall) -> NodeResult:
    counts = call.branch_outputs(count_line, "line_words")
    total = sum(count.words for _, count in counts)
    return NodeResult({"words_counted": WordsCounted(lines=len(counts), words=total)})


def test_a_keys_function_taking_the_runtime_fans_out_over_a_stored_artifact(
    tmp_path: Path,
) -> None:
    wiring = ((write_lines, "count_line"), (count_line, "join_lines"), (join_lines, STOP))
    values = run(wiring, tmp_path, "t-lines")
    assert values["words_counted"] == WordsCounted(lines=3, words=6)


def test_the_graph_builds_with_a_keys_function_taking_the_runtime() -> None:
    graph = build_graph(
        wiring=((write_lines, "count_line"), (count_line, "join_lines"), (join_lines, STOP))
    ).compile()
    assert {"write_lines", "count_line", "join_lines"} <= set(graph.get_graph().nodes)


TEXTS: list[str] = []


@node("write_texts", reads=TaskOnly, writes=LinesOutput, stores_artifacts=True)
def write_texts(call: NodeCall) -> NodeResult:
    """Writes the next of ``TEXTS``: an empty text first, as a producer with no work might."""
    text = TEXTS.pop(0)
    ref = call.ctx.store.put(call.step.artifact_id("lines"), "notes", text.encode(), "text/plain")
    return NodeResult({"lines": Lines(body=ref)})


def test_a_fan_out_with_no_key_fails_the_attempt_routing_to_it_so_a_resume_runs_it_again(
    tmp_path: Path,
) -> None:
    TEXTS[:] = ["", TEXT]
    wiring = ((write_texts, "count_line"), (count_line, "join_lines"), (join_lines, STOP))
    services = build_context(Settings(data_dir=tmp_path, database_url="memory://"))
    graph = build_graph(wiring=wiring).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-empty"}}
    with pytest.raises(EmptyFanOut, match="the fan-out to 'count_line' found no branch key"):
        graph.invoke(
            {"task": TaskSpec(task_id="t-empty", objective="Count")}, config, context=services
        )
    [attempt] = services.ledger.runs("t-empty")
    assert attempt.node_id == "write_texts" and attempt.status != "completed"

    graph.invoke(None, config, context=services)
    assert graph.get_state(config).values["words_counted"] == WordsCounted(lines=3, words=6)
    assert TEXTS == [], "the producer ran again, not replayed from its first attempt"


def lines_or_end(
    state: Mapping[str, Any], runtime: Runtime[RunContext]
) -> Literal["count_line", "__end__"]:
    """A router reading the store through LangGraph's runtime, as a conditional edge may."""
    return "count_line" if text_of(state, runtime.context) else STOP


def test_a_router_taking_the_runtime_routes_on_a_stored_artifact(tmp_path: Path) -> None:
    wiring = ((write_lines, lines_or_end), (count_line, "join_lines"), (join_lines, STOP))
    values = run(wiring, tmp_path, "t-routed-lines")
    assert values["words_counted"] == WordsCounted(lines=3, words=6)
