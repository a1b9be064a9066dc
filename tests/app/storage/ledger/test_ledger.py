"""The audit ledger behaves the same on every database, across processes sharing one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

import pytest

from app.storage.ledger import RunLedgerBackend
from app.storage.ledger.memory import MemoryRunLedger
from app.storage.ledger.postgres import PostgresRunLedger
from app.storage.ledger.sqlite import SqliteRunLedger
from contracts import NodeRun, Usage
from graphs.budget import Tally, tally_of
from tests.backends import postgres_schema
from tests.contracts.examples import EXAMPLES

Opener = Callable[[], RunLedgerBackend]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def open_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens ledgers on one database: each one stands for another process (memory: one)."""
    opened: list[RunLedgerBackend] = []
    if request.param == "memory":
        shared = MemoryRunLedger()
        yield lambda: shared
        return
    with postgres_schema() if request.param == "postgres" else nullcontext("") as url:

        def opener() -> RunLedgerBackend:
            ledger: RunLedgerBackend = (
                PostgresRunLedger(url) if url else SqliteRunLedger(tmp_path / "handoff.db")
            )
            opened.append(ledger)
            return ledger

        yield opener
        for ledger in opened:
            ledger.close()


def a_run(status: str = "running", input_hash: str = "a" * 64) -> NodeRun:
    return EXAMPLES[NodeRun].model_copy(update={"status": status, "input_hash": input_hash})


def test_records_finishes_and_finds_results(open_ledger: Opener) -> None:
    ledger = open_ledger()
    assert ledger.runs("t") == [] and ledger.result("t", "writer", "a" * 64) is None
    first = ledger.start("t", a_run())
    second = ledger.start("t", a_run(input_hash="b" * 64))
    assert (first, second) == (1, 2)
    assert ledger.start("other", a_run()) == 1, "numbers are per thread"
    ledger.finish("t", first, a_run("succeeded"), result='{"draft": 1}')
    assert ledger.result("t", "writer", "a" * 64) == '{"draft": 1}'
    assert ledger.result("t", "writer", "b" * 64) is None, "still running"
    assert [run.status for run in ledger.runs("t")] == ["succeeded", "running"]
    if not isinstance(ledger, MemoryRunLedger):
        with pytest.raises(LookupError, match="no ledger entry 9 for thread 't'"):
            ledger.finish("t", 9, a_run("succeeded"))


def test_abandon_marks_only_running_attempts_failed(open_ledger: Opener) -> None:
    ledger = open_ledger()
    done = ledger.start("t", a_run())
    ledger.finish("t", done, a_run("succeeded"), result="{}")
    ledger.start("t", a_run())
    assert open_ledger().abandon_running("t", "the process died") == 1
    runs = ledger.runs("t")
    assert [run.status for run in runs] == ["succeeded", "failed"]
    assert runs[1].error is not None and runs[1].error.detail == "the process died"
    assert ledger.abandon_running("t", "again") == 0


def test_concurrent_starts_from_many_ledgers_take_distinct_numbers(open_ledger: Opener) -> None:
    ledgers = [open_ledger() for _ in range(4)]
    with ThreadPoolExecutor(8) as pool:
        seqs = list(pool.map(lambda i: ledgers[i % 4].start("t", a_run()), range(40)))
    assert sorted(seqs) == list(range(1, 41))
    assert len(ledgers[0].runs("t")) == 40


def test_a_tally_is_what_the_records_sum_to_without_reading_them(open_ledger: Opener) -> None:
    """Each database sums the rows itself; the sums are those of graphs.budget.tally_of."""
    ledger = open_ledger()
    rows = [  # node, input, tool calls, reused, status
        ("writer", "a", 1, False, "succeeded"),
        ("research", "c", 3, False, "succeeded"),
        ("join_research", "d", 0, False, "succeeded"),
        ("research", "b", 2, False, "failed"),
        ("research", "b", 4, True, "succeeded"),
        ("research", "c", 5, False, "succeeded"),
        ("check_spans", "b", 7, False, "running"),
    ]
    for node, key, calls, reused, status in rows:
        record = a_run(status, key * 64).model_copy(
            update={
                "node_id": node,
                "usage": Usage(tool_calls=calls, tokens=10 * calls),
                "reused": reused,
            }
        )
        seq = ledger.start("t", record.model_copy(update={"status": "running"}))
        if status != "running":
            ledger.finish("t", seq, record)
    runs = ledger.runs("t")
    for node, key, fanned in [
        ("research", "b", ("research",)),
        ("research", "b", ("research", "check_spans")),
        ("writer", "a", ()),
        ("check_spans", "b", ("check_spans",)),
        ("nobody", "e", ("nobody",)),
    ]:
        expected = tally_of(runs, node, key * 64, fanned)
        assert ledger.tally("t", node, key * 64, fanned) == expected, (node, fanned)
    assert ledger.tally("t", "research", "b" * 64, ("research", "check_spans")) == Tally(
        spent=Usage(tool_calls=18, tokens=180),
        attempts=2,
        before_fan_out=Usage(tool_calls=4, tokens=40),
        own_since=Usage(tool_calls=2, tokens=20),
    )
    assert ledger.tally("empty", "writer", "a" * 64, ("writer",)) == Tally()
