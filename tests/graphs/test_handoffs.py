"""The envelope is derived from state: what people decided comes from the decision log."""

from __future__ import annotations

from contracts import DecisionLog, Handoff, ResearchBundle, TaskSpec
from graphs.handoffs import derive_handoff
from graphs.ports import StepInfo
from tests.contracts.examples import EXAMPLES

STEP = StepInfo(thread_id="t", node="writer", step=5, task_version=1)


def _state(**values: object) -> dict[str, object]:
    return {"task": EXAMPLES[TaskSpec], "research": EXAMPLES[ResearchBundle], **values}


def test_decisions_constraints_and_rounds_come_from_the_decision_log() -> None:
    log = EXAMPLES[DecisionLog]
    handoff = derive_handoff(_state(decisions=log), producer=STEP, next_node="reviewer")
    assert handoff.next_allowed_action == "reviewer" and handoff.from_node == "writer"
    assert [item.text for item in handoff.accepted_decisions] == ["approve by editor"]
    human = [item.text for item in handoff.constraints if item.provenance.producer == "human"]
    assert human == ["at most 150 words"]


def test_an_earlier_handoff_adds_nothing_people_decided() -> None:
    old = EXAMPLES[Handoff].model_copy(update={"granted_review_rounds": 1})
    handoff = derive_handoff(_state(handoff=old), producer=STEP, next_node="reviewer")
    assert handoff.accepted_decisions == [] and handoff.granted_review_rounds == 0
    assert {item.provenance.producer for item in handoff.constraints} <= {"task"}
