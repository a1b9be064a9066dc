"""Shared helpers: interleaved timing, summary statistics, result rows, tables, scratch dirs."""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow

OBJECTIVE = "Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs"
QUESTIONS = ("Who found the Rosetta Stone?", "What scripts does the stone carry?")
"""Sub-questions for runs that exercise research's parallel branches (one per question)."""
"""The objective every benchmark researches (the README's example, on the bundled corpus)."""

NOISY_SPREAD = 0.10
"""A timing whose IQR is more than this share of its median is flagged as noisy."""

LIBRARIES = (
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langchain-core",
    "pydantic",
    "bm25s",
)


@dataclass(frozen=True)
class Measure:
    """A summary of repeated samples: median, quartiles and range. Exact values have n=1."""

    median: float
    q1: float
    q3: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Measure:
        """Summarise samples (at least one)."""
        if not samples:
            raise ValueError("no samples to summarise")
        ordered = sorted(samples)
        if len(ordered) == 1:
            q1 = q3 = ordered[0]
        else:
            q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        return cls(
            median=statistics.median(ordered),
            q1=q1,
            q3=q3,
            low=ordered[0],
            high=ordered[-1],
            n=len(ordered),
        )

    @classmethod
    def exact(cls, value: float) -> Measure:
        """A deterministic value (bytes, characters): no spread."""
        return cls.of([value])

    @property
    def spread(self) -> float:
        """IQR as a share of the median (0 for exact values)."""
        return (self.q3 - self.q1) / self.median if self.median else 0.0

    @property
    def noisy(self) -> bool:
        """Whether the IQR exceeds NOISY_SPREAD of the median."""
        return self.n > 1 and self.spread > NOISY_SPREAD


@dataclass(frozen=True)
class Row:
    """One comparison: a baseline, a candidate, their ratio and the target it is held to.

    ``ratio`` is always candidate ÷ baseline. What the two sides are depends on the
    benchmark (bare graph vs ours, round 1 vs round N, short vs long history). A target is
    either ``max_ratio`` or, for absolute targets, a ``target`` text with its ``passed``.
    """

    bench: str
    case: str
    unit: str
    baseline_name: str
    baseline: Measure
    candidate_name: str
    candidate: Measure
    max_ratio: float | None = None
    target: str = ""
    passed: bool | None = None

    @classmethod
    def of(
        cls,
        bench: str,
        case: str,
        baseline: tuple[str, Measure | Sequence[float]],
        candidate: tuple[str, Measure | Sequence[float]],
        *,
        max_ratio: float | None = None,
        unit: str = "s",
    ) -> Row:
        """A comparison of two named sides, each given as its samples or their measure."""

        def measured(side: Measure | Sequence[float]) -> Measure:
            return side if isinstance(side, Measure) else Measure.of(side)

        return cls(
            bench=bench,
            case=case,
            unit=unit,
            baseline_name=baseline[0],
            baseline=measured(baseline[1]),
            candidate_name=candidate[0],
            candidate=measured(candidate[1]),
            max_ratio=max_ratio,
        )

    @property
    def ratio(self) -> float:
        """Candidate median ÷ baseline median."""
        return self.candidate.median / self.baseline.median

    @property
    def target_text(self) -> str:
        """The target as printed, '-' when the row is informational."""
        if self.max_ratio is not None:
            return f"<= {self.max_ratio:g}x"
        return self.target or "-"

    @property
    def ok(self) -> bool | None:
        """Whether the target is met; None when the row has no target."""
        if self.max_ratio is not None:
            return self.ratio <= self.max_ratio
        return self.passed

    @property
    def verdict(self) -> str:
        """PASS, MISS, or '-' when the row has no target."""
        if self.ok is None:
            return "-"
        return "PASS" if self.ok else "MISS"


def timed(action: Callable[[], object]) -> float:
    """Seconds one call of ``action`` takes."""
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def interleaved(
    cases: dict[str, Callable[[int], float]], *, repeats: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Run every case ``warmup + repeats`` times, alternating between cases.

    Each case is called with the iteration number and returns the seconds it measured
    itself (so it can keep setup out of the timing). The order of the cases is reversed
    on every other iteration, so drift (caches, file growth, CPU clocks) hits all sides
    alike. The garbage collector runs before each sample, outside the timing.
    """
    names = list(cases)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for iteration in range(warmup + repeats):
        order = names if iteration % 2 == 0 else names[::-1]
        for name in order:
            gc.collect()
            seconds = cases[name](iteration)
            if iteration >= warmup:
                samples[name].append(seconds)
    return samples


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary folder for SQLite files and artifacts, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=f"handoff-{prefix}-") as folder:
        yield Path(folder)


def workflow_settings(root: Path, name: str = "ours") -> Settings:
    """Settings that keep a Workflow's SQLite file and artifacts under ``root``."""
    data = root / name
    return Settings(
        data_dir=data,
        database_url=f"sqlite:///{data / 'handoff.db'}",
        artifact_dir=data / "artifacts",
        corpus=[BUNDLED_CORPUS],
    )


@contextmanager
def scratch_workflow(prefix: str) -> Iterator[Workflow]:
    """A Workflow on a scratch folder of its own, for a benchmark that needs nothing beside it."""
    with scratch_dir(prefix) as root, Workflow(workflow_settings(root)) as workflow:
        yield workflow


def parse_args(
    argv: Sequence[str] | None, description: str, *, repeats: int, quick_repeats: int
) -> argparse.Namespace:
    """The options every benchmark takes: ``--quick`` (tiny sizes) and ``--repeats``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes and few repeats (the smoke test)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"timed repeats per side (default {repeats}, {quick_repeats} with --quick)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.repeats is None:
        args.repeats = quick_repeats if args.quick else repeats
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A plain, aligned text table (numbers right-aligned)."""
    widths = [len(header) for header in headers]
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = []
        for cell, width in zip(cells, widths, strict=True):
            numeric = cell[:1].isdigit() or cell[:1] in "-+." and cell[1:2].isdigit()
            parts.append(cell.rjust(width) if numeric else cell.ljust(width))
        return "  ".join(parts).rstrip()

    print(f"\n{title}")
    print(line(headers))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print(line(row))


def print_rows(title: str, rows: Sequence[Row]) -> None:
    """The standard summary table of comparison rows, each in the unit it states."""
    headers = ["case", "baseline", "median", "IQR", "candidate", "median", "IQR", "ratio"]
    headers += ["target", "verdict"]
    table = []
    for row in rows:
        fmt = unit_format(row.unit)
        table.append(
            [
                row.case,
                row.baseline_name,
                fmt(row.baseline.median),
                iqr_text(row.baseline, fmt),
                row.candidate_name,
                fmt(row.candidate.median),
                iqr_text(row.candidate, fmt),
                f"{row.ratio:.2f}x",
                row.target_text,
                row.verdict,
            ]
        )
    print_table(title, headers, table)
    noisy: dict[str, None] = {}
    for row in rows:
        for name, measure in (
            (row.baseline_name, row.baseline),
            (row.candidate_name, row.candidate),
        ):
            if measure.noisy:
                noisy[f"{row.case}: {name}"] = None
    if noisy:
        print(f"noisy (IQR > {NOISY_SPREAD:.0%} of median): {', '.join(noisy)}")


def iqr_text(measure: Measure, fmt: Callable[[float], str]) -> str:
    """The IQR as 'q1-q3' (with its share of the median), or '-' for an exact value."""
    if measure.n == 1:
        return "-"
    return f"{fmt(measure.q1)}-{fmt(measure.q3)} ({measure.spread:.0%})"


def ms(seconds: float) -> str:
    """Seconds as milliseconds."""
    return f"{seconds * 1000:.2f} ms"


def size(count: float) -> str:
    """A byte count with a binary unit."""
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024 or unit == "MiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def chars(count: float) -> str:
    """A character count."""
    return f"{count:,.0f}"


def unit_format(unit: str) -> Callable[[float], str]:
    """How a value in ``unit`` is printed; a unit without its own format prints plainly.

    Read from the row, so a table cannot print a row in another unit than it was measured in.
    """
    formats: dict[str, Callable[[float], str]] = {"s": ms, "bytes": size, "chars": chars}
    return formats.get(unit, lambda value: f"{value:g} {unit}")


def machine_description() -> list[str]:
    """What the figures were measured on: CPU, cores, memory, OS, Python, libraries."""
    lines = [f"cpu: {_cpu_model()} ({os.cpu_count()} logical cores)"]
    memory = _memory_total()
    if memory:
        lines.append(f"memory: {memory}")
    lines.append(f"os: {platform.system()} {platform.release()} ({platform.machine()})")
    lines.append(f"python: {platform.python_implementation()} {platform.python_version()}")
    versions = []
    for name in LIBRARIES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    lines.append("libraries: " + ", ".join(versions))
    import sqlite3

    lines.append(f"sqlite: {sqlite3.sqlite_version}")
    return lines


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_total() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                kib = int(line.split()[1])
                return f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError):
        pass
    return ""
