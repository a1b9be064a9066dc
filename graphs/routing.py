"""What the routers share.

Whether the run stopped, whether research waits for a person, and where a node that
refused its changed inputs sends the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from langgraph.graph import END

from contracts import FreshnessReport, ResearchBundle, RunOutcome, TaskSpec
from graphs.boundary import read, require
from graphs.stale import only_revised_draft, research_changed

STOP: Literal["__end__"] = "__end__"
assert STOP == END


def stopped(state: Mapping[str, Any]) -> bool:
    """A node recorded an outcome (budget spent, retries exhausted): the run ends now."""
    return read(state, "outcome", RunOutcome, node="router") is not None


def needs_approval(task: TaskSpec, bundle: ResearchBundle) -> bool:
    """A person approves research when the policy says so or questions are still open."""
    return task.policies.require_approval or bool(bundle.open_questions)


def refused(state: Mapping[str, Any], node: str) -> FreshnessReport | None:
    """The report of a node that found its inputs changed and did not consume them."""
    report = read(state, "freshness", FreshnessReport, node="router")
    if report is not None and report.node == node and report.verdict != "fresh":
        return report
    return None


Reevaluate = Literal["research", "writer", "reviewer", "stale_decision"]


def route_stale(state: Mapping[str, Any], report: FreshnessReport, allowed: Any) -> Reevaluate:
    """Changed inputs: ask a person (policy ask), else go back to what must be redone.

    ``allowed`` is the ``Literal`` of targets the refusing node can reach: research output
    changed → research; a person's newer draft → review it; a draft gone → write again.
    """
    task = require(state, "task", TaskSpec, node="route_stale")
    target: Reevaluate
    if task.policies.on_stale == "ask":
        target = "stale_decision"
    elif research_changed(report):
        target = "research"
    else:
        target = "reviewer" if only_revised_draft(report) else "writer"
    if target not in get_args(allowed):
        raise ValueError(f"{report.node} refused {report.describe()}; it cannot go to {target}")
    return target
