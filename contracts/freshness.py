"""The result of checking a handoff's pinned inputs against what exists now."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from contracts.base import Contract, Sha256Hex, VersionedContract

RefStatus = Literal["fresh", "stale", "tampered", "missing"]
"""fresh: unchanged; stale: a newer revision or changed content exists; tampered: stored
bytes no longer match their sha256; missing: the blob or source is gone, or may no longer
be read (``RefCheck.detail`` says why)."""


class RefCheck(Contract):
    """One pinned input and what was found for it."""

    name: str = Field(max_length=200, description="What the input is (e.g. 'source src-2').")
    kind: Literal["artifact", "source"] = Field(description="Artifact ref or source file.")
    producer: str = Field(
        max_length=100,
        description="State channel the input was handed over in (research or draft), which "
        "names its producer's output.",
    )
    uri: str = Field(max_length=2000, description="Where it lives.")
    recorded_revision: int | None = Field(default=None, description="Revision pinned.")
    recorded_sha256: Sha256Hex = Field(description="Hash pinned.")
    current_revision: int | None = Field(default=None, description="Revision found now.")
    current_sha256: Sha256Hex | None = Field(default=None, description="Hash found now.")
    status: RefStatus = Field(description="Classification.")
    detail: str | None = Field(
        default=None,
        max_length=1000,
        description="Why the input could not be checked, e.g. a source the corpus rules "
        "refuse to read (outside the corpus roots, not a regular file, over the size limit).",
    )


class FreshnessReport(VersionedContract):
    """A consumer's check of its inputs, made before it reads any of them.

    When the verdict is not ``fresh`` this is the StaleHandoff error contract: it names
    each stale, tampered or missing input with the recorded and current revision/hash.
    """

    VERSION: ClassVar[str] = "1.1"

    kind: Literal["freshness_report"] = Field(
        default="freshness_report", description="Discriminator."
    )
    node: str = Field(max_length=100, description="Consumer that made the check.")
    verdict: RefStatus = Field(description="Worst status found (tampered > missing > stale).")
    checked: int = Field(default=0, ge=0, description="How many inputs were checked.")
    checks: list[RefCheck] = Field(
        default_factory=list,
        description="The inputs that are not fresh (the full list is in the node's audit record).",
    )
    round: int = Field(
        default=0, ge=0, description="Consecutive checks that found problems (bounds re-runs)."
    )

    EXAMPLES = [
        {
            "node": "writer",
            "verdict": "stale",
            "checked": 5,
            "checks": [
                {
                    "name": "source src-1",
                    "kind": "source",
                    "producer": "research",
                    "uri": "file:///corpus/rosetta.md",
                    "recorded_sha256": "3f" * 32,
                    "current_sha256": "e" * 64,
                    "status": "stale",
                }
            ],
            "round": 1,
        }
    ]

    def problems(self) -> list[RefCheck]:
        """The inputs that are not fresh."""
        return [check for check in self.checks if check.status != "fresh"]

    def describe(self) -> str:
        """One line naming each problem, for errors and requests."""
        parts = []
        for check in self.problems():
            recorded = f"r{check.recorded_revision} " if check.recorded_revision else ""
            current = f"r{check.current_revision} " if check.current_revision else ""
            now = f"{current}{check.current_sha256[:12]}" if check.current_sha256 else "gone"
            parts.append(
                f"{check.name} is {check.status} (recorded {recorded}{check.recorded_sha256[:12]}, "
                f"now {now})" + (f": {check.detail}" if check.detail else "")
            )
        return "; ".join(parts) or "all inputs fresh"

    def summary(self) -> str:
        """Progress line: only inputs that were not fresh are worth showing."""
        return "" if self.verdict == "fresh" else f"inputs {self.verdict}: {self.describe()}"
