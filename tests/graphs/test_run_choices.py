"""A run's choices (an assistant's context) replace the task's policies and limits."""

from __future__ import annotations

from dataclasses import replace

from app.workflow import Workflow
from contracts import ErrorCode, RunChoices, TaskSpec, TaskState
from graphs.graph import routed
from tests.app.test_review_loop import SloppyWriter
from tests.conftest import OBJECTIVE


def chosen(workflow: Workflow, choices: RunChoices, writer: SloppyWriter | None = None) -> Workflow:
    context = replace(workflow.context, choices=choices)
    if writer is not None:
        context = context.with_agent("writer", writer)
    return Workflow(workflow.settings, context=context)


def test_chosen_review_rounds_end_the_run_where_the_task_alone_would_go_on(
    workflow: Workflow,
) -> None:
    task = workflow.task(OBJECTIVE)
    assert task.budget.max_review_rounds == 3
    with chosen(workflow, RunChoices(max_review_rounds=1), SloppyWriter(bad_rounds=1)) as run:
        outcome = run.run(task, "t-one-round")
        stored = run.state("t-one-round")["task"]
    assert outcome.result_status == "partial" and outcome.review_rounds == 1
    assert outcome.errors[0].code == ErrorCode.BUDGET_EXHAUSTED
    assert isinstance(stored, TaskSpec) and stored.budget.max_review_rounds == 1
    audit = [record.node_id for record in workflow.history("t-one-round")]
    choice = "choose: max_review_rounds=1"
    assert audit.count(choice) == 1, "recorded once"
    at = audit.index(choice)
    branch_nodes = {spec.name for spec, _ in routed(workflow.wiring) if spec.branch is not None}
    assert set(audit[:at]) <= branch_nodes and audit[at + 1] not in branch_nodes, (
        "by the first node that writes the task back: the first after any branches (the join)"
    )
    assert audit.count("choose: max_review_rounds=1") == 1


def test_a_chosen_approval_pauses_a_task_that_did_not_ask_for_one(workflow: Workflow) -> None:
    with chosen(workflow, RunChoices(require_approval=True)) as run:
        outcome = run.run(OBJECTIVE, "t-approve")
    assert outcome.state == TaskState.INPUT_REQUIRED
    assert outcome.human_request is not None
    resumed = workflow.resume(  # a resume without the choice keeps the task as chosen
        "t-approve", {"interrupt_id": outcome.human_request.interrupt_id, "action": "approve"}
    )
    assert resumed.state == TaskState.COMPLETED


def test_no_choice_leaves_the_task_and_the_audit_alone(workflow: Workflow) -> None:
    with chosen(workflow, RunChoices()) as run:
        run.run(OBJECTIVE, "t-plain")
    assert not any(r.node_id.startswith("choose:") for r in workflow.history("t-plain"))
