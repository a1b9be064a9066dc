"""Exit codes: each error class states its own, and one function maps any exception."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

import app.agents.models
import app.cli.decision_file
import app.server.dev_server
from app.cli.input_files import InputFileError
from app.errors import (
    DatabaseMissing,
    DatabaseUnavailable,
    DecisionRequired,
    InvalidDecision,
    InvalidThreadId,
    NotWaiting,
    QueueUnavailable,
    StorageDamaged,
    StorageFull,
    SubmitUsage,
    ThreadBusy,
    ThreadExists,
    ThreadFinished,
    ThreadNotFound,
    UnknownArtifactName,
    UnknownContract,
)
from app.exit_codes import EXPECTED_ERRORS, ExitCode, for_error, for_outcome
from app.storage.backends import UnsupportedDatabaseUrl
from contracts import Constraints, RunOutcome, TaskState
from graphs.errors import ArtifactNotFound, ContractViolation, HandoffError, IntegrityError
from tests.cli import handoff, one_line_error


def _outcome(state: TaskState, result_status: str | None) -> RunOutcome:
    return RunOutcome.model_validate(
        {"thread_id": "t", "task_id": "task", "state": state, "result_status": result_status}
    )


def _validation_error() -> ValidationError:
    try:
        Constraints(max_words=3)
    except ValidationError as error:
        return error
    raise AssertionError("max_words=3 was accepted")


FINISHED = _outcome(TaskState.COMPLETED, "completed")

# The exit code table of docs/cli.md, one raised error per row (and the foreign exceptions).
EXAMPLES: list[tuple[BaseException, ExitCode]] = [
    (ContractViolation("bad", node="writer", channel="draft", fields=["body"]), ExitCode.FAILED),
    (ArtifactNotFound("no such artifact"), ExitCode.NOT_FOUND),
    (app.agents.models.ModelConfigError("no such model"), ExitCode.USAGE),
    (OSError("disk full"), ExitCode.FAILED),
    (FileNotFoundError("no corpus"), ExitCode.FAILED),
    (ValueError("bad url"), ExitCode.FAILED),
    (_validation_error(), ExitCode.USAGE),
    (InvalidThreadId("bad id"), ExitCode.USAGE),
    (ThreadExists("exists"), ExitCode.USAGE),
    (InvalidDecision("wrong answer"), ExitCode.USAGE),
    (NotWaiting("not waiting"), ExitCode.USAGE),
    (UnknownContract("no such contract"), ExitCode.USAGE),
    (QueueUnavailable("no PostgreSQL"), ExitCode.USAGE),
    (SubmitUsage("objective and --resume"), ExitCode.USAGE),
    (app.server.dev_server.ServeError("port taken"), ExitCode.USAGE),
    (app.cli.decision_file.DecisionInputError("two actions"), ExitCode.USAGE),
    (InputFileError("--file: no such file"), ExitCode.USAGE),
    (UnsupportedDatabaseUrl("mysql://"), ExitCode.USAGE),
    (DatabaseMissing("no database 'x'"), ExitCode.USAGE),
    (DecisionRequired("decide first", None), ExitCode.WAITING_FOR_HUMAN),
    (ThreadNotFound("no thread"), ExitCode.NOT_FOUND),
    (UnknownArtifactName("no artifact"), ExitCode.NOT_FOUND),
    (ThreadFinished("ended", FINISHED), ExitCode.ALREADY_FINISHED),
    (ThreadBusy("busy"), ExitCode.THREAD_BUSY),
    (IntegrityError("bytes changed"), ExitCode.INTEGRITY),
    (DatabaseUnavailable("gone"), ExitCode.DATABASE_UNAVAILABLE),
    (StorageDamaged("not a database"), ExitCode.STORAGE_DAMAGED),
    (StorageFull("no space"), ExitCode.STORAGE_FULL),
]


def _error_classes(base: type[HandoffError] = HandoffError) -> set[type[HandoffError]]:
    found = {base}
    for sub in base.__subclasses__():
        found |= _error_classes(sub)
    return found


@pytest.mark.parametrize(
    ("error", "code"), EXAMPLES, ids=[type(error).__name__ for error, _ in EXAMPLES]
)
def test_each_error_maps_to_its_documented_code(error: BaseException, code: ExitCode) -> None:
    assert for_error(error) is code
    assert isinstance(error, EXPECTED_ERRORS), "the CLI reports it instead of crashing"


def test_every_exit_code_is_reachable_from_an_error_class_or_an_outcome() -> None:
    from_errors = {cls.exit_code for cls in _error_classes()}
    from_outcomes = {
        for_outcome(_outcome(TaskState.COMPLETED, "completed")),
        for_outcome(_outcome(TaskState.COMPLETED, "partial")),
        for_outcome(_outcome(TaskState.INPUT_REQUIRED, None)),
        for_outcome(_outcome(TaskState.FAILED, "failed")),
    }
    assert from_outcomes == {
        ExitCode.COMPLETED,
        ExitCode.PARTIAL,
        ExitCode.WAITING_FOR_HUMAN,
        ExitCode.FAILED,
    }
    assert from_errors | from_outcomes == set(ExitCode)
    assert set(ExitCode) - from_outcomes <= from_errors, "each error code has its class"
    assert ExitCode.COMPLETED not in from_errors and ExitCode.PARTIAL not in from_errors


def test_every_error_class_states_an_exit_code() -> None:
    for cls in _error_classes():
        assert isinstance(cls.exit_code, ExitCode), cls


def test_an_unexpected_exception_is_a_failure_and_not_an_expected_error() -> None:
    bug = KeyError("oops")
    assert for_error(bug) is ExitCode.FAILED
    assert not isinstance(bug, EXPECTED_ERRORS)


@pytest.mark.e2e
def test_handoff_edit_with_a_missing_file_exits_2_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.md"
    result = handoff("edit", "t-any", "draft", "--file", str(missing), data_dir=tmp_path)
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert one_line_error(result) == f"error: --file '{missing}': no such file"


@pytest.mark.e2e
def test_an_unsupported_database_url_exits_2_naming_the_setting_and_the_schemes(
    tmp_path: Path,
) -> None:
    url = "mysql://someone@127.0.0.1/handoff"
    result = handoff("status", "t-any", env={"HANDOFF_DATABASE_URL": url}, data_dir=tmp_path)
    assert result.returncode == ExitCode.USAGE, result.stderr
    line = one_line_error(result)
    assert f"HANDOFF_DATABASE_URL: unsupported database URL scheme 'mysql' in {url!r}" in line
    for scheme in ("sqlite:///", "postgresql://", "memory://"):
        assert scheme in line
