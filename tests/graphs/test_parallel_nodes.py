"""Nodes side by side, the LangGraph way: a router returns several node names.

The nodes it names are plain nodes, declared with no ``branch=``: they run in one step,
each audited as its own task and writing its own channels, and the one node they go on to
joins them: it runs once, after both (``defer=True``), and its envelope lists them. A
shipped node (the reviewer) goes beside a new one with no edit to its module.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, cast

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.runtime import Runtime
from pydantic import Field
from typing_extensions import TypedDict

from app.services import build_context
from app.settings import Settings
from app.storage.serde import contract_serializer
from app.workflow import Workflow
from contracts import DraftArticle, ResearchBundle, TaskSpec, VersionedContract
from graphs import WIRING, RunContext, Wiring, build_graph, node
from graphs.errors import WiringError
from graphs.fan_out import PartialFanOut
from graphs.graph import route_after_review, route_after_writer
from graphs.routing import STOP, RouteState, started_beside
from graphs.wiring import targets
from tests.backends import sqlite_settings


class Count(VersionedContract):
    """A number a node found."""

    kind: Literal["count"] = Field(default="count", description="Discriminator.")
    value: int = Field(ge=0, description="What was counted.")


class TaskOnly(TypedDict):
    task: TaskSpec


class WordsOutput(TypedDict, total=False):
    words: Count | None


class LettersOutput(TypedDict, total=False):
    letters: Count | None


class TotalInput(TypedDict):
    task: TaskSpec
    words: Count | None
    letters: Count | None


class TotalOutput(TypedDict, total=False):
    total: Count | None


RAN: list[str] = []
"""Each body run, in order."""
CRASH: set[str] = set()
"""Nodes whose next run raises (once each)."""


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    RAN.clear()
    CRASH.clear()
    yield


@node("plan", reads=TaskOnly, writes=WordsOutput)
def plan(state: TaskOnly, runtime: Runtime[RunContext]) -> WordsOutput:
    RAN.append("plan")
    return {}


def both(state: RouteState) -> list[Literal["count_words", "count_letters"]]:
    return ["count_words", "count_letters"]


def body(name: str, channel: str) -> Any:
    def count(state: TaskOnly, runtime: Runtime[RunContext]) -> Any:
        RAN.append(name)
        if name in CRASH:
            CRASH.discard(name)
            raise RuntimeError(f"{name} crashed")
        objective = state["task"].objective
        return {channel: Count(value=len(objective.split() if channel == "words" else objective))}

    count.__name__ = name
    return count


count_words = node("count_words", reads=TaskOnly, writes=WordsOutput, retry=None)(
    body("count_words", "words")
)
count_letters = node("count_letters", reads=TaskOnly, writes=LettersOutput, retry=None)(
    body("count_letters", "letters")
)


@node("total", reads=TotalInput, writes=TotalOutput)
def total(state: TotalInput, runtime: Runtime[RunContext]) -> TotalOutput:
    RAN.append("total")
    words, letters = state["words"], state["letters"]
    assert words is not None and letters is not None, "both ran before the join"
    return {"total": Count(value=words.value + letters.value)}


SIDE_BY_SIDE: Wiring = (
    (plan, both),
    (count_words, "total"),
    (count_letters, "total"),
    (total, STOP),
)
OBJECTIVE = "Count the words and letters"
ROSETTA = "Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs"


def run(wiring: Wiring, tmp_path: Path) -> tuple[Any, Any, RunContext]:
    services = build_context(Settings(data_dir=tmp_path, database_url="memory://"))
    graph = build_graph(wiring=wiring).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-side"}}
    graph.invoke(
        {"task": TaskSpec(task_id="t-side", objective=OBJECTIVE)}, config, context=services
    )
    return graph, config, services


def test_nodes_a_router_lists_run_in_one_step_and_the_node_after_them_joins_both(
    tmp_path: Path,
) -> None:
    graph, config, services = run(SIDE_BY_SIDE, tmp_path)
    values = graph.get_state(config).values
    assert values["total"] == Count(value=len(OBJECTIVE.split()) + len(OBJECTIVE))
    assert RAN[0] == "plan" and sorted(RAN[1:3]) == ["count_letters", "count_words"]
    assert RAN[3:] == ["total"], "the join ran once, after both"
    pending = [set(snapshot.next) for snapshot in graph.get_state_history(config)]
    assert {"count_words", "count_letters"} in pending, "one step ran both"
    runs = services.ledger.runs("t-side")
    assert [run.status for run in runs if run.node_id.startswith("count_")] == ["succeeded"] * 2
    handed = values["handoff"]
    assert handed.from_node == "total"
    assert sorted(item.node for item in handed.branches) == ["count_letters", "count_words"]


def test_the_envelope_before_them_names_both_nodes(tmp_path: Path) -> None:
    graph, config, _ = run(SIDE_BY_SIDE, tmp_path)
    handed = [snapshot.values.get("handoff") for snapshot in graph.get_state_history(config)]
    first = next(h for h in handed if h is not None and h.from_node == "plan")
    assert first.next_nodes == ["count_words", "count_letters"]


class LettersState(TypedDict):
    letters: Count | None


def words_unless_counted(
    state: LettersState,
) -> Literal["count_words"] | list[Literal["count_words", "count_letters"]]:
    return "count_words" if state.get("letters") else ["count_words", "count_letters"]


@node("recount", reads=TaskOnly, writes=LettersOutput)
def recount(state: TaskOnly, runtime: Runtime[RunContext]) -> LettersOutput:
    return {"letters": Count(value=0)}


def test_a_route_naming_one_of_them_alone_runs_it_alone_and_then_the_join(
    tmp_path: Path,
) -> None:
    wiring: Wiring = (
        (recount, words_unless_counted),
        (count_words, "total"),
        (count_letters, "total"),
        (total, STOP),
    )
    graph, config, _ = run(wiring, tmp_path)
    assert RAN == ["count_words", "total"]
    assert graph.get_state(config).values["total"] == Count(value=len(OBJECTIVE.split()))


def test_a_crashed_node_beside_another_alone_runs_again_on_resume_from_an_sqlite_checkpoint(
    tmp_path: Path,
) -> None:
    services = build_context(sqlite_settings(tmp_path / "data"))
    config: Any = {"configurable": {"thread_id": "t-side"}}
    task = TaskSpec(task_id="t-side", objective=OBJECTIVE)
    serde = contract_serializer()
    CRASH.add("count_letters")
    with sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False) as connection:
        graph = build_graph(wiring=SIDE_BY_SIDE).compile(
            checkpointer=SqliteSaver(connection, serde=serde)
        )
        with pytest.raises(RuntimeError, match="count_letters crashed"):
            graph.invoke({"task": task}, config, context=services, durability="sync")
    with sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False) as connection:
        graph = build_graph(wiring=SIDE_BY_SIDE).compile(
            checkpointer=SqliteSaver(connection, serde=serde)
        )
        graph.invoke(None, config, context=services, durability="sync")
        values = graph.get_state(config).values
    assert RAN.count("count_words") == 1, "the finished one was not run again"
    assert RAN.count("count_letters") == 2 and RAN.count("total") == 1
    assert values["total"] == Count(value=len(OBJECTIVE.split()) + len(OBJECTIVE))


def test_two_nodes_side_by_side_writing_one_channel_with_no_reducer_fail_the_build() -> None:
    twin = node("twin", reads=TaskOnly, writes=WordsOutput)(body("twin", "words"))

    def words_twice(state: RouteState) -> list[Literal["count_words", "twin"]]:
        return ["count_words", "twin"]

    wiring: Wiring = ((plan, words_twice), (count_words, "total"), (twin, "total"), (total, STOP))
    with pytest.raises(WiringError, match=r"\['count_words', 'twin'\] run side by side .* 'words'"):
        build_graph(wiring=wiring)


def test_a_node_side_by_side_that_routes_on_by_itself_fails_the_build_naming_the_join() -> None:
    def onward(state: RouteState) -> Literal["total", "__end__"]:
        return "total"

    wiring: Wiring = (
        (plan, both),
        (count_words, onward),
        (count_letters, "total"),
        (total, STOP),
    )
    with pytest.raises(WiringError, match="count_words.* wired as \\(count_words, '<join>'\\)"):
        build_graph(wiring=wiring)


def test_a_router_returning_names_its_type_does_not_list_fails_naming_the_annotation(
    tmp_path: Path,
) -> None:
    def unannotated(state: RouteState) -> Literal["count_words", "count_letters"]:
        return cast(Any, ["count_words", "count_letters"])

    wiring: Wiring = (
        (plan, unannotated),
        (count_words, "total"),
        (count_letters, "total"),
        (total, STOP),
    )
    with pytest.raises(PartialFanOut, match=r"list\[Literal\['count_words', 'count_letters'\]\]"):
        run(wiring, tmp_path)


class QuoteCount(VersionedContract):
    """How many facts the draft cites, counted beside the review."""

    kind: Literal["quote_count"] = Field(default="quote_count", description="Discriminator.")
    revision: int = Field(ge=1, description="The draft revision counted.")
    cited: int = Field(ge=0, description="Facts the draft cites.")


class CountCitedInput(TypedDict):
    task: TaskSpec
    draft: DraftArticle | None
    research: ResearchBundle | None


class CountCitedOutput(TypedDict, total=False):
    quote_count: QuoteCount | None


@node("tally_cited", reads=CountCitedInput, writes=CountCitedOutput)
def tally_cited(state: CountCitedInput, runtime: Runtime[RunContext]) -> CountCitedOutput:
    draft = state["draft"]
    assert draft is not None
    return {"quote_count": QuoteCount(revision=draft.revision, cited=len(draft.cited_claim_ids))}


class JoinReviewInput(TypedDict):
    task: TaskSpec
    quote_count: QuoteCount | None


@node("join_tally", reads=JoinReviewInput, writes=CountCitedOutput)
def join_tally(state: JoinReviewInput, runtime: Runtime[RunContext]) -> CountCitedOutput:
    return {}


WriterRoute = Literal["research", "stale_decision", "conclude", "__end__"]


def review_beside_counting(
    state: RouteState,
) -> WriterRoute | list[Literal["reviewer", "tally_cited"]]:
    chosen = route_after_writer(state)
    return ["reviewer", "tally_cited"] if chosen == "reviewer" else cast(WriterRoute, chosen)


def beside_the_reviewer(wiring: Wiring) -> Wiring:
    """The shipped wiring with a count beside the reviewer: the writer's route names both,
    both go on to a join, and the join routes as the reviewer did."""
    found: list[Any] = []
    for spec, route in wiring:
        if spec.name == "writer":
            found.append((spec, review_beside_counting))
        elif spec.name == "reviewer":
            found += [(spec, "join_tally"), (tally_cited, "join_tally")]
            found.append((join_tally, route_after_review))
        else:
            found.append((spec, route))
    return tuple(found)


def test_the_shipped_reviewer_runs_beside_a_new_node_with_no_edit_to_its_module(
    settings: Settings,
) -> None:
    writer_route = next(route for spec, route in WIRING if spec.name == "writer")
    if started_beside(writer_route, "reviewer"):
        pytest.skip("the project's writer already starts the reviewer beside a node of its own")
    wiring = beside_the_reviewer(WIRING)
    assert "tally_cited" in targets(review_beside_counting)
    with Workflow(settings, wiring=wiring) as workflow:
        assert workflow.run(ROSETTA, "t-beside").result_status == "completed"
        values = workflow.graph.get_state(workflow.config("t-beside")).values
    draft = values["draft"]
    assert values["quote_count"] == QuoteCount(
        revision=draft.revision, cited=len(draft.cited_claim_ids)
    )
    assert values["review"].verdict == "approved"
