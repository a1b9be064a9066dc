"""The fast loop stays in one process: a test that starts one says so with a mark."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_an_unmarked_test_that_starts_a_process_fails_naming_the_mark() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.e2e"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.e2e
def test_a_test_marked_e2e_may_start_processes() -> None:
    assert subprocess.run([sys.executable, "-c", "pass"], check=True).returncode == 0
