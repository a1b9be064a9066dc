"""The channels the nodes that write, review or publish a draft all read, and may write.

Each such node reads the task, the envelope handed to it, the research bundle, the draft
and the last freshness report; its own ``reads`` extends this with the channels only it
reads. Each may write a (newer) draft, the report of inputs it refused, and the end.
"""

from __future__ import annotations

from typing_extensions import TypedDict

from contracts import DraftArticle, FreshnessReport, Handoff, ResearchBundle, RunOutcome, TaskSpec


class DraftReads(TypedDict):
    """The task, its envelope, the facts and the draft (the writer reads its last one)."""

    task: TaskSpec
    handoff: Handoff | None
    research: ResearchBundle | None
    draft: DraftArticle | None
    freshness: FreshnessReport | None


class DraftWrites(TypedDict, total=False):
    """A draft (a person's newer revision, adopted), the inputs refused, or the end."""

    draft: DraftArticle | None
    freshness: FreshnessReport | None
    outcome: RunOutcome | None
