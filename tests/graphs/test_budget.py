"""A fan-out's parallel tasks share the budget left when it started them."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts import BranchTask, Budget, NodeRun, TaskSpec, Usage
from graphs.budget import Tally, branch_share, fanned_by, tally_of
from graphs.fan_out import branch_sends
from graphs.nodes.research import research
from tests.conftest import OBJECTIVE
from tests.extension_side_by_side import measure_draft

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


def share(budget: Budget, runs: list[NodeRun]) -> tuple[int | None, int | None]:
    """Task ``b``'s share, from the tally a ledger gives for these records."""
    return branch_share(budget, tally_of(runs, "research", HASH["b"], fanned_by(TASK)), TASK.tasks)


def test_each_task_gets_its_share_of_what_was_left_before_the_fan_out() -> None:
    assert share(BUDGET, [run("writer", "a", 5)]) == (5, 50)


def test_a_sibling_that_finished_first_does_not_shrink_a_task_s_share() -> None:
    runs = [run("writer", "a", 5), run("research", "c", 5), run("research", "d", 5)]
    assert share(BUDGET, runs) == (5, 50)


def test_a_task_s_own_earlier_attempts_count_against_its_share() -> None:
    runs = [run("writer", "a", 5), run("research", "b", 3)]
    assert share(BUDGET, runs) == (2, 20)


def test_runs_of_an_earlier_pass_count_as_spent_before_the_fan_out() -> None:
    runs = [run("research", "c", 6), run("join_research", "a", 0), run("research", "d", 1)]
    assert share(BUDGET, runs) == (4, 46)


def test_no_limit_means_no_share() -> None:
    assert share(Budget(), [run("writer", "a", 5)]) == (None, None)


def test_a_tally_splits_the_spend_at_the_last_attempt_outside_the_fan_out() -> None:
    runs = [
        run("writer", "a", 1),
        run("research", "c", 3),
        run("join_research", "d", 0),
        run("research", "b", 2),
        run("research", "b", 4, reused=True),  # replayed: no work, no cost
        run("research", "c", 5),
    ]
    assert tally_of(runs, "research", HASH["b"], ("research",)) == Tally(
        spent=Usage(tool_calls=11, tokens=110),
        attempts=2,
        before_fan_out=Usage(tool_calls=4, tokens=40),
        own_since=Usage(tool_calls=2, tokens=20),
    )
    unfanned = tally_of(runs, "writer", HASH["a"])
    assert unfanned.before_fan_out == unfanned.spent and unfanned.own_since == Usage()
    assert tally_of([], "writer", HASH["a"]) == Tally()


def test_a_kind_of_work_that_cannot_spend_takes_no_share_of_what_research_may_spend() -> None:
    """Beside research's three tasks, a measure with neither agent nor tools: a third each."""
    task = TaskSpec(task_id="t-share", objective=OBJECTIVE, questions=["Who?", "Which scripts?"])
    sends = branch_sends([research, measure_draft], {"task": task})
    shares = {(send.node, send.arg["branch"].key): send.arg["branch"].tasks for send in sends}
    assert len(shares) == 4 and set(shares.values()) == {3}, shares
