"""A served thread's history is kept: never deleted, pruned, rolled back by run or copied.

LangGraph's API deletes checkpoints on more requests than rollback: ``threads.delete`` and
``threads.prune`` delete a thread's whole chain through the project's checkpointer (a
thread the CLI started too, once a client registered its id), ``runs.delete`` deletes the
checkpoints of one run (rollback by another name; the project's savers do not implement
it, so the server answered 500), and a run without a thread (``on_completion="delete"``,
the default, crons too) deletes the thread it made when it ends, even one that waits for a
decision. Each would drop a pending request, or leave the audit and the artifacts of steps
whose checkpoints are gone. ``threads.copy`` writes a second history of the thread's task
under a new id, whose decisions and artifacts are its source's.

These handlers (registered on the server's ``auth`` in ``app/server/auth.py``) refuse them
with the reason and what to send instead, before anything is deleted or written. A thread
without history (created, never run) may still be deleted: it holds nothing to lose.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

from app.server.checkpointer import checkpointer

NOTHING_DELETED = "nothing was deleted"
RUN_DELETE_REFUSED = (
    "deleting run {run_id!r} would delete a run's checkpoints from thread {thread_id!r} (a "
    "rollback by another name: its audit and artifacts would remain for steps its chain "
    "lost); runs are kept: cancel a running one with runs.cancel(action='interrupt'); "
    + NOTHING_DELETED
)
COPY_REFUSED = (
    "a thread is not copied through this server: a copy would be a second history of its "
    "task, whose checkpoints, decisions and artifacts are its source's; start a new thread "
    "with the task (a run with input={'task': <TaskSpec>}) or revise this one (input="
    "{'revision': <TaskRevision>}); nothing was copied"
)
THREADLESS_REFUSED = (
    "a {what} without a thread deletes the thread it makes when its run ends "
    "({option}='delete', the default), and with it a pending request and the history its "
    "audit and artifacts refer to: {instead}, or send {option}='keep'; nothing was {done}"
)


async def has_history(thread_id: str) -> bool:
    """Whether the project's database holds a checkpoint of the thread."""
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    try:
        async with checkpointer() as saver:
            return await saver.aget_tuple(config) is not None
    except Exception as error:  # answered, not swallowed: the client is told why
        detail = " ".join(str(error).split())
        raise Auth.exceptions.HTTPException(
            status_code=503,
            detail=f"could not read thread {thread_id!r} to check its history "
            f"({type(error).__name__}: {detail}); {NOTHING_DELETED}",
        ) from error


async def refuse_deleting_history(
    *, ctx: Auth.types.AuthContext, value: Auth.types.ThreadsDelete
) -> None:
    """``threads.delete``, ``threads.prune`` and ``runs.delete`` keep every checkpoint.

    The server raises this event for a thread (``thread_id``), a prune (``thread_ids``)
    and a run (``run_id`` beside its ``thread_id``).
    """
    given: dict[str, Any] = dict(value)
    if given.get("run_id") is not None:
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=RUN_DELETE_REFUSED.format(
                run_id=str(given["run_id"]), thread_id=str(given.get("thread_id"))
            ),
        )
    thread_ids = given.get("thread_ids") or [given.get("thread_id")]
    for thread_id in (str(each) for each in thread_ids if each is not None):
        if await has_history(thread_id):
            raise Auth.exceptions.HTTPException(
                status_code=403,
                detail=f"thread {thread_id!r} has history (its checkpoints, which its audit, "
                "artifacts and any pending request belong to): it is not deleted or pruned "
                "through this server; answer or refuse its pending request with a run "
                "(command={'resume': <HumanDecision>}), or end it with `handoff cancel "
                f"{thread_id}`, which keeps what it stored; {NOTHING_DELETED}",
            )


async def refuse_copies(*, ctx: Auth.types.AuthContext, value: Auth.types.ThreadsCreate) -> None:
    """``threads.copy`` is refused; ``threads.create`` passes.

    A copy raises this event with the new thread's id alone, before it writes anything;
    ``threads.create`` always names ``if_exists`` beside it.
    """
    if "if_exists" not in value:
        raise Auth.exceptions.HTTPException(status_code=403, detail=COPY_REFUSED)


def refuse_threadless_run(value: Auth.types.RunsCreate) -> None:
    """A run the server would end by deleting its thread: 422, nothing is run."""
    if (value.get("kwargs") or {}).get("temporary"):
        raise threadless(
            "run", "on_completion", "run on a thread (threads.create, then a run on it)", "run"
        )


async def refuse_threadless_cron(
    *, ctx: Auth.types.AuthContext, value: Auth.types.CronsCreate
) -> None:
    """A cron without a thread whose runs would delete theirs: 422, nothing is scheduled."""
    payload: dict[str, Any] = dict(value.get("payload") or {})
    if value.get("thread_id") is None and payload.get("on_run_completed", "delete") != "keep":
        raise threadless(
            "cron",
            "on_run_completed",
            "schedule it for a thread (crons.create_for_thread)",
            "scheduled",
        )


async def refuse_threadless_cron_update(
    *, ctx: Auth.types.AuthContext, value: Auth.types.CronsUpdate
) -> None:
    """A cron is not switched to deleting its runs' threads: 422, nothing is changed.

    The event names the cron alone, not whether it has a thread; a cron for a thread never
    deletes it, so ``on_run_completed="delete"`` asks nothing of it there either.
    """
    if value.get("on_run_completed") == "delete":
        raise threadless(
            "cron",
            "on_run_completed",
            "schedule it for a thread (crons.create_for_thread)",
            "changed",
        )


def threadless(what: str, option: str, instead: str, done: str) -> Auth.exceptions.HTTPException:
    """422 for a run (or cron) that would delete the thread it makes: nothing is done."""
    return Auth.exceptions.HTTPException(
        status_code=422,
        detail=THREADLESS_REFUSED.format(what=what, option=option, instead=instead, done=done),
    )
