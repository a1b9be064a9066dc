"""A write tool runs only confirmed, and at most once per thread and call id."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.storage.artifacts import FilesystemArtifactStore
from app.storage.ledger.sqlite import SqliteRunLedger
from graphs import StepInfo
from graphs.errors import MissingContext
from graphs.tools import Toolbox, ToolEnv, ToolSpec
from tests.extension_tools import EchoInput, EchoOutput

FIXED = datetime(2026, 1, 1, tzinfo=UTC)


class CountingWrite:
    """A write tool's code that counts how often it ran."""

    def __init__(self) -> None:
        self.ran = 0

    def __call__(self, args: EchoInput, env: ToolEnv) -> EchoOutput:
        self.ran += 1
        return EchoOutput(text=args.text * args.times)


def toolbox(tmp_path: Path, code: CountingWrite, ledger: SqliteRunLedger | None) -> Toolbox:
    spec = ToolSpec("publish", EchoInput, EchoOutput, kind="write", timeout_seconds=None, run=code)
    step = StepInfo(thread_id="t-w", node="publish", step=4, task_version=1)
    env = ToolEnv(store=FilesystemArtifactStore(tmp_path / "a"), step=step, clock=lambda: FIXED)
    return Toolbox(node="publish", tools=(spec,), env=env, effects=ledger)


def test_a_confirmed_write_runs_once_and_a_repeat_is_answered_from_its_record(
    tmp_path: Path,
) -> None:
    code = CountingWrite()
    ledger = SqliteRunLedger(tmp_path / "ledger.db")
    first = toolbox(tmp_path, code, ledger).call(
        "publish", {"text": "ab", "times": 2}, call_id="pub-1", confirmed=True
    )
    assert (code.ran, first.output, first.error) == (1, EchoOutput(text="abab"), None)
    again = toolbox(tmp_path, code, SqliteRunLedger(tmp_path / "ledger.db"))  # a new process
    repeat = again.call("publish", {"text": "ab", "times": 2}, call_id="pub-1", confirmed=True)
    assert code.ran == 1, "the recorded call did not run again"
    assert (repeat.output, repeat.receipt) == (first.output, first.receipt)
    assert again.spent == 0, "a call answered from its record is not charged again"
    other = again.call("publish", {"text": "ab"}, call_id="pub-2", confirmed=True)
    assert (code.ran, other.output) == (2, EchoOutput(text="ab"))


def test_an_unconfirmed_write_never_runs(tmp_path: Path) -> None:
    code = CountingWrite()
    answer = toolbox(tmp_path, code, SqliteRunLedger(tmp_path / "l.db")).call(
        "publish", {"text": "x"}, call_id="pub-1"
    )
    assert answer.error is not None and answer.error.code == "permission_denied"
    assert code.ran == 0


def test_a_write_without_a_ledger_to_record_it_is_refused_before_it_runs(tmp_path: Path) -> None:
    code = CountingWrite()
    with pytest.raises(MissingContext, match="a write must be recorded to run at most once"):
        toolbox(tmp_path, code, None).call("publish", {"text": "x"}, confirmed=True)
    assert code.ran == 0
