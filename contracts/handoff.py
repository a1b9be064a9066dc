"""The envelope one agent hands the next: everything the consumer may rely on, pinned."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from contracts.artifacts import ArtifactRef
from contracts.base import Contract, Identifier, Sha256Hex, VersionedContract
from contracts.provenance import Provenance
from contracts.research import Question

NextAction = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="Name of a graph node, or __end__.",
    ),
]
"""The node the graph runs next: the only action a handoff allows its consumer."""


class Decision(Contract):
    """A decision that was accepted and must not be re-litigated downstream."""

    text: str = Field(min_length=1, max_length=2000, description="The decision.")
    provenance: Provenance = Field(description="Who made it, where.")


class ConstraintItem(Contract):
    """A constraint in force, with who imposed it."""

    text: str = Field(min_length=1, max_length=2000, description="The constraint.")
    provenance: Provenance = Field(description="Who imposed it, where.")


class AuthoritativeInput(Contract):
    """An input the consumer must treat as the truth, pinned to its hash."""

    name: str = Field(max_length=100, description="What it is (e.g. source src-1).")
    uri: str = Field(max_length=2000, description="Where it lives.")
    sha256: Sha256Hex = Field(description="Hash of the content that was relied on.")
    provenance: Provenance = Field(description="Who pinned it, where.")


class ToolReceipt(Contract):
    """Evidence that a tool call happened, and what it returned (by hash)."""

    tool: str = Field(max_length=100, description="Tool name.")
    call_id: Identifier = Field(description="Stable id of the call.")
    input_summary: str = Field(max_length=500, description="Short description of the input.")
    output_sha256: Sha256Hex | None = Field(default=None, description="Hash of the output.")
    provenance: Provenance = Field(description="Who called it, where.")


class Handoff(VersionedContract):
    """What a producer promises its consumer; the consumer checks it before use."""

    kind: Literal["handoff"] = Field(default="handoff", description="Discriminator.")
    task_id: Identifier = Field(description="Task this handoff serves.")
    task_version: int = Field(ge=1, description="Task version the work was done for.")
    objective: str = Field(max_length=2000, description="The objective, restated.")
    from_node: str = Field(max_length=100, description="Producer node.")
    next_allowed_action: NextAction = Field(
        description="The node that runs next (the only action the consumer may take), or "
        "__end__; it is the route the graph took, never a prediction."
    )
    accepted_decisions: list[Decision] = Field(default_factory=list, description="Decisions.")
    constraints: list[ConstraintItem] = Field(default_factory=list, description="Constraints.")
    authoritative_inputs: list[AuthoritativeInput] = Field(
        default_factory=list, description="Inputs pinned by hash."
    )
    artifacts: list[ArtifactRef] = Field(
        default_factory=list,
        description="Artifacts this step produced and hands over, each at a specific revision. "
        "Source snapshots are pinned in the research bundle's sources.",
    )
    tool_receipts: list[ToolReceipt] = Field(default_factory=list, description="Tool calls made.")
    open_questions: list[Question] = Field(
        default_factory=list, description="Questions still open (or answered by a human)."
    )
    granted_review_rounds: int = Field(
        default=0, ge=0, description="Extra review rounds a human granted beyond the budget."
    )
    provenance: Provenance = Field(description="Who made this handoff, where.")
