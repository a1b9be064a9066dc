"""What a served run may ask of its thread, checked against the thread's latest checkpoint.

A run on a thread that has history may carry a decision for its pending request
(``command={"resume": …}``), a revision of its task (``input={"revision": …}``) or nothing
(continue it, e.g. after a crash), and it goes on from the latest checkpoint. Anything
else would break a rule the thread keeps whichever way in: a new task would replace the
task outside the audited revision path, a decision nobody asked for would be dropped, a
run from an earlier checkpoint would fork the chain, a run on an ended thread would change
nothing. Each is refused naming the thread and what to send instead, before anything is
written.

The auth handler (``app/server/auth.py``) reads what a run carries from its request and
marks it in the run's metadata (``RUN_ASKS``); a run naming a checkpoint it already refuses
at the door (HTTP 409) when that is not the latest. The graph factory
(``app/server/graph.py``) never sees the request, only the run's config (that mark, and the
checkpoint named by the client or an assistant's config): it checks every rule under the
thread's lock, where nothing can move the thread meanwhile, so a run admitted before the
thread moved on ends in error all the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import StateGraph
from langgraph.types import StateSnapshot

from app.errors import (
    CheckpointNotLatest,
    NotWaiting,
    ThreadExists,
    ThreadFinished,
    ThreadMovedOn,
)
from app.project_graphs import MAIN_GRAPH, project_graph
from app.server.checkpointer import checkpointer
from app.settings import Settings
from app.workflow.reading import request_of
from contracts import RunOutcome
from graphs import build_graph

RUN_ASKS = "handoff_run"
"""Run metadata the auth handler sets, whatever the client sent: what the run carries."""
CHECKED_AT = "handoff_checked_at"
"""Run metadata the auth handler sets on a revision run: the thread's latest checkpoint
when it checked the revision against the thread's task."""


class RunAsks(StrEnum):
    """What a run carries, which decides the rules it meets."""

    TASK = "task"
    REVISION = "revision"
    DECISION = "decision"
    CONTINUE = "continue"


@dataclass(frozen=True)
class RunRequest:
    """What a run asks of its thread: what it carries, and the checkpoint it starts from."""

    asks: RunAsks | None
    from_checkpoint: str | None = None
    checked_at: str | None = None
    """The checkpoint a revision was checked against at the door (None: not checked)."""

    @classmethod
    def of(cls, config: RunnableConfig) -> RunRequest:
        """The run as the graph factory sees it: the auth handler's marks, and its config."""
        metadata: Mapping[str, Any] = config.get("metadata") or {}
        asks = metadata.get(RUN_ASKS)
        checked = metadata.get(CHECKED_AT)
        return cls(
            asks=RunAsks(asks) if asks in set(RunAsks) else None,
            from_checkpoint=named_checkpoint(config),
            checked_at=checked if isinstance(checked, str) and checked else None,
        )


def named_checkpoint(config: Mapping[str, Any]) -> str | None:
    """The checkpoint a run's config names to start from (LangGraph's ``checkpoint_id``)."""
    checkpoint = (config.get("configurable") or {}).get("checkpoint_id")
    return str(checkpoint) if checkpoint else None


@cache
def _builder(graph_id: str) -> StateGraph[Any, Any, Any, Any]:
    return build_graph(wiring=project_graph(Settings().graphs_config, graph_id).wiring())


async def latest_state(thread_id: str, graph_id: str = MAIN_GRAPH) -> StateSnapshot:
    """The thread's latest state in the project's database (empty if it has no history).

    Read with the graph ``graph_id`` (langgraph.json's), whose nodes say what runs next.
    """
    async with checkpointer() as saver:
        graph = _builder(graph_id).compile(checkpointer=saver)
        return await graph.aget_state({"configurable": {"thread_id": thread_id}})


def refuse_forks(thread_id: str, snapshot: StateSnapshot, run: RunRequest) -> None:
    """Raise if the run would start a second history for the thread.

    From an earlier checkpoint, or with a new task on a thread that has one: what the auth
    handler can answer before the run exists.
    """
    latest = named_checkpoint(snapshot.config)  # None for a thread without one
    if run.from_checkpoint is not None and run.from_checkpoint != latest:
        raise CheckpointNotLatest(
            f"thread {thread_id!r}: a run goes on only from its latest checkpoint "
            f"({latest!r}), not from {run.from_checkpoint!r}, which would fork the thread's "
            "history; send no checkpoint; nothing was changed"
        )
    if run.asks is RunAsks.TASK and latest is not None:
        request = request_of(snapshot)
        answer = (
            f"command={{'resume': <HumanDecision>}} answering its pending request "
            f"{request.interrupt_id!r}, "
            if request is not None
            else ""
        )
        raise ThreadExists(
            f"thread {thread_id!r} already has a task: a run on it may carry {answer}"
            "input={'revision': <TaskRevision>} to change the task, or no input to continue "
            "it; a new task needs a new thread; nothing was changed"
        )


def refuse_at_start(thread_id: str, snapshot: StateSnapshot, run: RunRequest) -> None:
    """Raise unless the run may start on the thread as it is now (under the thread's lock).

    On top of the forks: a run on an ended thread would change nothing (a revision, which
    makes the task's next version, is let through), and a decision for a thread that waits
    for none would be dropped. A revision goes on only from the checkpoint the auth handler
    checked it against: LangGraph drops a waiting thread's pending request as soon as a
    run with input starts, before ``revise_task`` could refuse, so a revision the thread's
    task has moved away from since is refused here, unrun, to be checked again.
    """
    refuse_forks(thread_id, snapshot, run)
    latest = named_checkpoint(snapshot.config)
    if run.asks is RunAsks.REVISION and run.checked_at != latest:
        checked = f"at {run.checked_at!r}" if run.checked_at else "not checked against it"
        raise ThreadMovedOn(
            f"thread {thread_id!r} moved on since this revision was checked ({checked}; its "
            f"latest checkpoint is {latest!r}): send the revision again, to be checked "
            "against the thread as it is now; nothing was changed"
        )
    outcome = snapshot.values.get("outcome") if snapshot.values else None
    if not snapshot.next and outcome is not None and run.asks is not RunAsks.REVISION:
        finished = RunOutcome.model_validate(outcome)
        raise ThreadFinished(
            f"thread {thread_id!r} is complete ({finished.state.value}, result "
            f"{finished.result_status}); nothing to run, nothing was changed",
            finished,
        )
    if run.asks is RunAsks.DECISION and request_of(snapshot) is None:
        raise NotWaiting(
            f"thread {thread_id!r} is not waiting for a decision; the decision was not used, "
            "nothing was changed"
        )
