"""Run every benchmark in turn: ``python -m bench [--quick] [--repeats N]``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bench import (
    p1_overhead,
    p2_checkpoint_bytes,
    p3_context_growth,
    p4_resume_cost,
    p5_scaleout,
)
from bench._common import Row, machine_description

BENCHMARKS = (p1_overhead, p2_checkpoint_bytes, p3_context_growth, p4_resume_cost, p5_scaleout)


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Print the machine, then each benchmark's tables; returns every row."""
    args = list(sys.argv[1:] if argv is None else argv)
    print("\n".join(machine_description()))
    rows: list[Row] = []
    for benchmark in BENCHMARKS:
        rows += benchmark.main(args)
    print("\nSummary")
    for row in rows:
        if row.ok is None:
            continue
        if row.max_ratio is not None:
            value = f"{row.ratio:.2f}x"
        else:
            value = f"{row.candidate_name} {row.candidate.median:,.0f} {row.unit}"
        print(f"{row.bench} {row.case}: {value} (target {row.target_text}) {row.verdict}")
    return rows


if __name__ == "__main__":
    main()
