"""A node may declare LangGraph's ``RetryPolicy``: what its ``retry_on`` accepts is tried
again at the policy's intervals, each attempt audited, within the task's budget; what it
refuses, and the template's own errors whatever it accepts, fail on the first attempt.

Small one-node graphs run in process on an in-memory checkpointer and ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import RetryPolicy
from typing_extensions import TypedDict

from app.services import build_context
from app.settings import Settings
from app.storage.serde import contract_serializer
from contracts import ErrorCode, NodeRun, RunOutcome, TaskSpec
from graphs import build_graph, node
from graphs.errors import WiringError
from graphs.routing import STOP


class TaskOnly(TypedDict):
    task: TaskSpec


class Nothing(TypedDict, total=False):
    pass


def to_end(state: Mapping[str, Any]) -> Literal["__end__"]:
    return STOP


def failing(*errors: Exception) -> Any:
    """A body raising ``errors`` in turn, then succeeding."""
    left = list(errors)

    def body(state: TaskOnly) -> Nothing:
        if left:
            raise left.pop(0)
        return {}

    return body


@dataclass
class Ran:
    """What a run of the one-node graph left: its outcome, audit, waits and any error."""

    outcome: RunOutcome | None
    runs: list[NodeRun]
    waits: list[float]
    raised: Exception | None


def run(policy: RetryPolicy, body: Any, tmp_path: Path, *, attempts: int = 3) -> Ran:
    """Run a one-node graph whose node declares ``policy``."""
    spec = node("flaky", reads=TaskOnly, writes=Nothing, retry=policy)(body)
    waits: list[float] = []
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    context = replace(build_context(settings), sleep=waits.append)
    graph = build_graph(wiring=((spec, to_end),)).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-retry"}}
    task = TaskSpec(task_id="t-retry", objective="Try again", budget={"max_attempts": attempts})
    raised = None
    try:
        graph.invoke({"task": task}, config, context=context)
    except Exception as error:  # returned for the test to check, never dropped
        raised = error
    outcome = graph.get_state(config).values.get("outcome")
    return Ran(outcome, context.ledger.runs("t-retry"), waits, raised)


def kinds(runs: list[NodeRun]) -> list[str | None]:
    return [run.error.kind if run.error else None for run in runs]


def test_what_retry_on_accepts_is_tried_again_at_the_policy_s_intervals(
    tmp_path: Path,
) -> None:
    policy = RetryPolicy(initial_interval=0.25, jitter=False, retry_on=ConnectionError)
    ran = run(policy, failing(ConnectionError("refused"), ConnectionError("reset")), tmp_path)
    assert ran.raised is None and ran.outcome is None, "the third attempt succeeded"
    assert [run.status for run in ran.runs] == ["failed", "failed", "succeeded"]
    assert kinds(ran.runs) == ["transient", "transient", None]
    assert ran.runs[0].error is not None and "refused" in ran.runs[0].error.detail
    assert ran.waits == [0.25, 0.5], "initial_interval, then times backoff_factor"


def test_a_failure_that_outlasts_the_policy_ends_the_run_transient_and_retryable(
    tmp_path: Path,
) -> None:
    policy = RetryPolicy(max_attempts=2, initial_interval=0, jitter=False, retry_on=OSError)
    ran = run(policy, failing(*[TimeoutError("slow")] * 5), tmp_path)
    assert ran.raised is None and ran.outcome is not None and ran.outcome.retryable
    [error] = ran.outcome.errors
    assert error.code == ErrorCode.TRANSIENT and "flaky failed 2 times" in error.detail
    assert kinds(ran.runs) == ["transient", "transient"] and len(ran.waits) == 1


def test_the_task_s_budget_caps_the_policy_s_attempts(tmp_path: Path) -> None:
    policy = RetryPolicy(max_attempts=10, initial_interval=0, jitter=False)
    ran = run(policy, failing(*[ConnectionError()] * 9), tmp_path, attempts=2)
    assert ran.outcome is not None and len(ran.runs) == 2


def test_an_error_retry_on_refuses_fails_on_its_first_attempt(tmp_path: Path) -> None:
    ran = run(RetryPolicy(retry_on=ConnectionError), failing(ValueError("no link")), tmp_path)
    assert isinstance(ran.raised, ValueError) and "no link" in str(ran.raised)
    assert kinds(ran.runs) == ["internal"] and ran.waits == []


def test_the_template_s_own_errors_are_never_retried_whatever_retry_on_accepts(
    tmp_path: Path,
) -> None:
    ran = run(RetryPolicy(retry_on=Exception), failing(WiringError("declare it")), tmp_path)
    assert isinstance(ran.raised, WiringError)
    assert kinds(ran.runs) == ["internal"] and ran.waits == []
