"""The channels the nodes that write, review or publish a draft all read.

Each such node reads the task, the envelope handed to it, the research bundle and the
draft; its own ``reads`` extends this with the channels only it reads.
"""

from __future__ import annotations

from typing_extensions import TypedDict

from contracts import DraftArticle, Handoff, ResearchBundle, TaskSpec


class DraftReads(TypedDict):
    """The task, its envelope, the facts and the draft (the writer reads its last one)."""

    task: TaskSpec
    handoff: Handoff | None
    research: ResearchBundle | None
    draft: DraftArticle | None
