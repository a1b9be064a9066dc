"""The Python API: open a Workflow, run tasks on threads, inspect what happened.

The Workflow knows nothing of the worker fleet (``app.fleet`` uses it, not the other way
round): the embedded default never imports the queue.
"""

from app.workflow.artifacts import ARTIFACT_NAMES, EDITABLE_ARTIFACTS
from app.workflow.decisions import check_decision, pause_of
from app.workflow.guard import WriteGuard
from app.workflow.ids import check_thread_id, new_thread_id
from app.workflow.opened import GLANCED_CHANNELS
from app.workflow.pruning import PrunedThread, PruneReport
from app.workflow.running import ProgressCallback
from app.workflow.status import ThreadStatus, ThreadSummary
from app.workflow.workflow import Workflow

__all__ = [
    "ARTIFACT_NAMES",
    "EDITABLE_ARTIFACTS",
    "GLANCED_CHANNELS",
    "ProgressCallback",
    "PruneReport",
    "PrunedThread",
    "ThreadStatus",
    "ThreadSummary",
    "Workflow",
    "WriteGuard",
    "check_decision",
    "check_thread_id",
    "new_thread_id",
    "pause_of",
]
