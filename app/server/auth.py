"""What a server client may change: runs and their decisions, never a thread's state.

langgraph.json names ``auth`` here, so ``langgraph dev`` (and ``handoff serve``) run these
handlers before every request that changes a thread. The policy:

* **No state edits.** ``threads.update_state`` (and its bulk form) is refused with 403. A
  person's decisions reach a thread only as a run's ``command.resume``, which the pausing
  node validates as a ``HumanDecision`` and records in the decision log; nothing else a
  client could write (a review, a draft, a research bundle) is a decision. The handler
  cannot see which channels an update names, so it refuses them all; an operator who must
  repair a thread uses ``Workflow`` (Python) or the CLI on the store directly.
* **No state edits inside a run.** A run's ``command`` may carry ``resume`` only:
  ``command.update`` and ``command.goto`` would edit state or jump over the nodes that check
  it.
* **A run's input is a task or a revision, and only one.** ``{"task": …}`` starts a
  thread; ``{"revision": …}`` (a ``TaskRevision``) makes the task's next version, even on a
  thread that has ended (``revise_task`` applies it). Anything else in the input, both at
  once, an empty input, or an input beside a ``command`` is refused with 422 naming the key
  before anything runs.
* **A revision is checked against the thread's task before its run exists**, as
  ``Workflow.revise`` checks it (``app.workflow.revising.revised_task``): one that fails its
  contract, cannot apply to the task, or names a corpus the rules refuse is 422 naming the
  field or path; one for a sealed or cancelled thread 409. LangGraph drops a waiting
  thread's pending request as soon as a run with input starts, so ``revise_task`` would
  refuse too late to keep it. The checkpoint it was checked against is marked in the run's
  metadata (``CHECKED_AT``): a run that finds the thread moved on since, when it starts,
  is refused unrun.
* **The thread's history is kept.** What a run carries is marked in its metadata for the
  rules of ``app/server/thread_rules.py``, which the graph factory checks under the
  thread's lock (a new task for a thread that has history, a decision for a thread that
  waits for none, a run on an ended thread: the run ends in error, nothing changed). A run
  naming any checkpoint but the latest (``checkpoint_id``, ``checkpoint``) is refused here
  already, with 409, and again under the lock.
* **No rollback.** ``multitask_strategy="rollback"`` and ``runs.cancel(action="rollback")``
  would delete checkpoints (and leave the ledger and artifacts of the deleted steps);
  they are refused with 422 before anything happens, so the thread stays usable.
  ``interrupt``, ``enqueue`` and ``reject`` work.

Thread metadata (``threads.update``) and everything that reads are allowed. The server has
no users: every request is the local user, and who may reach the port at all is
``docs/security.md``'s business (bind 127.0.0.1, CORS).
"""

from __future__ import annotations

import asyncio
from typing import Any, NoReturn

from langgraph.types import StateSnapshot
from langgraph_sdk import Auth

from app.errors import CheckpointNotLatest, InvalidRevision, ThreadExists, ThreadFinished
from app.server.history_kept import (
    refuse_copies,
    refuse_deleting_history,
    refuse_threadless_cron,
    refuse_threadless_cron_update,
    refuse_threadless_run,
)
from app.server.thread_rules import (
    CHECKED_AT,
    RUN_ASKS,
    RunAsks,
    RunRequest,
    latest_state,
    named_checkpoint,
    refuse_forks,
)
from graphs.errors import UsageError
from graphs.state import WorkflowInput

auth = Auth()

LOCAL_USER = "local"
STATE_EDITS_REFUSED = (
    "this server does not let clients edit a thread's state (update_state): a person's "
    "decision is sent as a run with command={'resume': <HumanDecision>}; see docs/server.md"
)
ROLLBACK_REFUSED = (
    "multitask_strategy/action 'rollback' is not supported by this server (it would delete "
    "checkpoints whose audit and artifacts remain); use 'interrupt', 'enqueue' or 'reject'; "
    "nothing was changed"
)
RUN_COMMANDS = frozenset({"resume"})
"""What a run's ``command`` may carry."""
RUN_INPUTS = frozenset(WorkflowInput.__required_keys__ | WorkflowInput.__optional_keys__)
"""What a run's input may carry: one of them."""
NOTHING_RUN = "nothing was run"


@auth.authenticate
async def authenticate() -> str:
    """Every request is the local user: the dev server has no accounts."""
    return LOCAL_USER


# A thread's history is kept (app/server/history_kept.py): no delete, prune, run delete or copy.
auth.on.threads.delete(refuse_deleting_history)
auth.on.threads.create(refuse_copies)
auth.on.crons.create(refuse_threadless_cron)
auth.on.crons.update(refuse_threadless_cron_update)


@auth.on.threads.update
async def thread_update(*, ctx: Auth.types.AuthContext, value: Auth.types.ThreadsUpdate) -> None:
    """Metadata patches and interrupting cancels pass; state edits and rollbacks do not.

    The server raises this event for three requests, told apart by what they carry: a
    metadata patch (``metadata``), a run cancellation (``action``) and a state update
    (neither).
    """
    if value.get("action") == "rollback":
        raise Auth.exceptions.HTTPException(status_code=422, detail=ROLLBACK_REFUSED)
    if "metadata" not in value and "action" not in value:
        raise Auth.exceptions.HTTPException(status_code=403, detail=STATE_EDITS_REFUSED)


@auth.on.threads.create_run
async def create_run(*, ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate) -> None:
    """A run may start or resume a thread, and nothing more."""
    refuse_threadless_run(value)
    if value.get("multitask_strategy") == "rollback":
        raise Auth.exceptions.HTTPException(status_code=422, detail=ROLLBACK_REFUSED)
    kwargs: dict[str, Any] = dict(value.get("kwargs") or {})
    command = kwargs.get("command") or {}
    extra = sorted(key for key, given in command.items() if given is not None) if command else []
    refused = [key for key in extra if key not in RUN_COMMANDS]
    if refused:
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=f"a run's command may carry only 'resume', not {refused}: "
            + STATE_EDITS_REFUSED,
        )
    asks = run_asks(kwargs.get("input"), command)
    run = RunRequest(asks, named_checkpoint(checked_config(kwargs)))
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata[RUN_ASKS] = asks.value
        metadata.pop(CHECKED_AT, None)  # only this handler says what it checked
    thread_id = value.get("thread_id")
    if thread_id is None or (run.from_checkpoint is None and asks is not RunAsks.REVISION):
        return  # nothing here depends on the thread's history: the lock's check suffices
    snapshot = await read_thread(str(thread_id), "check the run against it")
    refuse_named_checkpoint(str(thread_id), snapshot, run)
    if asks is RunAsks.REVISION:
        await refuse_revision(str(thread_id), snapshot, kwargs)
        if isinstance(metadata, dict):
            metadata[CHECKED_AT] = named_checkpoint(snapshot.config) or ""


async def read_thread(thread_id: str, why: str) -> StateSnapshot:
    """The thread's latest state, or 503 saying it could not be read (nothing is run).

    Only a run whose rules depend on the thread's history costs this read (the graph
    factory reads it again under the thread's lock, where it cannot change before the run
    starts).
    """
    try:
        return await latest_state(thread_id)
    except Exception as error:  # answered, not swallowed: the client is told why
        raise unchecked(thread_id, why, error) from error


def unchecked(thread_id: str, why: str, error: Exception) -> Auth.exceptions.HTTPException:
    """503 for a check that could not be made: the client is told why, nothing is run."""
    detail = " ".join(str(error).split())
    return Auth.exceptions.HTTPException(
        status_code=503,
        detail=f"could not read thread {thread_id!r} to {why} "
        f"({type(error).__name__}: {detail}); {NOTHING_RUN}",
    )


def refuse_named_checkpoint(thread_id: str, snapshot: StateSnapshot, run: RunRequest) -> None:
    """A run that names a checkpoint other than the thread's latest: 409, nothing is run."""
    try:
        refuse_forks(thread_id, snapshot, run)
    except (ThreadExists, CheckpointNotLatest) as broken:
        raise Auth.exceptions.HTTPException(status_code=409, detail=broken.message) from None


async def refuse_revision(thread_id: str, snapshot: StateSnapshot, kwargs: dict[str, Any]) -> None:
    """A revision the thread refuses is answered before its run exists, nothing changed.

    422 names the field or corpus path; 409 a thread that is never revised (sealed,
    cancelled). Checked as ``Workflow.revise`` checks it, with the services the run would get
    (``server_context``, with the models the run's context chooses). Refused inside the
    run, a waiting thread would already have lost its pending request.
    """
    from pydantic import ValidationError

    from app.server.graph import server_context
    from app.workflow.revising import revised_task
    from contracts import TaskRevision
    from graphs import WIRING
    from graphs.boundary import describe_validation_error

    revision = TaskRevision.model_validate(kwargs["input"]["revision"])  # run_asks checked it

    def check() -> None:  # in a worker thread: services and corpus reads block
        ctx = server_context(kwargs.get("context"))
        revised_task(thread_id, snapshot.values, revision, [spec for spec, _ in WIRING], ctx)

    try:
        await asyncio.to_thread(check)
    except ValidationError as error:  # of the run's context: its choices and models
        refuse_input(f"invalid run context: {describe_validation_error(error)}")
    except ThreadFinished as ended:
        raise Auth.exceptions.HTTPException(
            status_code=409, detail=f"{ended.message}; {NOTHING_RUN}"
        ) from None
    except InvalidRevision as invalid:
        refuse_input(invalid.message)
    except UsageError as refused:  # what a node refuses, e.g. a corpus path (SourceRefused)
        refuse_input(f"invalid revision for thread {thread_id!r}: {refused.message}")
    except Exception as error:  # answered, not swallowed: the client is told why
        raise unchecked(thread_id, "check the revision against its task", error) from error


def run_asks(given: Any, command: dict[str, Any]) -> RunAsks:
    """What a run carries: a decision, no input, or exactly one of a task and a revision.

    LangGraph would drop an input beside a command and keys the workflow input does not
    name without a word, and write a task carried beside a revision over the thread's
    task: each is refused here, 422 naming the key.
    """
    if command.get("resume") is not None:
        if given is not None:
            refuse_input("a run carries an input or command={'resume': …}, not both")
        return RunAsks.DECISION
    if given is None:
        return RunAsks.CONTINUE
    if not isinstance(given, dict):
        refuse_input(f"a run's input is an object, not {type(given).__name__}")
    unknown = sorted(set(given) - RUN_INPUTS)
    if unknown:
        refuse_input(
            f"a run's input may carry only 'task' (a new thread's TaskSpec) or 'revision' "
            f"(a TaskRevision), not {unknown}"
        )
    carried = sorted(key for key, value in given.items() if value is not None)
    if carried == ["revision"]:
        check_revision(given["revision"])
        return RunAsks.REVISION
    if carried == ["task"]:
        return RunAsks.TASK
    if not carried:
        refuse_input("a run's input carries 'task' or 'revision'; send no input to continue")
    refuse_input(
        "a revision input carries exactly one revision: 'task' beside a revision is refused "
        "(a thread's task changes only through its revision)"
    )


def checked_config(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The run's config, where the server put ``checkpoint_id`` and ``checkpoint``.

    It may name no subgraph's checkpoints: this graph has none, and a namespace of its own
    would start a second history of the thread.
    """
    config: dict[str, Any] = kwargs.get("config") or {}
    configurable = config.get("configurable") or {}
    for key in ("checkpoint_ns", "checkpoint_map"):
        if configurable.get(key):
            refuse_input(f"'{key}' names a subgraph's checkpoints, which this graph has none of")
    return config


def refuse_input(reason: str) -> NoReturn:
    """Bad input answers 422 with the reason, before anything is run."""
    raise Auth.exceptions.HTTPException(status_code=422, detail=f"{reason}; {NOTHING_RUN}")


def check_revision(revision: Any) -> None:
    """A revision in a run's input fails its contract: 422 naming the field, nothing run."""
    from pydantic import ValidationError

    from contracts import TaskRevision
    from graphs.boundary import describe_validation_error

    try:
        TaskRevision.model_validate(revision)
    except ValidationError as error:
        raise Auth.exceptions.HTTPException(
            status_code=422,
            detail=f"invalid revision: {describe_validation_error(error)}; {NOTHING_RUN}",
        ) from error
