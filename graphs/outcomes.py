"""How a run ends: one constructor for every outcome a node or the runner records.

Every recorded end names the same thread and task and reports the draft it ends with (its
revision counting the review rounds) and the facts research produced; those are read here,
from the task, step, draft and bundle, so each ending states only what is its own.
"""

from __future__ import annotations

from typing import Any

from contracts import DraftArticle, ResearchBundle, ResultStatus, RunOutcome, TaskSpec, TaskState
from graphs.ports import StepInfo


def run_outcome(
    task: TaskSpec,
    step: StepInfo,
    state: TaskState,
    result_status: ResultStatus,
    *,
    draft: DraftArticle | None = None,
    bundle: ResearchBundle | None = None,
    **fields: Any,
) -> RunOutcome:
    """The outcome of ``task`` on ``step``'s thread; ``fields`` add to (or correct) the rest.

    ``review_rounds`` is the draft's revision unless given: a draft that failed to be written
    counts one round fewer.
    """
    ended_with: dict[str, Any] = {
        "draft": draft.body if draft else None,
        "review_rounds": draft.revision if draft else 0,
        "fact_count": len(bundle.facts) if bundle else 0,
    }
    return RunOutcome(
        thread_id=step.thread_id,
        task_id=task.task_id,
        state=state,
        result_status=result_status,
        **(ended_with | fields),
    )
