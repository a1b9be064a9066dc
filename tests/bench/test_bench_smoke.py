"""Each benchmark runs at its tiny --quick size and yields rows of positive numbers.

No timing is asserted: this only keeps the scripts from rotting as the code changes.
P5 needs PostgreSQL: it is skipped (loudly) when the test server is unreachable, and
fails instead when HANDOFF_REQUIRE_POSTGRES=1 (tests/backends.py). P6 SIGKILLs CLI
processes, so its one-trial SQLite run is marked slow like the kill matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from bench.__main__ import BENCHMARKS as MODULES
from bench._common import Row
from tests.backends import require_postgres

BENCHMARKS: dict[str, Callable[[Sequence[str] | None], list[Row]]] = {
    module.__name__.removeprefix("bench."): module.main for module in MODULES
}
NEEDS_POSTGRES = {"p5_scaleout"}
MARKS = {"p5_scaleout": [pytest.mark.postgres], "p6_crash_loop": [pytest.mark.slow]}
EXTRA_ARGS = {"p6_crash_loop": ["--trials", "1", "--backend", "sqlite"]}


@pytest.mark.e2e
@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=MARKS.get(name, [])) for name in sorted(BENCHMARKS)],
)
def test_quick_run_yields_rows_of_positive_numbers(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--quick", *EXTRA_ARGS.get(name, [])]
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
