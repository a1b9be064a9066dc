"""The crash loop: SIGKILL the real CLI at random moments, resume until it finishes.

The kill matrix (test_durability.py) kills at every named fault point; this kills wherever
the clock lands, several times a trial, through the same implementation as the benchmark
(bench/p6_crash_loop.py), so the test and the measured figures cannot drift apart. Its
processes are forked from a warm one (``tests.forked``): each is still a process of its
own, SIGKILLed, but its kill moments fall in the command's work, where the benchmark's
spawned processes spend half of theirs importing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO

import pytest

from bench import p6_crash_loop
from tests import forked
from tests.backends import BACKENDS, require_postgres

TRIALS = 30
"""Trials per backend, each a fresh store killed up to MAX_KILLS times at random moments."""
SEED = p6_crash_loop.DEFAULT_SEED
"""Fixed, so a failure names a seed that draws the same kill moments again."""


def start_forked(
    args: Sequence[str], env: dict[str, str], cwd: Path, stderr: IO[str]
) -> forked.Forked:
    """The CLI forked from a warm process: the kills land in its work, not in imports."""
    return forked.start(args, env=env, cwd=cwd, stderr=stderr)


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend",
    [pytest.param(kind, marks=getattr(pytest.mark, kind)) for kind in BACKENDS],
)
def test_random_sigkills_then_resume_complete_every_trial_identically_and_only_once(
    backend: str, tmp_path: Path
) -> None:
    server = require_postgres() if backend == "postgres" else None
    summary = p6_crash_loop.crash_loop(
        backend,
        trials=TRIALS,
        seed=SEED,
        jobs=p6_crash_loop.JOBS,
        max_kills=p6_crash_loop.MAX_KILLS,
        server=server,
        root=tmp_path,
        start=start_forked,
    )
    p6_crash_loop.print_summaries([summary], p6_crash_loop.MAX_KILLS, p6_crash_loop.JOBS)
    failed = "\n".join(p6_crash_loop.failure_lines(summary))
    totals = summary.totals()
    assert len(summary.trials) == TRIALS
    assert totals["completed"] == TRIALS, f"seed {SEED}:\n{failed}"
    assert totals["mismatch"] == 0, f"seed {SEED}:\n{failed}"
    assert totals["duplicate_runs"] == 0, f"seed {SEED}:\n{failed}"
    assert totals["duplicate_revisions"] == 0, f"seed {SEED}:\n{failed}"
    assert totals["kills_mid_run"] > 0, "no kill landed after start-up: nothing was tested"
