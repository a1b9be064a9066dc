"""The fast loop stays in one process: a test that starts one says so with a mark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.routes import unwalked


def test_an_unmarked_test_that_starts_a_process_fails_naming_the_mark() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.e2e"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.e2e
def test_a_test_marked_e2e_may_start_processes() -> None:
    assert subprocess.run([sys.executable, "-c", "pass"], check=True).returncode == 0


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.e2e
def test_a_run_with_routes_walked_fails_naming_each_edge_its_tests_did_not_walk() -> None:
    """``make check`` and ``make test`` pass ``--routes-walked``: a test file that runs no
    thread walks no edge, so the session fails, each edge named with its router."""
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    gated = subprocess.run(
        [*args, "--routes-walked", "-m", "not e2e", "tests/test_fast_loop.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert gated.returncode == 1, gated.stdout
    edges = unwalked(set())  # every route between two nodes, each named with its router
    assert edges, "the graph has routes between nodes"
    for line in edges:
        assert f"FAILED (--routes-walked) {line}" in gated.stdout, line
    assert "passed" in gated.stdout and "failed" not in gated.stdout
    plain = subprocess.run(
        [*args, "-m", "not e2e", "tests/test_fast_loop.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plain.returncode == 0, plain.stdout
