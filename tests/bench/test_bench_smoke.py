"""Each benchmark runs at its tiny --quick size and yields rows of positive numbers.

No timing is asserted: this only keeps the scripts from rotting as the code changes.
P5 needs PostgreSQL: it is skipped (loudly) when the test server is unreachable, and
fails instead when HANDOFF_REQUIRE_POSTGRES=1 (tests/backends.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from bench import (
    p1_overhead,
    p2_checkpoint_bytes,
    p3_context_growth,
    p4_resume_cost,
    p5_scaleout,
)
from bench._common import Row
from tests.backends import require_postgres

BENCHMARKS: dict[str, Callable[[Sequence[str] | None], list[Row]]] = {
    "p1_overhead": p1_overhead.main,
    "p2_checkpoint_bytes": p2_checkpoint_bytes.main,
    "p3_context_growth": p3_context_growth.main,
    "p4_resume_cost": p4_resume_cost.main,
    "p5_scaleout": p5_scaleout.main,
}
NEEDS_POSTGRES = {"p5_scaleout"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[pytest.mark.postgres] if name in NEEDS_POSTGRES else [])
        for name in sorted(BENCHMARKS)
    ],
)
def test_quick_run_yields_rows_of_positive_numbers(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--quick"]
    if name in NEEDS_POSTGRES:
        args += ["--postgres-url", require_postgres()]  # skips, or fails when required
    rows = BENCHMARKS[name](args)
    assert rows, f"{name} returned no rows"
    for row in rows:
        for measure in (row.baseline, row.candidate):
            assert measure.n >= 1
            assert 0 < measure.low <= measure.median <= measure.high
        assert row.ratio > 0
        assert row.verdict in {"PASS", "MISS", "-"}
    printed = capsys.readouterr().out
    assert "\n-----" in printed, "a table was printed"
