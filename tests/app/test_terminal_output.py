"""Escape sequences in user text reach the terminal as visible text, never as raw bytes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.table import Table

from app.cli.terminal import TerminalConsole, visible
from app.exit_codes import ExitCode
from tests.cli import handoff

HOSTILE = "Explain how the Rosetta Stone was deciphered \x1b]0;pwned\x07 \x1b[2J \x9b31m"
RAW = ("\x1b", "\x07", "\x9b")


def test_visible_writes_control_characters_as_escapes_and_keeps_lines() -> None:
    assert visible("a\x1b[2Jb\x07\x9b\x7f") == "a\\x1b[2Jb\\x07\\x9b\\x7f"
    assert visible("line\n\tindented\r") == "line\n\tindented\\x0d"
    assert visible("one\nline\t", lines=False) == "one\\x0aline\\x09"
    assert visible("Ä é ✓ 漢字") == "Ä é ✓ 漢字", "printable text is left alone"


def test_the_console_escapes_user_text_but_keeps_its_own_colours() -> None:
    buffer = io.StringIO()
    console = TerminalConsole(
        file=buffer, force_terminal=True, color_system="standard", highlight=False
    )
    console.print("[green]ok[/green]", HOSTILE, markup=True)
    table = Table("objective")
    table.add_row(HOSTILE)
    console.print(table)
    console.print_json(json.dumps({"objective": "\x1b[2J"}))
    written = buffer.getvalue()
    assert "\x1b[32m" in written, "rich's own styling still reaches the terminal"
    assert "\x1b[2J" not in written and "\x1b]0;" not in written and "\x07" not in written
    assert "\\x1b[2J" in written and "\\x1b]0;pwned" in written


@pytest.mark.e2e
def test_no_command_writes_a_raw_escape_sequence_from_user_text(tmp_path: Path) -> None:
    results = {
        "run": handoff("run", HOSTILE, "--thread", "t-esc", "--require-approval", data_dir=tmp_path)
    }
    assert results["run"].returncode == ExitCode.WAITING_FOR_HUMAN, results["run"].stderr
    results["status"] = handoff("status", "t-esc", data_dir=tmp_path)
    results["resume"] = handoff("resume", "t-esc", "--approve", data_dir=tmp_path)
    assert results["resume"].returncode == ExitCode.COMPLETED, results["resume"].stderr
    for command in (["show", "t-esc"], ["history", "t-esc"], ["threads"]):
        results[command[0]] = handoff(*command, data_dir=tmp_path)
    for name, result in results.items():
        for raw in RAW:
            assert raw not in result.stdout + result.stderr, (name, raw)
    assert "pwned" in results["status"].stdout, "the question quoting the objective is shown"
    heading = results["show"].stdout.split("\n", 1)[0]
    assert heading.rstrip() == "# Explain how the Rosetta Stone was deciphered", (
        "the published article holds no escape sequence: it was taken out, not shown"
    )
    assert "\n" in results["show"].stdout, "a multi-line artifact keeps its lines"


@pytest.mark.e2e
def test_handoff_eval_writes_a_cases_escape_sequences_as_visible_text(tmp_path: Path) -> None:
    corpus = Path(__file__).resolve().parents[2] / "evals" / "corpora" / "honeybees"
    case = {
        "id": "hostile",
        "corpus": str(corpus),
        "objective": f"Explain how honeybees tell nestmates where food is {HOSTILE}",
        "questions": [f"How does the waggle dance encode direction? {HOSTILE}"],
        "required_sections": [f"Direction {HOSTILE}"],
        "unanswerable": [f"What colour is the dance? {HOSTILE}"],
        "expect": "open",
    }
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([case]), encoding="utf-8")
    result = handoff("eval", "--cases", str(cases), data_dir=tmp_path / "data")
    assert result.returncode == ExitCode.FAILED, result.stderr
    for raw in RAW:
        assert raw not in result.stdout + result.stderr, raw
    assert "required section 'Direction " in result.stdout, "each defect is still shown"
    assert "\\x1b]0;pwned\\x07" in result.stdout, "the escape is shown as text"
