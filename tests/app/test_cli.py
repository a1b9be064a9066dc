"""The ``handoff`` command, run as a real subprocess against real files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from tests import forked
from tests.conftest import OBJECTIVE, passes


def handoff(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    return forked.run(args, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One completed run (the README's main job), shared by the read-only tests."""
    cwd = tmp_path_factory.mktemp("cli")
    result = handoff(cwd, "run", OBJECTIVE, "--thread", "t-cli")
    assert result.returncode == ExitCode.COMPLETED, result.stderr
    assert "thread: t-cli" in result.stdout
    assert "artifact://article/t-cli-article" in result.stdout
    assert "handoff show t-cli" in result.stdout
    return cwd


@pytest.mark.e2e
def test_run_prints_progress_per_node_on_stderr(finished: Path) -> None:
    result = handoff(finished, "run", OBJECTIVE, "--thread", "t-cli-2")
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    for node in ("research", "writer", "reviewer", "finalize"):
        assert any(line.startswith(f"{node}: ") for line in lines), node
    [review] = [line for line in lines if line.startswith("reviewer: ")]
    assert "verdict approved" in review, review


@pytest.mark.e2e
def test_run_json_prints_a_run_outcome(finished: Path) -> None:
    result = handoff(finished, "run", OBJECTIVE, "--json")
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["kind"] == "run_outcome"
    assert outcome["state"] == "TASK_STATE_COMPLETED"
    assert outcome["article"]["uri"].startswith("artifact://article/")


@pytest.mark.e2e
def test_show_prints_the_article(finished: Path) -> None:
    result = handoff(finished, "show", "t-cli")
    assert result.returncode == 0
    assert result.stdout.startswith("# Explain how the Rosetta Stone")
    assert "[claim-" in result.stdout


@pytest.mark.e2e
def test_status_history_and_threads(finished: Path) -> None:
    status = handoff(finished, "status", "t-cli", "--json")
    assert status.returncode == 0
    assert json.loads(status.stdout)["outcome"]["result_status"] == "completed"
    history = handoff(finished, "history", "t-cli", "--json")
    path = ("research", "join_research", "writer", "reviewer", "finalize")
    assert passes([run["node_id"] for run in json.loads(history.stdout)], *path) == [*path]
    table = handoff(finished, "history", "t-cli")
    assert "research" in table.stdout and "succeeded" in table.stdout
    assert "OfflineWriterAgent" in table.stdout, "the audit names who did the work"
    threads = handoff(finished, "threads")
    assert "t-cli" in threads.stdout.split()


@pytest.mark.e2e
def test_unknown_thread_exits_not_found_with_one_line(finished: Path) -> None:
    result = handoff(finished, "status", "t-nope")
    assert result.returncode == ExitCode.NOT_FOUND
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "t-nope" in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.e2e
def test_invalid_input_exits_usage_naming_the_field(tmp_path: Path) -> None:
    result = handoff(tmp_path, "run", OBJECTIVE, "--max-words", "3")
    assert result.returncode == ExitCode.USAGE
    assert "max_words" in result.stderr and "greater than or equal to 10" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.e2e
def test_set_gives_any_task_field_by_its_path_and_refuses_one_the_task_lacks(
    tmp_path: Path,
) -> None:
    waiting = handoff(tmp_path, "run", OBJECTIVE, "--set", "policies.require_approval=true")
    assert waiting.returncode == ExitCode.WAITING_FOR_HUMAN, waiting.stderr
    unknown = handoff(tmp_path, "run", OBJECTIVE, "--set", "policies.editorial_gate=true")
    assert unknown.returncode == ExitCode.USAGE
    assert "policies.editorial_gate" in unknown.stderr and "Traceback" not in unknown.stderr
    bare = handoff(tmp_path, "run", OBJECTIVE, "--set", "policies")
    assert bare.returncode == ExitCode.USAGE and "expected KEY=VALUE" in bare.stderr


@pytest.mark.e2e
def test_a_corpus_answering_nothing_exits_partial_naming_the_question(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "bees.md").write_text("Honey bees dance to share where flowers are.\n")
    result = handoff(tmp_path, "run", "Describe quantum chromodynamics", "--corpus", str(corpus))
    assert result.returncode == ExitCode.PARTIAL
    assert "INSUFFICIENT_EVIDENCE" in result.stdout and "quantum chromodynamics" in result.stdout


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("resume", "t-nope"), ExitCode.NOT_FOUND),
        (("show", "t-nope"), ExitCode.NOT_FOUND),
        (("run", OBJECTIVE, "--max-words", "3"), ExitCode.USAGE),
        (("schema", "NoSuchContract"), ExitCode.USAGE),
    ],
    ids=["resume", "show", "run", "schema"],
)
def test_debug_adds_the_traceback_and_keeps_the_exit_code(
    tmp_path: Path, args: tuple[str, ...], code: ExitCode
) -> None:
    plain = handoff(tmp_path, *args)
    debug = handoff(tmp_path, "--debug", *args)
    assert plain.returncode == debug.returncode == code, debug.stderr
    assert "Traceback" not in plain.stderr
    assert "Traceback (most recent call last)" in debug.stderr
    error_line = plain.stderr.strip().splitlines()[-1]
    assert error_line.startswith("error: ")
    assert debug.stderr.strip().splitlines()[-1] == error_line


def test_every_help_page_names_values_plainly() -> None:
    """No <bool>, <list[Path]> or {objective}: placeholders a person can read (typer < 0.27)."""
    import typer.main
    from typer.testing import CliRunner

    from app.cli import cli

    group = typer.main.get_command(cli)
    assert isinstance(group, typer.main.TyperGroup)
    runner = CliRunner()
    for name in group.commands:
        page = runner.invoke(cli, [name, "--help"], env={"COLUMNS": "120"}).output
        assert "Usage: " in page, name
        for placeholder in ("<bool>", "<str>", "<int>", "<list[", "<path>", "{"):
            assert placeholder not in page, f"handoff {name} --help shows {placeholder}"


@pytest.mark.e2e
def test_revise_runs_the_next_task_version_and_names_a_field_it_refuses(tmp_path: Path) -> None:
    ran = handoff(tmp_path, "run", OBJECTIVE, "--thread", "t-cli-rev", "--max-words", "400")
    assert ran.returncode == ExitCode.COMPLETED, ran.stderr
    revised = handoff(tmp_path, "revise", "t-cli-rev", "--max-words", "150", "--reason", "short")
    assert revised.returncode == ExitCode.COMPLETED, revised.stderr
    assert "revision 2" in revised.stdout
    assert "task version: 2" in handoff(tmp_path, "status", "t-cli-rev").stdout
    history = handoff(tmp_path, "history", "t-cli-rev")
    assert "reused (task v1)" in history.stdout and "re-run for task v2" in history.stdout
    refused = handoff(tmp_path, "revise", "t-cli-rev", "--drop-section", "Nope", "--reason", "x")
    assert refused.returncode == ExitCode.USAGE, refused.stdout
    assert "drop_sections[0]: 'Nope' is not required" in refused.stderr
