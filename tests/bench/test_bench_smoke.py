"""Each benchmark runs at its tiny --quick size and yields rows of positive numbers.

No timing is asserted: this only keeps the scripts from rotting as the code changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from bench import p1_overhead, p2_checkpoint_bytes, p3_context_growth, p4_resume_cost
from bench._common import Row

BENCHMARKS: dict[str, Callable[[Sequence[str] | None], list[Row]]] = {
    "p1_overhead": p1_overhead.main,
    "p2_checkpoint_bytes": p2_checkpoint_bytes.main,
    "p3_context_growth": p3_context_growth.main,
    "p4_resume_cost": p4_resume_cost.main,
}


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_quick_run_yields_rows_of_positive_numbers(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = BENCHMARKS[name](["--quick"])
    assert rows, f"{name} returned no rows"
    for row in rows:
        for measure in (row.baseline, row.candidate):
            assert measure.n >= 1
            assert 0 < measure.low <= measure.median <= measure.high
        assert row.ratio > 0
        assert row.verdict in {"PASS", "MISS", "-"}
    printed = capsys.readouterr().out
    assert "\n-----" in printed, "a table was printed"
