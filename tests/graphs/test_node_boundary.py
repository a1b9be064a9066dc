"""A node that returns an invalid contract fails at that boundary; nothing invalid is saved."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from app.workflow import Workflow
from contracts import DraftArticle, Handoff, ResearchBundle, ReviewResult, TaskSpec
from graphs import AgentOutput, ArtifactStore, StepInfo
from graphs.errors import ContractViolation
from graphs.state import CHANNEL_CONTRACTS
from tests.conftest import OBJECTIVE


@dataclass
class BrokenWriter:
    """Writes a real body, then returns a draft broken in one specific way."""

    breakage: str

    def write(
        self,
        task: TaskSpec,
        handoff: Handoff,
        bundle: ResearchBundle,
        previous: DraftArticle | None,
        review: ReviewResult | None,
        store: ArtifactStore,
        step: StepInfo,
    ) -> AgentOutput[Any]:
        body = store.put(step.artifact_id("draft"), "draft", b"# Draft\n", "text/markdown")
        fields: dict[str, Any] = {
            "task_id": task.task_id,
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
    context = replace(workflow.context, writer=BrokenWriter(breakage))
    broken = Workflow(workflow.settings, context=context)
    with broken, pytest.raises(ContractViolation) as caught:
        broken.run(broken.task(OBJECTIVE), "t-broken")
    assert caught.value.node == "writer"
    assert field in caught.value.fields
    assert field in str(caught.value)

    with Workflow(workflow.settings) as fresh:
        snapshot = fresh.graph.get_state(fresh.config("t-broken"))
        assert snapshot.next == ("writer",), "the thread stays at the step that failed"
        assert snapshot.values.get("draft") is None, "no invalid draft was checkpointed"
        for state in fresh.graph.get_state_history(fresh.config("t-broken")):
            for channel, value in state.values.items():
                model = CHANNEL_CONTRACTS[channel]
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if item is not None:
                        model.model_validate(item)
        # the intact thread can still finish once the writer behaves
        fresh.graph.invoke(None, fresh.config("t-broken"), context=fresh.context, durability="sync")
        assert fresh.outcome("t-broken").result_status == "completed"
