"""What a client's message asks of a thread, decided before anything runs.

Every message is read here, against the thread as it stands, into one :class:`Plan`; a
message that cannot be served is refused with the error a client is sent (naming the
field, as the CLI would), and nothing is written. The request handler asks before the
SDK makes a task, and the executor carries out the plan it was handed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from a2a.types import Message
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError

from app.a2a.errors import a2a_error
from app.a2a.parts import data_parts, text_of
from app.errors import InvalidRevision
from app.workflow import Workflow
from contracts import (
    HumanDecision,
    RevisionRefused,
    RunOutcome,
    TaskRevision,
    TaskSpec,
    TaskState,
)

REVISION_KIND: str = TaskRevision.model_fields["kind"].default
SPEC_KIND: str = TaskSpec.model_fields["kind"].default
REVISION_FIELDS = frozenset(TaskRevision.model_fields) - frozenset(TaskSpec.model_fields)
SPEC_FIELDS = frozenset(TaskSpec.model_fields) - frozenset(TaskRevision.model_fields)
"""The fields only one of the two contracts has: a data part sent without ``kind`` is the
contract whose own fields it uses (``corpus`` and ``schema_version`` are both's)."""


@dataclass(frozen=True)
class Plan:
    """One message's meaning: start a task (maybe refining an ended one), decide, or resume."""

    action: Literal["run", "decide", "resume"]
    context_id: str
    """The task's context: its task spec's id, shared by every version of the task."""
    spec: TaskSpec | None = None
    decision: HumanDecision | None = None
    refines: str | None = None
    """The ended task a new one refines (its A2A task id, which is its thread id)."""

    def describe(self) -> str:
        """The first working line: what the task is doing now."""
        if self.action == "run" and self.spec is not None:
            version = f" v{self.spec.task_version}" if self.spec.task_version > 1 else ""
            refines = f", refining task {self.refines}" if self.refines else ""
            return f"working on {self.spec.task_id}{version}{refines}: {self.spec.objective}"
        if self.action == "decide" and self.decision is not None:
            return f"resuming with the decision {self.decision.action!r}"
        return "resuming where the thread stopped"


def plan_for(workflow: Workflow, message: Message, running: bool) -> Plan:
    """What ``message`` asks, or the A2A error to refuse it with.

    ``running`` is whether this server is driving the task the message names right now.
    """
    try:
        if message.task_id:
            return _continue(workflow, message, running)
        if message.reference_task_ids:
            return _refine(workflow, message)
        spec = _spec(workflow, message, context_id=message.context_id or None)
        workflow.admit(spec)
        return Plan("run", spec.task_id, spec=spec)
    except (InvalidParamsError, TaskNotFoundError, UnsupportedOperationError):
        raise
    except Exception as error:
        raise a2a_error(error) from error


def _continue(workflow: Workflow, message: Message, running: bool) -> Plan:
    thread = message.task_id
    if not workflow.threads_has(thread):
        raise TaskNotFoundError(message=f"no task {thread!r}: send a message without task_id")
    current = workflow.outcome(thread)
    if current.state.ended:
        raise UnsupportedOperationError(
            message=f"task {thread!r} has ended ({state_words(current)}); an ended task is never "
            f"restarted: to refine it, send a message without task_id, with "
            f"reference_task_ids [{thread!r}] and a TaskRevision (or a TaskSpec) data part"
        )
    if running:
        raise UnsupportedOperationError(
            message=f"task {thread!r} is busy in this server (its run, or another message "
            "to it, is in progress); follow it with tasks/get or tasks/subscribe, or cancel "
            "it with tasks/cancel",
            data={"error": "THREAD_BUSY"},
        )
    with workflow.backend.writing(thread):  # busy elsewhere (the CLI, a worker): refused now
        workflow.refuse_if_held(thread, "nothing was sent")
    request = current.human_request
    if current.state != TaskState.INPUT_REQUIRED or request is None:
        return Plan("resume", current.task_id)
    values = data_parts(message)
    if len(values) != 1:
        raise InvalidParamsError(
            message=f"task {thread!r} is waiting for a decision on {request.interrupt_id!r}: "
            f"{request.question} (allowed: {', '.join(request.allowed_actions)}); send one "
            f"HumanDecision as a data part ({len(values)} data parts were sent; the schema "
            "is in the task's status message)"
        )
    return Plan("decide", current.task_id, decision=workflow.check_decision(request, values[0]))


def _refine(workflow: Workflow, message: Message) -> Plan:
    if len(message.reference_task_ids) != 1:
        raise InvalidParamsError(
            message="reference_task_ids: name the one ended task this task refines "
            f"({len(message.reference_task_ids)} were named)"
        )
    old = message.reference_task_ids[0]
    if not workflow.threads_has(old):
        raise TaskNotFoundError(message=f"reference_task_ids[0]: no task {old!r}")
    current = workflow.outcome(old)
    if not current.state.ended:
        raise UnsupportedOperationError(
            message=f"reference_task_ids[0]: task {old!r} has not ended ({state_words(current)}); "
            "send to it with task_id instead"
        )
    served = workflow.state(old).get("task")
    base = served if isinstance(served, TaskSpec) else workflow.started_task(old)
    if base is None:
        raise TaskNotFoundError(message=f"reference_task_ids[0]: task {old!r} has no task spec")
    if message.context_id and message.context_id != base.task_id:
        raise InvalidParamsError(
            message=f"context_id: {message.context_id!r} is not the context of task {old!r} "
            f"({base.task_id!r})"
        )
    values = data_parts(message)
    if len(values) == 1 and _kind(values[0], refining=old) == REVISION_KIND:
        revision = workflow.check_revision(old, values[0])
        try:
            revised = revision.applied_to(base)
        except RevisionRefused as error:
            raise InvalidRevision(
                f"invalid revision of task {old!r} (task v{base.task_version}): {error}"
            ) from error
    else:
        fresh = _spec(workflow, message, context_id=base.task_id)
        revised = fresh.model_copy(update={"task_version": base.task_version + 1})
    workflow.admit(revised)
    return Plan("run", revised.task_id, spec=revised, refines=old)


def _spec(workflow: Workflow, message: Message, *, context_id: str | None) -> TaskSpec:
    """The TaskSpec a message carries (one data part), or its text as the objective."""
    values = data_parts(message)
    if len(values) > 1:
        raise InvalidParamsError(
            message=f"parts: send one TaskSpec data part, or the objective as text "
            f"({len(values)} data parts were sent)"
        )
    fields: dict[str, Any]
    if values:
        if not isinstance(values[0], dict):
            raise InvalidParamsError(message="parts[0].data: expected a TaskSpec JSON object")
        if _kind(values[0]) == REVISION_KIND:
            raise InvalidParamsError(
                message="parts[0].data: a TaskRevision changes an ended task: name that task "
                "in reference_task_ids, or send a TaskSpec to start a new one"
            )
        fields = dict(values[0])
    elif text_of(message):
        fields = {"objective": text_of(message)}
    else:
        raise InvalidParamsError(
            message="parts: empty message; send a TaskSpec data part or the objective as text"
        )
    named = fields.get("task_id")
    if context_id is not None:
        if named is not None and named != context_id:
            raise InvalidParamsError(
                message=f"context_id: {context_id!r} differs from the task's task_id "
                f"{named!r}; the context is the task's id, so send one of them or both equal"
            )
        fields["task_id"] = context_id
    return workflow.task(**fields) if "objective" in fields else TaskSpec.model_validate(fields)


def _kind(value: Any, *, refining: str | None = None) -> Any:
    """Which contract a data part is: its ``kind``, else the one whose own fields it uses.

    A TaskRevision sent without ``kind`` must not be read as a TaskSpec (whose error would
    name fields the sender never meant). When ``refining`` an ended task a part that uses
    both contracts' own fields, or neither's, is refused naming the ``kind`` to add; a new
    task's part reads as a TaskSpec then, whose own check names what is wrong.
    """
    if not isinstance(value, dict):
        return None
    if "kind" in value:
        return value["kind"]
    revision, spec = sorted(REVISION_FIELDS & value.keys()), sorted(SPEC_FIELDS & value.keys())
    if revision and not spec:
        return REVISION_KIND
    if spec and not revision:
        return SPEC_KIND
    if refining is None:
        return None
    seen = (
        f"{', '.join(revision)} are a TaskRevision's fields and {', '.join(spec)} a TaskSpec's"
        if revision
        else f"its fields ({', '.join(sorted(value)) or 'none'}) are both's or neither's"
    )
    raise InvalidParamsError(
        message=f'parts[0].data.kind: missing, and {seen}; add "kind": "{REVISION_KIND}" '
        f'to revise task {refining!r}, or "kind": "{SPEC_KIND}" to send its next TaskSpec '
        "whole"
    )


def state_words(outcome: RunOutcome) -> str:
    """Where a task stands, in words: ``completed, result partial``."""
    result = f", result {outcome.result_status}" if outcome.result_status else ""
    return f"{outcome.state.name.lower()}{result}"
