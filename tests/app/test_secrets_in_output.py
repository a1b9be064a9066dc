"""A password in the database URL never reaches the CLI's output, whatever the command."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from app.storage.postgres import describe_url, redact
from tests.backends import postgres_schema
from tests.cli import handoff
from tests.conftest import OBJECTIVE

SECRET = "s3cr3t-Pa55"

# Each refused at once (port 1 is closed), each carrying the password another way.
UNREACHABLE = {
    "query password": f"postgresql://postgres@127.0.0.1:1/test?password={SECRET}",
    "sslpassword and user:password": (
        f"postgresql://postgres:{SECRET}@127.0.0.1:1/test?sslmode=disable&sslpassword={SECRET}"
    ),
    "key=value conninfo": f"host=127.0.0.1 port=1 dbname=test password={SECRET}",
}

COMMANDS = [
    ["run", OBJECTIVE, "--thread", "t-secret"],
    ["resume", "t-secret", "--approve"],
    ["status", "t-secret"],
    ["history", "t-secret"],
    ["show", "t-secret"],
    ["threads"],
    ["db", "init"],
]


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://u@h/db?password={SECRET}",
        f"postgresql://u@h/db?sslmode=require&PASSWORD={SECRET}&x=1",
        f"postgresql://u:{SECRET}@h/db?sslpassword={SECRET}",
        f"host=h password={SECRET} dbname=db",
        f"host=h password='{SECRET} with spaces' dbname=db",
        "postgresql://u@h/db?password=s3cr%26t",
    ],
)
def test_describe_url_masks_every_password(url: str) -> None:
    described = describe_url(url)
    assert SECRET not in described and "s3cr" not in described, described
    assert "***" in described
    assert "h" in described, "the rest of the URL stays"


def test_redact_masks_a_password_quoted_anywhere_in_a_driver_message() -> None:
    url = f"postgresql://u@h/db?password={SECRET}"
    message = f'invalid connection string near "{SECRET}": syntax error'
    assert redact(message, url) == 'invalid connection string near "***": syntax error'
    assert redact("database unavailable at postgresql://u@h/db: refused") == (
        "database unavailable at postgresql://u@h/db: refused"
    ), "text without a password is left alone"


def _run(data: Path, url: str, command: list[str]) -> subprocess.CompletedProcess[str]:
    return handoff("--debug", *command, data_dir=data, env={"HANDOFF_DATABASE_URL": url})


@pytest.mark.e2e
@pytest.mark.parametrize("kind", UNREACHABLE, ids=list(UNREACHABLE))
def test_no_command_prints_the_password_of_an_unreachable_database(
    tmp_path: Path, kind: str
) -> None:
    """With ``--debug``, so both the error line and the traceback are checked."""
    url = UNREACHABLE[kind]
    # A conninfo string is not a URL the project opens: refused as a setting to correct
    # (exit 2), password masked.
    expected = ExitCode.USAGE if kind == "key=value conninfo" else ExitCode.DATABASE_UNAVAILABLE
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda command: _run(tmp_path, url, command), COMMANDS))
    for command, result in zip(COMMANDS, results, strict=True):
        assert result.returncode == expected, (command, result.stderr)
        assert "Traceback" in result.stderr and "error: " in result.stderr, result.stderr
        output = result.stdout + result.stderr
        assert SECRET not in output, (command, output)
        assert "***" in output, (command, output)


@pytest.mark.e2e
@pytest.mark.postgres
def test_db_init_reports_the_database_with_its_password_masked(tmp_path: Path) -> None:
    with postgres_schema() as url:  # the test server trusts local logins: any password works
        env = {"HANDOFF_DATABASE_URL": f"{url}&password={SECRET}"}
        result = handoff("db", "init", data_dir=tmp_path, env=env)
    assert result.returncode == ExitCode.COMPLETED, result.stderr
    assert "database ready: postgresql://" in result.stdout
    assert "password=***" in result.stdout
    assert SECRET not in result.stdout + result.stderr
