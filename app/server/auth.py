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
* **A revision is a run.** A run whose input carries ``revision`` (a ``TaskRevision``)
  is checked against its contract here (422 naming the field) and marked in its metadata,
  so it may start on a thread that has ended; ``revise_task`` applies it.
* **No rollback.** ``multitask_strategy="rollback"`` and ``runs.cancel(action="rollback")``
  would delete checkpoints (and leave the ledger and artifacts of the deleted steps);
  they are refused with 422 before anything happens, so the thread stays usable.
  ``interrupt``, ``enqueue`` and ``reject`` work.

Thread metadata (``threads.update``) and everything that reads are allowed. The server has
no users: every request is the local user, and who may reach the port at all is
``docs/security.md``'s business (bind 127.0.0.1, CORS).
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

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
REVISION_RUN = "handoff_revision"
"""Run metadata this handler sets (True when the run's input carries a task revision, else
False, whatever the client sent): such a run may start on a thread that has ended."""


@auth.authenticate
async def authenticate() -> str:
    """Every request is the local user: the dev server has no accounts."""
    return LOCAL_USER


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
    given = kwargs.get("input")
    revision = given.get("revision") if isinstance(given, dict) else None
    if revision is not None:
        check_revision(revision)
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata[REVISION_RUN] = revision is not None


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
            detail=f"invalid revision: {describe_validation_error(error)}; nothing was run",
        ) from error
