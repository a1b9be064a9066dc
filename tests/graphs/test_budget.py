"""A fan-out's parallel tasks share the budget left when it started them."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts import BranchTask, Budget, NodeRun, Usage
from graphs.budget import branch_share

HASH = {name: name[0] * 64 for name in ("a", "b", "c", "d")}


def run(node: str, key: str, calls: int, *, reused: bool = False) -> NodeRun:
    return NodeRun(
        task_version=1,
        node_id=node,
        attempt=1,
        status="succeeded",
        input_hash=HASH[key],
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        usage=Usage(tool_calls=calls, tokens=10 * calls),
        reused=reused,
    )


BUDGET = Budget(max_tool_calls=20, max_tokens=200)
TASK = BranchTask(node="research", key="q-1", tasks=3, nodes=["research"])


def test_each_task_gets_its_share_of_what_was_left_before_the_fan_out() -> None:
    before = [run("writer", "a", 5)]
    assert branch_share(BUDGET, before, TASK, ("research", HASH["b"])) == (5, 50)


def test_a_sibling_that_finished_first_does_not_shrink_a_task_s_share() -> None:
    runs = [run("writer", "a", 5), run("research", "c", 5), run("research", "d", 5)]
    assert branch_share(BUDGET, runs, TASK, ("research", HASH["b"])) == (5, 50)


def test_a_task_s_own_earlier_attempts_count_against_its_share() -> None:
    runs = [run("writer", "a", 5), run("research", "b", 3)]
    assert branch_share(BUDGET, runs, TASK, ("research", HASH["b"])) == (2, 20)


def test_runs_of_an_earlier_pass_count_as_spent_before_the_fan_out() -> None:
    runs = [run("research", "c", 6), run("join_research", "a", 0), run("research", "d", 1)]
    assert branch_share(BUDGET, runs, TASK, ("research", HASH["b"])) == (4, 46)


def test_no_limit_means_no_share() -> None:
    assert branch_share(Budget(), [run("writer", "a", 5)], TASK, ("research", HASH["b"])) == (
        None,
        None,
    )
