"""An A2A Task read from its thread: the state, the status message, the contract artifacts.

Nothing about a task is stored apart from its thread. Its state is the thread's outcome
(``contracts.TaskState`` is A2A's, name for name), its context is the task spec's id, its
artifacts are the contracts the thread holds (the article as markdown text, the research
bundle, draft and review as their JSON, each with the sha256 and revision of the bytes it
names in the artifact store), and the task it refines is read from the audit.
"""

from __future__ import annotations

from typing import Any

from a2a.helpers.proto_helpers import new_text_part
from a2a.types import Artifact, Message, Task, TaskState, TaskStatus
from google.protobuf.timestamp_pb2 import Timestamp

from app.a2a.parts import agent_message, contract_part, json_part
from app.a2a.plans import state_words
from app.a2a.threads import REFINES
from app.workflow import Workflow, pause_of
from contracts import ArtifactRef, HumanRequest, RunOutcome, VersionedContract
from contracts import TaskState as Lifecycle
from graphs.decision_schema import decision_schema

CONTRACT_ARTIFACTS: tuple[str, ...] = ("research", "draft", "review")
"""The contracts a task returns as data artifacts; each is also the name of its channel
and of the artifact store entry it names (``Workflow.artifact_ref``)."""


def task_of(
    workflow: Workflow, thread_id: str, *, running: bool, artifacts: bool = True
) -> Task | None:
    """The A2A Task thread ``thread_id`` is, or None if there is no such thread."""
    if not workflow.threads_has(thread_id):
        return None
    status = workflow.status(thread_id)
    current = status.current
    context_id = current.task_id
    message = _status_message(workflow, current, running, context_id)
    stamp = Timestamp()
    if status.updated_at:
        stamp.FromJsonString(status.updated_at.replace("+00:00", "Z"))
    metadata: dict[str, Any] = {"thread_id": thread_id, "task_version": status.task_version}
    if current.result_status:
        metadata["result_status"] = current.result_status
    if current.state == Lifecycle.WORKING:
        metadata["running"] = running
    refines = refined_task(workflow, thread_id)
    if refines:
        metadata["refines"] = refines
    task = Task(
        id=thread_id,
        context_id=context_id,
        status=TaskStatus(
            state=TaskState.Value(current.state.value), message=message, timestamp=stamp
        ),
        metadata=metadata,
    )
    if artifacts and current.state.ended:
        task.artifacts.extend(artifacts_of(workflow, thread_id, current))
    return task


def refined_task(workflow: Workflow, thread_id: str) -> str | None:
    """The ended task this one was started to refine, as its audit records it."""
    for run in workflow.ledger.runs(thread_id):
        if run.node_id.startswith(REFINES):
            return run.node_id.removeprefix(REFINES)
    return None


def artifacts_of(workflow: Workflow, thread_id: str, outcome: RunOutcome) -> list[Artifact]:
    """The article (if one was published) and each contract the thread holds."""
    found: list[Artifact] = []
    if outcome.article is not None:
        text = workflow.artifact(thread_id, "article").decode("utf-8")
        found.append(
            Artifact(
                artifact_id="article",
                name="article",
                description="The published article (markdown).",
                parts=[new_text_part(text, media_type=outcome.article.media_type)],
                metadata=ref_metadata(outcome.article),
            )
        )
    values = workflow.state(thread_id)
    for name in CONTRACT_ARTIFACTS:
        contract = values.get(name)
        if not isinstance(contract, VersionedContract):
            continue
        ref = workflow.artifact_ref(thread_id, name)
        found.append(
            Artifact(
                artifact_id=name,
                name=name,
                description=f"The {type(contract).__name__} contract, as JSON.",
                parts=[contract_part(contract)],
                metadata={
                    "contract": type(contract).__name__,
                    "schema_version": contract.schema_version,
                    **ref_metadata(ref),
                },
            )
        )
    return found


def ref_metadata(ref: ArtifactRef) -> dict[str, Any]:
    """What a client needs to fetch and verify the bytes an artifact names."""
    return {
        "uri": ref.uri,
        "sha256": ref.sha256,
        "revision": ref.revision,
        "media_type": ref.media_type,
        "size_bytes": ref.size_bytes,
    }


def _status_message(
    workflow: Workflow, current: RunOutcome, running: bool, context_id: str
) -> Message:
    ids = {"task_id": current.thread_id, "context_id": context_id}
    request = current.human_request
    if current.state == Lifecycle.INPUT_REQUIRED and request is not None:
        return agent_message(
            f"{request.question} (allowed: {', '.join(request.allowed_actions)}); answer "
            "with a HumanDecision data part, as the schema that follows says",
            contract_part(request),
            json_part(decision_json_schema(workflow, request)),
            **ids,
        )
    if current.state == Lifecycle.WORKING:
        how = (
            "running"
            if running
            else "not running in this server: unless another process runs it, send any "
            "message to this task to resume it"
        )
        return agent_message(f"{current.reason or 'working'} ({how})", **ids)
    line = state_words(current)
    if current.reason:
        line += f": {current.reason}"
    return agent_message(line, contract_part(current), **ids)


def decision_json_schema(workflow: Workflow, request: HumanRequest) -> dict[str, Any]:
    """The JSON Schema of the decisions ``request`` takes (its actions, its thread)."""
    schema = decision_schema(request, pause_of(request, workflow.pauses))
    return schema.model_json_schema()
