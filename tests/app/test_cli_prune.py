"""``handoff prune`` on real threads, on SQLite and PostgreSQL: what it prints, what it changes."""

from __future__ import annotations

import json
import os
import re

import pytest
from typer.testing import CliRunner, Result

from app.cli import cli
from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from contracts import TaskState
from tests.backends import backend_env
from tests.conftest import OBJECTIVE


@pytest.fixture
def threads(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Two ended threads, and the command's environment naming their database."""
    with Workflow(settings) as workflow:
        for thread in ("older", "newer"):
            assert workflow.run(OBJECTIVE, thread).state == TaskState.COMPLETED
    for name in [name for name in os.environ if name.startswith("HANDOFF_")]:
        monkeypatch.delenv(name)
    for name, value in backend_env(settings).items():
        if name.startswith("HANDOFF_"):
            monkeypatch.setenv(name, value)
    return ["older", "newer"]


def handoff(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def listed(settings: Settings) -> list[str]:
    with Workflow(settings, read_only=True) as workflow:
        return workflow.threads()


def test_a_dry_run_lists_each_thread_with_its_age_and_bytes_and_the_total_and_keeps_them(
    settings: Settings, threads: list[str]
) -> None:
    dry = handoff("prune", "--older-than", "0s", "--dry-run")
    assert dry.exit_code == 0, dry.output
    lines = dry.stdout.splitlines()
    rows = [re.fullmatch(r"would prune (\S+)  age \d+s  (\d+) bytes", line) for line in lines[:-1]]
    assert [row[1] for row in rows if row] == threads
    total = sum(int(row[2]) for row in rows if row)
    assert lines[-1] == f"total: 2 threads, {total} bytes (dry run: nothing was changed)"
    assert listed(settings) == sorted(threads)


def test_keep_last_keeps_the_newest_and_json_reports_what_went(
    settings: Settings, threads: list[str]
) -> None:
    pruned = handoff("prune", "--older-than", "0s", "--keep-last", "1", "--json")
    assert pruned.exit_code == 0, pruned.output
    report = json.loads(pruned.stdout)
    assert [thread["thread_id"] for thread in report["pruned"]] == ["older"]
    assert report["total_bytes"] == report["pruned"][0]["bytes"] > 0
    assert not report["dry_run"] and report["kept"] == []
    assert listed(settings) == ["newer"]
    young = handoff("prune", "--older-than", "1h")
    assert young.stdout.splitlines() == ["total: 0 threads, 0 bytes"]
    assert listed(settings) == ["newer"]


@pytest.mark.parametrize("given", ["30 days", "30", "-1d"])
def test_a_bad_duration_is_one_line_naming_the_flag_and_the_form_exit_2(
    settings: Settings, threads: list[str], given: str
) -> None:
    refused = handoff("prune", "--older-than", given)
    assert refused.exit_code == ExitCode.USAGE
    assert refused.stderr.splitlines() == [
        f"error: --older-than: invalid duration {given!r}; expected whole numbers of d (days), "
        "h (hours), m (minutes) or s (seconds), e.g. 30d, 12h, 90m or 1h30m"
    ]
    assert listed(settings) == sorted(threads)
