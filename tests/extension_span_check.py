"""A parallel branch added through the public API: each source's quotes checked side by side.

The shape of docs/adapt.md's "A parallel branch", under other names than the page's
(``check_quotes``), so a project that applied the page keeps these tests as they are.
In a clone the parts below would go to three files: the contract to
``contracts/span_check.py``, the branch and its join to ``graphs/nodes/span_check.py``,
and the wiring to ``graphs/graph.py``. Here the wiring is an extended copy of the
project's: a new draft goes to ``check_spans`` (one task per source research read, run in
parallel) where it went on to review (the Writer's route, as shipped), and the join
``join_spans`` hands the merged check to the reviewer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field
from typing_extensions import TypedDict

from contracts import ResearchBundle, TaskSpec, VersionedContract
from graphs import WIRING, NodeCall, NodeResult, Wiring, no_task, node
from graphs.boundary import require
from graphs.routing import STOP, stopped
from tests.placing import with_extension

OBJECTIVE = "Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs"


# 1. The contract (contracts/span_check.py)
class SpanCheck(VersionedContract):
    """Whether each fact's quote is what its source snapshot holds at the fact's span."""

    kind: Literal["span_check"] = Field(default="span_check", description="Discriminator.")
    sources: list[str] = Field(description="Source ids whose facts were checked.")
    facts: int = Field(ge=0, description="Facts checked.")
    misquoted: list[str] = Field(description="Claim ids whose quote is not at their span.")

    EXAMPLES = [{"sources": ["src-1", "src-2"], "facts": 7, "misquoted": ["claim-2004"]}]

    def summary(self) -> str:
        """The CLI's progress line."""
        return f"{self.facts} quotes in {len(self.sources)} sources, {len(self.misquoted)} off"


# 2. The branch and its join (graphs/nodes/span_check.py)
class CheckQuotesInput(TypedDict):
    """The bundle whose facts are checked against their sources."""

    task: TaskSpec
    research: ResearchBundle | None


class SpanCheckOutput(TypedDict, total=False):
    """The check: a branch's for its source, the join's for them all."""

    span_check: SpanCheck | None


def source_keys(state: Mapping[str, Any]) -> list[str]:
    """One branch per source research read."""
    bundle = require(state, "research", ResearchBundle, node="check_spans")
    return [source.id for source in bundle.sources]


@node(
    "check_spans",
    reads=CheckQuotesInput,
    writes=SpanCheckOutput,
    branch=source_keys,
    task_view=no_task,
)
def check_spans(call: NodeCall) -> NodeResult:
    """Check the quotes of the facts from this branch's source against its snapshot."""
    bundle: ResearchBundle = call.require("research")
    source = bundle.source(call.step.branch or "")
    if source is None:
        raise ValueError(f"the bundle has no source {call.step.branch!r}")
    text = call.ctx.store.get(source.snapshot).decode()
    facts = [fact for fact in bundle.facts if fact.source_id == source.id]
    misquoted = [f.id for f in facts if text[f.span.start : f.span.end] != f.quote]
    check = SpanCheck(sources=[source.id], facts=len(facts), misquoted=misquoted)
    return NodeResult({"span_check": check})


class JoinQuotesInput(TypedDict):
    """The task; the branches' checks arrive through the join."""

    task: TaskSpec


@node(
    "join_spans",
    reads=JoinQuotesInput,
    writes=SpanCheckOutput,
    joins=(check_spans,),
    read_by=("reviewer",),
)
def join_spans(call: NodeCall) -> NodeResult:
    """All sources' checks as one."""
    return NodeResult({"span_check": merged_check(call)})


def merged_check(call: NodeCall) -> SpanCheck:
    """Every source's check, as one."""
    checks = [check for _, check in call.branch_outputs(check_spans, "span_check")]
    return SpanCheck(
        sources=[source for check in checks for source in check.sources],
        facts=sum(check.facts for check in checks),
        misquoted=[claim for check in checks for claim in check.misquoted],
    )


# 3. The wiring (graphs/graph.py)
def route_after_check_spans(state: Mapping[str, Any]) -> Literal["join_spans"]:
    """Each source's check goes to the join."""
    return "join_spans"


def route_after_join_spans(state: Mapping[str, Any]) -> Literal["reviewer", "__end__"]:
    """Checked quotes go to review."""
    return STOP if stopped(state) else "reviewer"


WIRING_WITH_SPAN_CHECK: Wiring = with_extension(
    WIRING,
    (check_spans, route_after_check_spans),
    (join_spans, route_after_join_spans),
)
"""The quote check where a new draft goes on to review (``tests.placing``)."""
