"""Fault points come from the services a run calls: every point a rule may name is reached."""

from __future__ import annotations

from collections import defaultdict

from app.faults.points import with_faults
from app.workflow import Workflow
from bench._common import QUESTIONS
from graphs import WIRING, StepInfo
from graphs.graph import routed
from tests.conftest import OBJECTIVE

DECLARED = {spec.name: spec.fault_points() for spec, _ in WIRING}
BRANCH_NODES = {spec.name for spec, _ in routed(WIRING) if spec.branch is not None}


def test_every_declared_point_of_every_node_that_ran_is_reached_in_order(
    workflow: Workflow,
) -> None:
    reached: list[str] = []
    with Workflow(workflow.settings, context=with_faults(workflow.context, reached.append)) as run:
        outcome = run.run(run.task(OBJECTIVE, questions=list(QUESTIONS)), "t-points")
    assert outcome.result_status == "completed"
    by_name: defaultdict[str, list[str]] = defaultdict(list)
    for point in reached:
        name, _, where = point.partition(":")
        by_name[name].append(where)
    ran = {run.node_id for run in workflow.history("t-points")}
    for node in ran:
        assert set(DECLARED[node]) <= set(by_name[node]), f"{node} reached {by_name[node]}"
    for name in ("writer", "research[q-1]", "research[q-2]", "research[q-3]"):
        points = by_name[name]  # a branch task by its key too, in the order of a visit
        done = points.index("before_return")
        assert points[:2] == ["start", "attempt"] and "after_artifact" in points[2:done], points
    keyed = {name for name in by_name if name.partition("[")[0] in BRANCH_NODES}
    assert {f"research[q-{n}]" for n in (1, 2, 3)} <= keyed, "a branch task by its key"
    assert set(by_name) - {*DECLARED, *keyed} == set()


def test_a_put_outside_any_node_reaches_no_point(workflow: Workflow) -> None:
    reached: list[str] = []
    context = with_faults(workflow.context, reached.append)
    context.store.put("t-outside-notes", "notes", b"between runs", "text/markdown")
    with context.store.batch():
        pass
    assert reached == []


def test_only_the_running_node_s_own_succeeded_attempt_reaches_before_return(
    workflow: Workflow,
) -> None:
    """A replayed attempt did no work, and a record another name writes is no attempt."""
    assert workflow.run(OBJECTIVE, "t-reuse").result_status == "completed"
    writer = next(run for run in workflow.history("t-reuse") if run.node_id == "writer")
    reached: list[str] = []
    context = with_faults(workflow.context, reached.append)
    ledger = context.ledger
    with context.node_running(StepInfo(thread_id="t-reuse", node="writer", step=1, task_version=1)):
        for record in (
            writer.model_copy(update={"reused": True}),
            writer.model_copy(update={"node_id": "choose: max_words=50"}),
            writer.model_copy(update={"status": "failed"}),
            writer,
        ):
            ledger.finish("t-reuse", ledger.start("t-reuse", record), record)
    assert reached == ["writer:start", "writer:before_return"]
