"""The A2A 1.0 task lifecycle, so the workflow can be reported to A2A clients as is."""

from __future__ import annotations

from enum import StrEnum


class TaskState(StrEnum):
    """A2A 1.0 TaskState. A COMPLETED task may still carry a ``partial`` result."""

    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    @property
    def ended(self) -> bool:
        """A terminal state: A2A never restarts a task in one (a refinement is a new task)."""
        return self in {
            TaskState.COMPLETED,
            TaskState.FAILED,
            TaskState.CANCELED,
            TaskState.REJECTED,
        }
