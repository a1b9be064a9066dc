"""Run every benchmark in turn: ``python -m bench [--quick] [--repeats N]``."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from collections.abc import Sequence
from types import ModuleType

import bench
from bench._common import Row, machine_description


def discover() -> tuple[ModuleType, ...]:
    """Every benchmark module, ``bench/p<N>_<name>.py``, in the order of N.

    Found rather than listed, so a new benchmark runs here and in the smoke test
    (tests/bench) as soon as its file exists, and no list can forget it.
    """
    found = [
        (int(match[1]), module.name)
        for module in pkgutil.iter_modules(bench.__path__)
        if (match := re.fullmatch(r"p(\d+)_\w+", module.name))
    ]
    return tuple(importlib.import_module(f"bench.{name}") for _, name in sorted(found))


BENCHMARKS = discover()


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
