"""A second graph of the project, beside the workflow: the task's objective summarised.

Two declared nodes reusing the contracts, their wiring and its builder: all a second graph
takes, with its langgraph.json entry (``entry`` below; docs/adapt.md, A second graph).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import StateGraph
from typing_extensions import TypedDict

from contracts import DraftArticle, RunOutcome, TaskSpec, TaskState
from graphs import NodeCall, NodeResult, RunContext, Wiring, build_graph, node
from graphs.node_runner import ContextFactory
from graphs.routing import STOP, RouteState

GRAPH_ID = "summarise"


class SummariseInput(TypedDict):
    task: TaskSpec


class SummaryOutput(TypedDict, total=False):
    draft: DraftArticle | None


class PublishInput(TypedDict):
    task: TaskSpec
    draft: DraftArticle | None


class PublishOutput(TypedDict, total=False):
    outcome: RunOutcome | None


@node("summarise", reads=SummariseInput, writes=SummaryOutput)
def summarise(call: NodeCall) -> NodeResult:
    """One paragraph: the objective, as the summary's whole text."""
    task: TaskSpec = call.require("task")
    body = f"# Summary\n\n{task.objective}\n".encode()
    ref = call.ctx.store.put(call.step.artifact_id("draft"), "draft", body, "text/markdown")
    words = len(task.objective.split())
    draft = DraftArticle(
        task_id=task.task_id, result_status="completed", revision=1, body=ref, word_count=words
    )
    return NodeResult({"draft": draft})


@node("publish", reads=PublishInput, writes=PublishOutput, terminal=True)
def publish(call: NodeCall) -> NodeResult:
    """The summary is the run's article."""
    draft: DraftArticle = call.require("draft")
    outcome = call.outcome(TaskState.COMPLETED, "completed", draft=draft, article=draft.body)
    return NodeResult({"outcome": outcome})


def route_after_publish(state: RouteState) -> Literal["__end__"]:
    """Publishing ends the run."""
    return STOP


WIRING: Wiring = ((summarise, "publish"), (publish, route_after_publish))
"""The second graph's nodes; a run starts at ``summarise``."""


def build_summarise(
    default_context: ContextFactory | None = None, wiring: Wiring = WIRING
) -> StateGraph[Any, RunContext, Any, Any]:
    """The second graph's builder, by the workflow's machinery."""
    return build_graph(default_context, wiring)


def entry() -> dict[str, str]:
    """This graph's langgraph.json entry: the server's factory by its id, and its wiring."""
    return {"path": f"./app/server/graph.py:{GRAPH_ID}", "wiring": f"{__name__}:WIRING"}
