"""The shape of docs/adapt.md's "A node another agent reads", built through the public API.

Its names are not the page's (``fact_check``), so a project that applied the page keeps
these tests as they are. In a clone the three parts below would go to three files: the
contract to ``contracts/claim_check.py``, the node to ``graphs/nodes/claim_check.py``, and
the wiring change to ``graphs/graph.py`` (``route_after_writer`` returns
``"claim_check"`` where it returned ``"reviewer"``, and ``(claim_check,
route_after_claim_check)`` joins ``WIRING``).
Here the wiring is an extended copy, so the project's graph stays as it is: the check goes
where a new draft goes on to review (``tests.placing``), the Writer's route in the shipped
wiring.

Run as a script (``python -m tests.extension_claim_check run|resume DATA THREAD``) it drives
the extended workflow in a process of its own, for the kill test.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from typing_extensions import TypedDict

from app.settings import Settings
from app.workflow import Workflow
from contracts import DraftArticle, ResearchBundle, TaskSpec, VersionedContract
from graphs import WIRING, NodeCall, NodeResult, Wiring, node
from graphs.routing import STOP, stopped
from tests.placing import with_extension

OBJECTIVE = "Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs"


# 1. The contract (contracts/claim_check.py)
class ClaimCheck(VersionedContract):
    """Which of a draft's citations name a fact research produced."""

    kind: Literal["claim_check"] = Field(default="claim_check", description="Discriminator.")
    draft_revision: int = Field(ge=1, description="Draft revision that was checked.")
    checked: list[str] = Field(description="Claim ids the draft cites.")
    unknown: list[str] = Field(description="Cited claim ids no fact has.")

    EXAMPLES = [{"draft_revision": 2, "checked": ["claim-1", "claim-9"], "unknown": ["claim-9"]}]

    def summary(self) -> str:
        """Progress line."""
        return f"{len(self.checked)} citations checked, {len(self.unknown)} unknown"


# 2. The node (graphs/nodes/claim_check.py)
class ClaimCheckInput(TypedDict):
    """The draft and the facts its citations must name."""

    task: TaskSpec
    research: ResearchBundle | None
    draft: DraftArticle | None


class ClaimCheckOutput(TypedDict, total=False):
    """The check."""

    claim_check: ClaimCheck | None


@node("claim_check", reads=ClaimCheckInput, writes=ClaimCheckOutput, read_by=("reviewer",))
def claim_check(call: NodeCall) -> NodeResult:
    """Check every citation of the draft against the research bundle."""
    draft: DraftArticle = call.require("draft")
    bundle: ResearchBundle = call.require("research")
    known = {fact.id for fact in bundle.facts}
    check = ClaimCheck(
        draft_revision=draft.revision,
        checked=list(draft.cited_claim_ids),
        unknown=[claim for claim in draft.cited_claim_ids if claim not in known],
    )
    return NodeResult({"claim_check": check})


# 3. The wiring (graphs/graph.py)
def route_after_claim_check(state: Mapping[str, Any]) -> Literal["reviewer", "__end__"]:
    """A checked draft goes to review."""
    return STOP if stopped(state) else "reviewer"


WIRING_WITH_CLAIM_CHECK: Wiring = with_extension(WIRING, (claim_check, route_after_claim_check))


def main(argv: list[str]) -> int:
    """``run DATA THREAD`` or ``resume DATA THREAD`` on the extended workflow."""
    command, data, thread = argv
    with Workflow(Settings(data_dir=Path(data)), wiring=WIRING_WITH_CLAIM_CHECK) as workflow:
        if command == "run":
            outcome = workflow.run(OBJECTIVE, thread)
        else:
            outcome = workflow.resume(thread)
    print(outcome.state.value, outcome.result_status)
    return 0 if outcome.result_status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
