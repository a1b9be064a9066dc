"""Work of two kinds side by side, added through the public API: one route starts both.

Between the writer and the reviewer, ``check_spans`` (one task per source, from
``tests/extension_span_check.py``) and ``measure_draft`` (one task: ``one_task``) run in
the same step; their join ``join_checks`` waits for both, and hands the reviewer one
check. The route that hands a new draft to review (the writer's, as shipped:
``tests.placing``) names both branch nodes as a tuple.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from typing_extensions import TypedDict

from contracts import DraftArticle, TaskSpec, VersionedContract
from graphs import WIRING, NodeCall, NodeResult, Wiring, no_task, node, one_task
from tests.extension_span_check import SpanCheckOutput, check_spans, merged_check
from tests.placing import with_extension


class DraftMeasure(VersionedContract):
    """How long the draft is, measured beside the quote check."""

    kind: Literal["draft_measure"] = Field(default="draft_measure", description="Discriminator.")
    revision: int = Field(ge=1, description="The draft revision measured.")
    words: int = Field(ge=0, description="Words in the draft's body.")

    EXAMPLES = [{"revision": 1, "words": 240}]

    def summary(self) -> str:
        """The CLI's progress line."""
        return f"draft revision {self.revision}: {self.words} words"


class MeasureDraftInput(TypedDict):
    """The draft to measure."""

    task: TaskSpec
    draft: DraftArticle | None


class DraftMeasureOutput(TypedDict, total=False):
    """The measure, from the branch and again from the join."""

    draft_measure: DraftMeasure | None


@node(
    "measure_draft",
    reads=MeasureDraftInput,
    writes=DraftMeasureOutput,
    branch=one_task,
    task_view=no_task,
)
def measure_draft(call: NodeCall) -> NodeResult:
    """Measure the draft (one task, beside the quote check's tasks)."""
    draft: DraftArticle = call.require("draft")
    return NodeResult(
        {"draft_measure": DraftMeasure(revision=draft.revision, words=draft.word_count)}
    )


class JoinChecksInput(TypedDict):
    """The task; both kinds of check arrive through the join."""

    task: TaskSpec


class JoinChecksOutput(SpanCheckOutput, DraftMeasureOutput, total=False):
    """The merged quote check and the draft's measure."""


@node(
    "join_checks",
    reads=JoinChecksInput,
    writes=JoinChecksOutput,
    joins=(check_spans, measure_draft),
    read_by=("reviewer",),
)
def join_checks(call: NodeCall) -> NodeResult:
    """Both checks, as the reviewer's inputs."""
    [(_, measure)] = call.branch_outputs(measure_draft, "draft_measure")
    return NodeResult({"span_check": merged_check(call), "draft_measure": measure})


WIRING_SIDE_BY_SIDE: Wiring = with_extension(
    WIRING,
    (check_spans, "join_checks"),
    (measure_draft, "join_checks"),
    (join_checks, "reviewer"),
    via=("check_spans", "measure_draft"),
)
