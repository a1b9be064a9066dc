"""The runner's trace hooks: every audited attempt is begun and ended once, as its row says.

A recording ``RunTrace`` (no tracing library) stands in for the app's OpenTelemetry one.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from app.workflow import Workflow
from contracts import NodeRun, ToolReceipt
from graphs.ports import StepInfo
from graphs.trace import TRACED_ATTEMPT, UNTRACED
from tests.conftest import OBJECTIVE
from tests.graphs.test_node_boundary import BrokenWriter


@dataclass
class Recorder:
    """What the hooks were told, as (event, node, attempt, detail) rows."""

    seen: list[tuple[str, str, int, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, thread_id: str) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()

    def attempt(self, step: StepInfo, record: NodeRun) -> RecordedAttempt:
        with self.lock:
            self.seen.append(("begin", record.node_id, record.attempt, record.input_hash))
        return RecordedAttempt(self, record)


class RecordedAttempt:
    def __init__(self, recorder: Recorder, record: NodeRun) -> None:
        self.recorder = recorder
        self.record = record
        self.token = TRACED_ATTEMPT.set(self)

    def tool(self, receipt: ToolReceipt, kind: str | None) -> None:
        with self.recorder.lock:
            self.recorder.seen.append(("tool", self.record.node_id, self.record.attempt, kind))

    def ended(self, record: NodeRun) -> None:
        with self.recorder.lock:
            row = ("end", record.node_id, record.attempt, (record.status, record.reused))
            self.recorder.seen.append(row)
        TRACED_ATTEMPT.reset(self.token)


def test_each_audited_attempt_is_begun_and_ended_once_as_its_row_says(workflow: Workflow) -> None:
    recorder = Recorder()
    context = workflow.context.with_agent("writer", BrokenWriter("wrong_type"))
    with Workflow(workflow.settings, context=replace(context, trace=recorder)) as traced:
        traced.run(traced.task(OBJECTIVE), "t-hooks")
    rows = [row for row in workflow.history("t-hooks") if not row.node_id.startswith("choose")]
    begun = sorted(
        (node, attempt, key) for event, node, attempt, key in recorder.seen if event == "begin"
    )
    assert begun == sorted((row.node_id, row.attempt, row.input_hash) for row in rows)
    ended = sorted(
        (node, attempt, how) for event, node, attempt, how in recorder.seen if event == "end"
    )
    assert ended == sorted((row.node_id, row.attempt, (row.status, row.reused)) for row in rows)
    assert ("writer", 2, ("failed", False)) in ended, "a failed attempt ends failed"
    tools = {(node, kind) for event, node, _, kind in recorder.seen if event == "tool"}
    assert ("research", "read") in tools, "research's reads are its attempt's tool calls"
    assert TRACED_ATTEMPT.get() is None, "no attempt stays current after the run"


def test_a_run_context_traces_nothing_unless_given_a_trace(
    workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    assert workflow.context.trace is UNTRACED
    assert UNTRACED.attempt(StepInfo("t", "writer", 1, 1), _row()) is UNTRACED


def _row() -> NodeRun:
    return NodeRun(
        task_version=1,
        node_id="writer",
        attempt=1,
        status="running",
        input_hash="0" * 64,
        started_at=datetime.now(UTC),
    )
