"""Parallel branches: which branch a task runs, and what each branch handed its join.

A fan-out starts one task per branch key; each writes its result into one keyed channel,
so branches running in the same step never overwrite each other and a later pass of the
same key replaces the earlier one. The join reads them all.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from contracts.base import Contract, Identifier, VersionedContract
from contracts.handoff import Handoff
from contracts.outcome import RunOutcome


class BranchTask(VersionedContract):
    """The branch a fanned-out task runs: the key its node works on (e.g. q-2)."""

    kind: Literal["branch_task"] = Field(default="branch_task", description="Discriminator.")
    node: str = Field(min_length=1, max_length=100, description="The branch node.")
    key: Identifier = Field(description="What this branch works on, unique per node.")
    tasks: int = Field(
        default=1,
        ge=1,
        description="How many tasks the fan-out started that can spend (an agent's tokens, a "
        "tool's calls): each may spend that share of the budget left when it started them.",
    )
    nodes: list[str] = Field(
        default_factory=list,
        description="The branch nodes the fan-out started (this one among them).",
    )

    NOT_WORK = frozenset({"tasks"})  # a sub-question added: the others' work still holds

    EXAMPLES = [{"node": "research", "key": "q-2", "tasks": 3, "nodes": ["research"]}]

    def summary(self) -> str:
        """The branch, as progress lines and errors name it."""
        return f"{self.node}[{self.key}]"


class BranchResult(Contract):
    """What one branch produced: its outputs by channel, its envelope, or its stop."""

    node: str = Field(min_length=1, max_length=100, description="The branch node.")
    key: Identifier = Field(description="The branch key.")
    input_hash: str = Field(
        min_length=1, max_length=64, description="Input hash of the branch's work (the audit)."
    )
    outputs: dict[str, str] = Field(
        default_factory=dict,
        description="Each channel the branch wrote, as its contract's JSON text (channels "
        "sorted); the join validates each against the channel's contract.",
    )
    summary: str = Field(
        default="", max_length=500, description="What the branch produced, in one line."
    )
    handoff: Handoff = Field(description="The envelope the branch handed its join.")
    outcome: RunOutcome | None = Field(
        default=None, description="Set when the branch had to stop (its own error)."
    )


class BranchResults(VersionedContract):
    """Every branch's latest result, one per (node, key), in a fixed order."""

    kind: Literal["branch_results"] = Field(default="branch_results", description="Discriminator.")
    results: list[BranchResult] = Field(
        description="One result per branch, sorted by node and key."
    )
    consumed: list[str] = Field(
        default_factory=list,
        description="In an update: branch nodes whose results a join merged; the channel "
        "drops them, so a checkpoint carries each branch's result only until its join ran.",
    )

    EXAMPLES = [
        {
            "results": [
                {
                    "node": "research",
                    "key": "q-1",
                    "input_hash": "0123456789abcdef" * 4,
                    "outputs": {"research": '{"task_id": "rosetta", "result_status": "failed"}'},
                    "handoff": {
                        "task_id": "rosetta",
                        "task_version": 1,
                        "objective": "Explain the Rosetta Stone",
                        "from_node": "research",
                        "next_allowed_action": "join_research",
                        "provenance": {"producer": "research", "node": "research", "step": 1},
                    },
                }
            ]
        }
    ]

    @model_validator(mode="after")
    def _one_per_branch(self) -> BranchResults:
        names = [(result.node, result.key) for result in self.results]
        if names != sorted(set(names)):
            raise ValueError("results must be one per (node, key), sorted by node and key")
        return self

    @classmethod
    def merged(cls, current: Any, update: Any) -> BranchResults | None:
        """The channel's reducer: an update replaces the results of the branches it names.

        Branches of one step write in parallel; each names only its own (node, key), so no
        write is lost, and a later pass of a branch replaces its earlier result.
        """
        if update is None:
            return None if current is None else cls.model_validate(current)
        new = cls.model_validate(update)
        old = cls.model_validate(current) if current is not None else cls(results=[])
        by_name = {
            (result.node, result.key): result
            for result in old.results
            if result.node not in new.consumed
        }
        by_name.update({(result.node, result.key): result for result in new.results})
        return cls(results=[by_name[name] for name in sorted(by_name)])

    def of(self, node: str) -> dict[str, BranchResult]:
        """The results of one branch node, by key."""
        return {result.key: result for result in self.results if result.node == node}

    def summary(self) -> str:
        """Progress line: each branch by key, with what it produced or why it stopped."""
        return "; ".join(
            f"[{result.key}] "
            + (f"stopped: {result.outcome.reason}" if result.outcome else result.summary)
            for result in self.results
        )
