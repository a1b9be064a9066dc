"""The audit record of one node attempt: what ran, on which input, at what cost."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from contracts.base import Contract, Sha256Hex, UtcDatetime, VersionedContract
from contracts.errors import ErrorKind
from contracts.tools import ToolReceipt
from contracts.upgrades import upgrader

NodeStatus = Literal["ready", "running", "waiting_user", "succeeded", "failed"]


class Usage(Contract):
    """Resources a step consumed, counted against the task budget."""

    tool_calls: int = Field(default=0, ge=0, description="Tool calls (reads, searches).")
    tokens: int = Field(default=0, ge=0, description="Model tokens (0 for offline agents).")
    estimated_tokens: int = Field(
        default=0,
        ge=0,
        description="Of tokens, those estimated from characters (4 a token) because a model "
        "call reported no usage (a streaming model often does not); the rest were reported.",
    )

    def __add__(self, other: Usage) -> Usage:
        """Both spends together: an attempt's own and its agent's runs."""
        return Usage(
            tool_calls=self.tool_calls + other.tool_calls,
            tokens=self.tokens + other.tokens,
            estimated_tokens=self.estimated_tokens + other.estimated_tokens,
        )


class NodeError(Contract):
    """Why a node attempt failed, classified for recovery."""

    kind: ErrorKind = Field(description="Recovery class.")
    detail: str = Field(max_length=4000, description="What happened.")


class NodeRun(VersionedContract):
    """One attempt of one node; the thread's audit log is a list of these."""

    VERSION: ClassVar[str] = "1.5"

    kind: Literal["node_run"] = Field(default="node_run", description="Discriminator.")
    task_version: int = Field(ge=1, description="Task version the attempt worked on.")
    node_id: str = Field(max_length=100, description="Graph node.")
    attempt: int = Field(ge=1, description="Attempt number for this node step.")
    status: NodeStatus = Field(description="Status at the end of the attempt.")
    input_hash: Sha256Hex = Field(description="Hash of input contracts + task_version.")
    started_at: UtcDatetime = Field(description="When the attempt started (UTC).")
    ended_at: UtcDatetime | None = Field(default=None, description="When it ended (UTC).")
    duration_ms: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Wall time in milliseconds."
    )
    usage: Usage = Field(default_factory=Usage, description="Resources consumed.")
    artifact_ids: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*@[0-9]+$")]] = (
        Field(default_factory=list, description="Artifacts written, as <artifact_id>@<revision>.")
    )
    agent: str | None = Field(
        default=None,
        max_length=200,
        description="The agent implementation that did the node's work (None: no agent).",
    )
    error: NodeError | None = Field(default=None, description="Failure, if any.")
    checked_inputs: list[str] = Field(
        default_factory=list,
        description="Inputs whose revision and hash were checked before use (name: status).",
    )
    tool_receipts: list[ToolReceipt] = Field(
        default_factory=list,
        description="Every tool call the attempt made, answered or refused (its cost is in "
        "usage.tool_calls).",
    )
    reused: bool = Field(
        default=False,
        description="True when the node did not run: a finished attempt with the same input "
        "hash (typically before a crash) had recorded its result, which was reused.",
    )
    note: str | None = Field(
        default=None,
        max_length=500,
        description="Why this pass of the node ran, when it is not the obvious one (e.g. a "
        "widened research pass after the first found too little evidence).",
    )
    inputs: list[Annotated[str, Field(pattern=r"^[a-z_]+:[0-9a-f]{12}$")]] = Field(
        default_factory=list,
        max_length=50,
        description="A digest per input the hash covers (name:12 hex; the task as the node's "
        "view of it), so two passes show which input changed.",
    )
    overrun: Usage | None = Field(
        default=None,
        description="What the attempt spent beyond what the budget left it when it started "
        "(e.g. an agent's model answered with more tokens than were left); it is charged in "
        "usage all the same. None: it stayed within the budget, or the budget has no limit.",
    )

    EXAMPLES = [
        {
            "task_version": 2,
            "node_id": "writer",
            "attempt": 1,
            "status": "succeeded",
            "input_hash": "3f" * 32,
            "started_at": "2025-05-01T09:31:00Z",
            "ended_at": "2025-05-01T09:31:02Z",
            "duration_ms": 2012.5,
            "usage": {"tool_calls": 2},
            "artifact_ids": ["draft-rosetta@2"],
        }
    ]

    @upgrader(from_version="1.1", to_version="1.2")
    @classmethod
    def _records_tool_calls(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.1 record is a 1.2 one whose attempt made no call through the tool boundary."""
        return data

    @upgrader(from_version="1.2", to_version="1.3")
    @classmethod
    def _says_why_a_pass_ran(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.2 record is a 1.3 one whose pass needed no note."""
        return data

    @upgrader(from_version="1.3", to_version="1.4")
    @classmethod
    def _names_its_inputs(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.3 record is a 1.4 one whose inputs were not itemised."""
        return data

    @upgrader(from_version="1.4", to_version="1.5")
    @classmethod
    def _says_what_it_overran(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.4 record is a 1.5 one whose overrun was not recorded."""
        return data
