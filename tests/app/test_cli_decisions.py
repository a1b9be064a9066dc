"""The CLI's decision options: each way they fail to make one decision is one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.cli.decision_file import MAX_DECISION_FILE_BYTES, DecisionInputError
from app.cli.decision_hints import ACTIONS, PAUSES, action_hint, request_hints
from app.cli.decisions import DecisionFlags, parse_decision
from app.errors import InvalidDecision
from app.exit_codes import ExitCode, for_error
from app.settings import Settings
from app.workflow import Workflow
from contracts import HumanRequest, Question
from graphs.human import bound_id, pause_request
from graphs.ports import StepInfo
from tests.app.test_human_in_the_loop import handoff
from tests.backends import backend_env
from tests.cli import HANDOFF
from tests.conftest import OBJECTIVE


def paused(kind: str, step: int, question: str) -> HumanRequest:
    """What thread t-mine asks at the shipped pause ``kind``, as the CLI receives it."""
    at = StepInfo(thread_id="t-mine", node=kind, step=step, task_version=1)
    return pause_request(PAUSES[kind], at, question=question)


REQUEST = paused("approve_research", 2, "Approve?")


def file_with(tmp_path: Path, content: bytes) -> DecisionFlags:
    path = tmp_path / "decision.json"
    path.write_bytes(content)
    return DecisionFlags(decision_file=path)


def refused(flags: DecisionFlags, request: HumanRequest = REQUEST) -> str:
    with pytest.raises((DecisionInputError, InvalidDecision)) as caught:
        parse_decision(request, flags)
    assert for_error(caught.value) == ExitCode.USAGE
    message = caught.value.message
    assert "\n" not in message and len(message) < 400, message
    return message


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"approve", "not JSON (Expecting value at line 1 column 1)"),
        (b'{"action": "approve",}', "not JSON"),
        (b"", "not JSON"),
        (b'{"action": "appr\xe9ve"}', "not UTF-8 text (invalid byte at offset 16)"),
        (b"\xff\xfe{\x00}\x00", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 8 levels"),
        (b'{"a":' * 50 + b"1" + b"}" * 50, "nested deeper than 8 levels"),
        (b'["approve"]', "expected a JSON object (a HumanDecision), got an array"),
        (b'"approve"', "got a string"),
        (b"null", "got null"),
        (b'{"n": ' + b"9" * 5000 + b"}", "not usable JSON"),
        (b" " * (MAX_DECISION_FILE_BYTES + 1), "larger than 1048576 bytes"),
    ],
)
def test_a_decision_file_that_is_not_a_json_object_is_refused_naming_the_problem(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    assert problem in refused(file_with(tmp_path, content))


def test_a_missing_file_or_a_directory_is_refused_as_such(tmp_path: Path) -> None:
    assert "no such file" in refused(DecisionFlags(decision_file=tmp_path / "absent.json"))
    assert "is a directory" in refused(DecisionFlags(decision_file=tmp_path))


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        ({"approve": True, "reject": True}, "choose one action, not --approve and --reject"),
        ({"grant_round": True, "abort": True, "approve": True}, "--approve and --grant-round"),
        ({"reason": "why"}, "--reason needs an action"),
        ({"approve": True, "decision_file": Path("d.json")}, "cannot be combined with --approve"),
        ({"answers": ("q-1",)}, "--answer expects QID=TEXT, got 'q-1'"),
        ({"action": "no_such_action"}, "--action 'no_such_action' is no action; expected one of"),
        (
            {"action": "abort", "approve": True},
            "choose one action, not --approve and --action abort",
        ),
    ],
)
def test_contradictory_or_incomplete_flags_are_refused_before_any_thread_is_opened(
    flags: dict[str, Any], problem: str
) -> None:
    assert problem in refused(DecisionFlags(**flags))


def test_a_decision_file_must_name_its_request_it_is_never_completed_from_the_thread(
    tmp_path: Path,
) -> None:
    assert "interrupt_id: Field required" in refused(
        file_with(tmp_path, json.dumps({"action": "approve"}).encode())
    )


def test_a_decision_file_for_another_thread_names_that_thread(tmp_path: Path) -> None:
    other = {"interrupt_id": bound_id("approve-research-s2", "t-theirs"), "action": "approve"}
    message = refused(file_with(tmp_path, json.dumps(other).encode()))
    assert "is a decision for thread 't-theirs', not for this thread 't-mine'" in message


def test_an_unknown_field_with_an_odd_name_is_named_on_one_line(tmp_path: Path) -> None:
    odd = {"interrupt_id": REQUEST.interrupt_id, "action": "approve", "a\nb" + "x" * 500: 1}
    message = refused(file_with(tmp_path, json.dumps(odd).encode()))
    assert "'a\\nbxxx" in message and "Extra inputs are not permitted" in message


def test_valid_flags_and_files_become_a_checked_decision(tmp_path: Path) -> None:
    decision = parse_decision(REQUEST, DecisionFlags(reject=True, reason="thin"))
    assert decision is not None
    assert (decision.interrupt_id, decision.action) == (REQUEST.interrupt_id, "reject")
    mine = {"interrupt_id": REQUEST.interrupt_id, "action": "approve"}
    from_file = parse_decision(
        REQUEST, file_with(tmp_path, b"\xef\xbb\xbf" + json.dumps(mine).encode())
    )
    assert from_file is not None and from_file.action == "approve"
    assert parse_decision(REQUEST, DecisionFlags()) is None


@pytest.mark.e2e
def test_the_terminal_prompt_ends_like_no_decision_when_input_ends(settings: Settings) -> None:
    """On a TTY `handoff resume` asks; Ctrl-D leaves the thread waiting and exits 3."""
    import os
    import pty
    import time

    run = handoff(settings, "run", OBJECTIVE, "--thread", "t-tty", "--require-approval")
    assert run.returncode == ExitCode.WAITING_FOR_HUMAN, run.stderr
    primary, secondary = pty.openpty()
    command = [str(HANDOFF)] if HANDOFF.exists() else [sys.executable, "-m", "app.cli"]
    process = subprocess.Popen(
        [*command, "resume", "t-tty"],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=backend_env(settings),
        close_fds=True,
    )
    os.close(secondary)
    shown = b""
    deadline = time.monotonic() + 60
    while b"action" not in shown and time.monotonic() < deadline:
        shown += os.read(primary, 4096)
    assert b"action" in shown, shown
    os.write(primary, b"\x04")  # end of input
    assert process.wait(timeout=60) == ExitCode.WAITING_FOR_HUMAN
    os.close(primary)
    with Workflow(settings) as workflow:
        assert workflow.pending("t-tty") is not None, "the thread still waits"


STALE = paused("stale_input", 4, "Inputs changed. Accept, re-run or abort?")


def test_every_allowed_action_has_a_command_line_form_that_parses_to_it() -> None:
    stale = PAUSES["stale_input"]
    hints = {action.name: action_hint(action, stale) for action in stale.actions}
    assert hints["accept_new_revision"] == "--action accept_new_revision"
    assert hints["abort"] == '--abort --reason "…"'
    approval = PAUSES["approve_research"]
    assert (
        action_hint(approval.action("revise"), approval) == "--answer QID=TEXT / --constraint TEXT"
    )
    assert set(ACTIONS) == {name for pause in PAUSES.values() for name in pause.names}
    for action in STALE.allowed_actions:
        flags = DecisionFlags(
            action=action if action not in ("abort",) else None,
            abort=action == "abort",
            reason="inputs moved" if "reason" in stale.action(action).needs else None,
        )
        decision = parse_decision(STALE, flags)
        assert decision is not None and decision.action == action, hints[action]


def test_answers_are_offered_only_while_a_question_waits_for_one() -> None:
    approval = PAUSES["approve_research"]
    nothing_open = request_hints(REQUEST)
    assert "--constraint TEXT" in nothing_open and not any("--answer" in h for h in nothing_open)
    step = StepInfo(thread_id="t-mine", node="approve_research", step=2, task_version=1)
    waiting = pause_request(
        approval,
        step,
        question="Approve?",
        open_questions=[Question(id="q-2", text="Who found the stone?")],
    )
    assert "--answer QID=TEXT / --constraint TEXT" in request_hints(waiting)
    answered = waiting.model_copy(
        update={"open_questions": [Question(id="q-2", text="Who?", answer="Soldiers")]}
    )
    assert not any("--answer" in hint for hint in request_hints(answered))
