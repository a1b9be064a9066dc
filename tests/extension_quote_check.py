"""A parallel branch added through the public API: each source's quotes checked side by side.

In a clone the parts below go to three files, as docs/adapt.md shows: the contract to
``contracts/quote_check.py``, the branch and its join to ``graphs/nodes/quote_check.py``,
and the wiring to ``graphs/graph.py``. Here the wiring is an extended copy of the
project's: a new draft goes to ``check_quotes`` (one task per source research read, run in
parallel) where it went on to review (the Writer's route, as shipped), and the join
``join_quotes`` hands the merged check to the reviewer.
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


# 1. The contract (contracts/quote_check.py)
class QuoteCheck(VersionedContract):
    """Whether each fact's quote is what its source snapshot holds at the fact's span."""

    kind: Literal["quote_check"] = Field(default="quote_check", description="Discriminator.")
    sources: list[str] = Field(description="Source ids whose facts were checked.")
    facts: int = Field(ge=0, description="Facts checked.")
    misquoted: list[str] = Field(description="Claim ids whose quote is not at their span.")

    EXAMPLES = [{"sources": ["src-1", "src-2"], "facts": 7, "misquoted": ["claim-2004"]}]

    def summary(self) -> str:
        """The CLI's progress line."""
        return f"{self.facts} quotes in {len(self.sources)} sources, {len(self.misquoted)} off"


# 2. The branch and its join (graphs/nodes/quote_check.py)
class CheckQuotesInput(TypedDict):
    """The bundle whose facts are checked against their sources."""

    task: TaskSpec
    research: ResearchBundle | None


class QuoteCheckOutput(TypedDict, total=False):
    """The check: a branch's for its source, the join's for them all."""

    quote_check: QuoteCheck | None


def source_keys(state: Mapping[str, Any]) -> list[str]:
    """One branch per source research read."""
    bundle = require(state, "research", ResearchBundle, node="check_quotes")
    return [source.id for source in bundle.sources]


@node(
    "check_quotes",
    reads=CheckQuotesInput,
    writes=QuoteCheckOutput,
    branch=source_keys,
    task_view=no_task,
)
def check_quotes(call: NodeCall) -> NodeResult:
    """Check the quotes of the facts from this branch's source against its snapshot."""
    bundle: ResearchBundle = call.require("research")
    source = bundle.source(call.step.branch or "")
    if source is None:
        raise ValueError(f"the bundle has no source {call.step.branch!r}")
    text = call.ctx.store.get(source.snapshot).decode()
    facts = [fact for fact in bundle.facts if fact.source_id == source.id]
    misquoted = [f.id for f in facts if text[f.span.start : f.span.end] != f.quote]
    check = QuoteCheck(sources=[source.id], facts=len(facts), misquoted=misquoted)
    return NodeResult({"quote_check": check})


class JoinQuotesInput(TypedDict):
    """The task; the branches' checks arrive through the join."""

    task: TaskSpec


@node(
    "join_quotes",
    reads=JoinQuotesInput,
    writes=QuoteCheckOutput,
    joins=(check_quotes,),
    read_by=("reviewer",),
)
def join_quotes(call: NodeCall) -> NodeResult:
    """All sources' checks as one."""
    return NodeResult({"quote_check": merged_check(call)})


def merged_check(call: NodeCall) -> QuoteCheck:
    """Every source's check, as one."""
    checks = [check for _, check in call.branch_outputs(check_quotes, "quote_check")]
    return QuoteCheck(
        sources=[source for check in checks for source in check.sources],
        facts=sum(check.facts for check in checks),
        misquoted=[claim for check in checks for claim in check.misquoted],
    )


# 3. The wiring (graphs/graph.py)
def route_after_check_quotes(state: Mapping[str, Any]) -> Literal["join_quotes"]:
    """Each source's check goes to the join."""
    return "join_quotes"


def route_after_join_quotes(state: Mapping[str, Any]) -> Literal["reviewer", "__end__"]:
    """Checked quotes go to review."""
    return STOP if stopped(state) else "reviewer"


WIRING_WITH_QUOTE_CHECK: Wiring = with_extension(
    WIRING,
    (check_quotes, route_after_check_quotes),
    (join_quotes, route_after_join_quotes),
)
"""The quote check where a new draft goes on to review (``tests.placing``)."""
