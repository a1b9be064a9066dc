"""A node that returns an invalid contract fails at that boundary; nothing invalid is saved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from app.workflow import Workflow
from contracts import DraftArticle, ErrorCode
from graphs import AgentOutput, WriteRequest, workflow_channels
from tests.conftest import OBJECTIVE


@dataclass
class BrokenWriter:
    """Writes a real body, then returns a draft broken in one specific way."""

    breakage: str

    def run(self, request: WriteRequest) -> AgentOutput[Any]:
        store, step = request.store, request.step
        body = store.put(step.artifact_id("draft"), "draft", b"# Draft\n", "text/markdown")
        fields: dict[str, Any] = {
            "task_id": request.task.task_id,
            "result_status": "completed",
            "revision": 1,
            "body": body,
            "word_count": 1,
        }
        if self.breakage == "wrong_type":
            fields["revision"] = "two"
        elif self.breakage == "missing_field":
            del fields["body"]
        elif self.breakage == "unknown_version":
            fields["schema_version"] = "9.9"
        return AgentOutput(DraftArticle.model_construct(**fields))


@pytest.mark.parametrize(
    ("breakage", "field"),
    [
        ("wrong_type", "draft.revision"),
        ("missing_field", "draft.body"),
        ("unknown_version", "draft.schema_version"),
    ],
)
def test_invalid_writer_output_fails_naming_the_field_and_keeps_the_previous_checkpoint(
    workflow: Workflow, breakage: str, field: str
) -> None:
    context = workflow.context.with_agent("writer", BrokenWriter(breakage))
    with Workflow(workflow.settings, context=context) as broken:
        outcome = broken.run(broken.task(OBJECTIVE), "t-broken")
    assert outcome.result_status == "failed"
    [error] = outcome.errors
    assert error.code == ErrorCode.INVALID_OUTPUT
    assert error.field == field
    assert field in error.detail and "writer" in error.detail

    writer_runs = [run for run in workflow.history("t-broken") if run.node_id == "writer"]
    assert [(run.attempt, run.status) for run in writer_runs] == [(1, "failed"), (2, "failed")]
    assert all(run.error and run.error.kind == "invalid_output" for run in writer_runs)

    states = list(workflow.graph.get_state_history(workflow.config("t-broken")))
    assert any(state.next == ("writer",) for state in states), "the research checkpoint is kept"
    for state in states:
        assert state.values.get("draft") is None, "no invalid draft was checkpointed"
        for channel, value in state.values.items():
            if value is not None:
                workflow_channels()[channel].contract.model_validate(value)


def test_errors_speak_in_the_projects_words_not_pydantics() -> None:
    from pydantic import ValidationError

    from graphs.boundary import describe_validation_error
    from graphs.decision_schema import decision_schema
    from graphs.human import pause_request
    from graphs.nodes.approve_research import APPROVAL
    from graphs.ports import StepInfo

    step = StepInfo(thread_id="t", node="approve_research", step=2, task_version=1)
    request = pause_request(APPROVAL, step, question="Approve?")
    with pytest.raises(ValidationError) as refused:
        decision_schema(request, APPROVAL)(interrupt_id="approve-research-s2.t", action="reject")
    message = describe_validation_error(refused.value, "decision")
    assert message == "decision: reason is required when action is 'reject'"
