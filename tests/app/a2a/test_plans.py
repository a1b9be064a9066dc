"""What a message asks of a thread, read before anything runs (``app.a2a.plans``).

In process, on a real Workflow: every refusal names what was wrong and leaves the store
as it was; an accepted message becomes the plan the executor carries out.
"""

from __future__ import annotations

import pytest
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import Message, Part, Role
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError

from app.a2a.plans import plan_for
from app.workflow import Workflow
from contracts import TaskState
from tests.conftest import OBJECTIVE


def message(*parts: Part, **fields: object) -> Message:
    return Message(message_id="m-1", role=Role.ROLE_USER, parts=list(parts), **fields)  # type: ignore[arg-type]


def test_text_is_the_objective_and_the_context_is_the_spec_id(workflow: Workflow) -> None:
    plan = plan_for(workflow, message(new_text_part(OBJECTIVE)), running=False)
    assert plan.action == "run" and plan.spec is not None
    assert plan.spec.objective == OBJECTIVE
    assert plan.context_id == plan.spec.task_id


def test_a_spec_with_whole_numbers_sent_as_doubles_validates(workflow: Workflow) -> None:
    spec = {"objective": OBJECTIVE, "constraints": {"max_words": 300}}
    plan = plan_for(workflow, message(new_data_part(spec)), running=False)
    assert plan.spec is not None and plan.spec.constraints.max_words == 300


def test_a_named_context_becomes_the_task_id_and_a_different_one_is_refused(
    workflow: Workflow,
) -> None:
    plan = plan_for(workflow, message(new_text_part(OBJECTIVE), context_id="ctx-1"), running=False)
    assert plan.spec is not None and plan.spec.task_id == "ctx-1"
    clash = message(new_data_part({"objective": OBJECTIVE, "task_id": "a"}), context_id="b")
    with pytest.raises(InvalidParamsError, match="context_id: 'b' differs"):
        plan_for(workflow, clash, running=False)


def test_an_invalid_field_is_named(workflow: Workflow) -> None:
    bad = message(new_data_part({"objective": OBJECTIVE, "budget": {"max_attempts": 0}}))
    with pytest.raises(InvalidParamsError, match=r"budget\.max_attempts"):
        plan_for(workflow, bad, running=False)


def test_two_data_parts_or_none_at_all_are_refused(workflow: Workflow) -> None:
    two = message(new_data_part({"objective": OBJECTIVE}), new_data_part({"objective": "x"}))
    with pytest.raises(InvalidParamsError, match="2 data parts"):
        plan_for(workflow, two, running=False)
    with pytest.raises(InvalidParamsError, match="empty message"):
        plan_for(workflow, message(), running=False)


def test_an_unknown_task_is_not_found(workflow: Workflow) -> None:
    with pytest.raises(TaskNotFoundError, match="no task 'nope'"):
        plan_for(workflow, message(new_text_part("hi"), task_id="nope"), running=False)


def test_a_waiting_task_takes_only_a_decision_it_allows(workflow: Workflow) -> None:
    outcome = workflow.run(workflow.task(OBJECTIVE, policies={"require_approval": True}), "t-wait")
    assert outcome.state == TaskState.INPUT_REQUIRED and outcome.human_request is not None
    interrupt = outcome.human_request.interrupt_id
    with pytest.raises(InvalidParamsError, match="send one HumanDecision"):
        plan_for(workflow, message(new_text_part("ok"), task_id="t-wait"), running=False)
    wrong = new_data_part({"interrupt_id": interrupt, "action": "explode"})
    with pytest.raises(InvalidParamsError, match="action"):
        plan_for(workflow, message(wrong, task_id="t-wait"), running=False)
    right = new_data_part({"interrupt_id": interrupt, "action": "approve"})
    plan = plan_for(workflow, message(right, task_id="t-wait"), running=False)
    assert plan.action == "decide" and plan.decision is not None
    assert plan.decision.action == "approve"
    assert workflow.outcome("t-wait").state == TaskState.INPUT_REQUIRED, "nothing was applied"


def test_a_running_task_is_busy(workflow: Workflow) -> None:
    workflow.run(workflow.task(OBJECTIVE, policies={"require_approval": True}), "t-busy")
    with pytest.raises(UnsupportedOperationError, match="is busy in this server"):
        plan_for(workflow, message(new_text_part("hi"), task_id="t-busy"), running=True)


def test_an_ended_task_is_never_restarted_but_may_be_refined(workflow: Workflow) -> None:
    ended = workflow.run(workflow.task(OBJECTIVE), "t-done")
    assert ended.state == TaskState.COMPLETED
    with pytest.raises(UnsupportedOperationError, match="reference_task_ids"):
        plan_for(workflow, message(new_text_part("again"), task_id="t-done"), running=False)
    revision = {"kind": "task_revision", "max_words": 200, "reason": "shorter"}
    refine = message(new_data_part(revision), reference_task_ids=["t-done"])
    plan = plan_for(workflow, refine, running=False)
    assert plan.refines == "t-done" and plan.spec is not None
    assert plan.spec.task_version == 2 and plan.spec.constraints.max_words == 200
    assert plan.context_id == ended.task_id
    other = message(new_data_part(revision), reference_task_ids=["t-done"], context_id="x")
    with pytest.raises(InvalidParamsError, match="is not the context of task 't-done'"):
        plan_for(workflow, other, running=False)
    pointless = {"kind": "task_revision", "drop_sections": ["Nope"], "reason": "r"}
    with pytest.raises(InvalidParamsError, match="drop_sections"):
        plan_for(
            workflow,
            message(new_data_part(pointless), reference_task_ids=["t-done"]),
            running=False,
        )


def test_a_refinement_names_one_ended_task(workflow: Workflow) -> None:
    workflow.run(workflow.task(OBJECTIVE, policies={"require_approval": True}), "t-open")
    revision = new_data_part({"kind": "task_revision", "max_words": 200, "reason": "r"})
    with pytest.raises(UnsupportedOperationError, match="has not ended"):
        plan_for(workflow, message(revision, reference_task_ids=["t-open"]), running=False)
    with pytest.raises(InvalidParamsError, match="2 were named"):
        plan_for(workflow, message(revision, reference_task_ids=["a", "b"]), running=False)


def test_a_revision_sent_without_kind_is_read_by_its_fields(workflow: Workflow) -> None:
    workflow.run(workflow.task(OBJECTIVE), "t-unkinded")
    revision = {"max_words": 200, "reason": "shorter"}
    refine = message(new_data_part(revision), reference_task_ids=["t-unkinded"])
    plan = plan_for(workflow, refine, running=False)
    assert plan.spec is not None and plan.spec.task_version == 2
    assert plan.spec.objective == OBJECTIVE and plan.spec.constraints.max_words == 200
    with pytest.raises(InvalidParamsError, match="name that task in reference_task_ids"):
        plan_for(workflow, message(new_data_part(revision)), running=False)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        pytest.param(
            {"objective": OBJECTIVE, "max_words": 200, "reason": "r"},
            "max_words, reason are a TaskRevision's fields and objective a TaskSpec's",
            id="both contracts' fields",
        ),
        pytest.param({"corpus": []}, r"its fields \(corpus\) are both's", id="only shared ones"),
    ],
)
def test_an_unkinded_part_both_contracts_could_be_names_the_kind_to_add(
    workflow: Workflow, data: dict[str, object], says: str
) -> None:
    workflow.run(workflow.task(OBJECTIVE), "t-ambiguous")
    refine = message(new_data_part(data), reference_task_ids=["t-ambiguous"])
    with pytest.raises(InvalidParamsError, match=says) as refused:
        plan_for(workflow, refine, running=False)
    assert '"kind": "task_revision"' in refused.value.message
    assert '"kind": "task_spec"' in refused.value.message
    assert workflow.state("t-ambiguous")["task"].task_version == 1, "nothing was changed"
