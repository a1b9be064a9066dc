"""The envelope one agent hands the next: everything the consumer may rely on, pinned."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from contracts.artifacts import ArtifactRef, example_ref
from contracts.base import Contract, Identifier, ProseText, Sha256Hex, VersionedContract
from contracts.provenance import Provenance
from contracts.research import Question
from contracts.tools import ToolReceipt
from contracts.upgrades import upgrader

NextAction = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^(__end__|[a-z][a-z0-9_]*)$",
        description="Name of the graph node that may continue the work, or '__end__'.",
    ),
]
"""The next node, by name. Contracts cannot know the graph's nodes, only how a name looks."""


class Decision(Contract):
    """A decision that was accepted and must not be re-litigated downstream."""

    text: str = Field(min_length=1, max_length=2000, description="The decision.")
    provenance: Provenance = Field(description="Who made it, where.")


class ConstraintItem(Contract):
    """A constraint in force, with who imposed it."""

    text: ProseText = Field(description="The constraint.")
    provenance: Provenance = Field(description="Who imposed it, where.")


class AuthoritativeInput(Contract):
    """An input the consumer must treat as the truth, pinned to its hash."""

    name: str = Field(max_length=100, description="What it is (e.g. source src-1).")
    uri: str = Field(max_length=2000, description="Where it lives.")
    sha256: Sha256Hex = Field(description="Hash of the content that was relied on.")
    provenance: Provenance = Field(description="Who pinned it, where.")


class JoinedBranch(Contract):
    """One branch a join waited for: what that branch was handed and which tools it called."""

    node: str = Field(min_length=1, max_length=100, description="The branch node.")
    key: Identifier = Field(description="The branch key (e.g. the research question q-2).")
    authoritative_inputs: list[AuthoritativeInput] = Field(
        default_factory=list, description="Inputs the branch pinned by hash."
    )
    artifacts: list[ArtifactRef] = Field(
        default_factory=list, description="Artifacts the branch produced, at their revisions."
    )
    tool_receipts: list[ToolReceipt] = Field(
        default_factory=list, description="Tool calls the branch made."
    )


class Handoff(VersionedContract):
    """What a producer promises its consumer; the consumer checks it before use."""

    VERSION: ClassVar[str] = "1.2"

    kind: Literal["handoff"] = Field(default="handoff", description="Discriminator.")
    task_id: Identifier = Field(description="Task this handoff serves.")
    task_version: int = Field(ge=1, description="Task version the work was done for.")
    objective: str = Field(max_length=2000, description="The objective, restated.")
    from_node: str = Field(max_length=100, description="Producer node.")
    next_allowed_action: NextAction = Field(
        description="The node that runs next, the only one that may consume this handoff "
        "('__end__': none may); it is the route the graph took, never a prediction."
    )
    next_nodes: list[NextAction] = Field(
        default_factory=list,
        description="When the route started branch nodes of several kinds side by side: "
        "all of them, each of which may consume this handoff (next_allowed_action is the "
        "first); empty when it started one node.",
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
    allowed_tools: list[Identifier] = Field(
        default_factory=list,
        description="The tools the next node declares it may call (any other call is "
        "refused as permission_denied); from its declaration.",
    )
    done_when: list[ProseText] = Field(
        default_factory=list,
        description="What the next node's work must meet to count as done (e.g. the "
        "Reviewer's checks, for the Writer); from its declaration.",
    )
    open_questions: list[Question] = Field(
        default_factory=list, description="Questions still open (or answered by a human)."
    )
    granted_review_rounds: int = Field(
        default=0, ge=0, description="Extra review rounds a human granted beyond the budget."
    )
    branches: list[JoinedBranch] = Field(
        default_factory=list,
        description="From a join: every branch it waited for, with that branch's inputs "
        "and receipts (empty from any other node).",
    )
    provenance: Provenance = Field(description="Who made this handoff, where.")

    EXAMPLES = [
        {
            "task_id": "rosetta",
            "task_version": 2,
            "objective": (
                "Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs"
            ),
            "from_node": "research",
            "next_allowed_action": "writer",
            "accepted_decisions": [
                {
                    "text": "Write for a general audience.",
                    "provenance": {"producer": "research", "node": "research", "step": 3},
                }
            ],
            "constraints": [
                {
                    "text": "At most 800 words.",
                    "provenance": {"producer": "human", "node": "research", "step": 3},
                }
            ],
            "authoritative_inputs": [
                {
                    "name": "source src-1",
                    "uri": "artifact://source/src-1",
                    "sha256": "3f" * 32,
                    "provenance": {"producer": "research", "node": "research", "step": 3},
                }
            ],
            "artifacts": [example_ref("notes", "notes-rosetta")],
            "tool_receipts": [
                {
                    "tool": "read_source",
                    "call_id": "call-1",
                    "input_summary": "rosetta.md",
                    "output_sha256": "3f" * 32,
                    "provenance": {"producer": "research", "node": "research", "step": 3},
                }
            ],
            "allowed_tools": [],
            "done_when": ["Every sentence cites a claim whose quote is in its source."],
            "open_questions": [{"id": "q-2", "text": "Who deciphered the hieroglyphs, and how?"}],
            "provenance": {"producer": "research", "node": "research", "step": 3},
        }
    ]

    @upgrader(from_version="1.1", to_version="1.2")
    @classmethod
    def _tells_the_next_node_its_limits(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.1 handoff is a valid 1.2 one that states no limits: passed on as it is.

        1.2 added ``allowed_tools`` and ``done_when`` (both default to empty) and the
        timing, cost and error of each receipt (defaulted too); a thread checkpointed
        under 1.1 resumes, and the next handoff it derives states them.
        """
        return data
