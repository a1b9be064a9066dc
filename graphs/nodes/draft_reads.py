"""The channels every node from the writer to finalize reads: the draft and what it rests on.

The writer, the reviewer, the review decision and finalize each read the task, the
envelope handed to them, the research bundle and the draft; their own ``reads`` extend
this with the channels only they read.
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
