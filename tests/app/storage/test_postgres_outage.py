"""PostgreSQL going away in the middle of a run: a bounded, clear failure, then a resume.

Restarting the shared server would break every other test using it at that moment, so an
outage is simulated for this test's sessions only. Each test gets its own login role and
schema; "the server goes down" is ``ALTER ROLE … NOLOGIN`` (new connections are refused)
plus ``pg_terminate_backend`` on every session of that role (what a restart does to open
connections); "the server is back" is ``ALTER ROLE … LOGIN``. Timeouts are what bound
the failure: ``HANDOFF_DATABASE_TIMEOUT`` (2 s here) caps each connect and pool wait.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from app.errors import DatabaseUnavailable
from app.exit_codes import ExitCode
from app.faults.points import with_faults
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow
from bench._postgres import with_search_path
from tests.app.test_concurrency import assert_single_writer_history
from tests.backends import admin, require_postgres
from tests.cli import HANDOFF, handoff, one_line_error
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.postgres

TIMEOUT = 2.0
BOUND = 10 * TIMEOUT  # a few waits of TIMEOUT each, with room for a loaded machine


@dataclass
class Outage:
    """A role-and-schema sandbox whose database can be taken away and given back."""

    role: str
    url: str
    started: float = 0.0

    def begin(self, *, refuse_new: bool = True) -> None:
        self.started = time.monotonic()
        with admin() as conn:
            if refuse_new:
                conn.execute(f'ALTER ROLE "{self.role}" NOLOGIN')
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (self.role,),
            )

    def end(self) -> None:
        with admin() as conn:
            conn.execute(f'ALTER ROLE "{self.role}" LOGIN')

    def at(self, point: str, *, refuse_new: bool = True) -> Callable[[str], None]:
        """A fault hook that begins the outage when the run reaches ``point``."""

        def fault(reached: str) -> None:
            if reached == point and not self.started:
                self.begin(refuse_new=refuse_new)

        return fault


@pytest.fixture
def outage() -> Iterator[Outage]:
    base = require_postgres()
    name = f"handoff_o_{uuid.uuid4().hex[:10]}"
    with admin() as conn:
        conn.execute(f'CREATE ROLE "{name}" LOGIN')
        conn.execute(f'CREATE SCHEMA "{name}" AUTHORIZATION "{name}"')
    parts = urlsplit(base)
    host = parts.netloc.rsplit("@", 1)[-1]
    user_url = urlunsplit(parts._replace(netloc=f"{name}@{host}"))
    try:
        yield Outage(name, with_search_path(user_url, name))
    finally:
        with admin() as conn:
            conn.execute(f'ALTER ROLE "{name}" LOGIN')
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (name,),
            )
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')
            conn.execute(f'DROP ROLE "{name}"')


def _settings(tmp_path: Path, url: str) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=url,
        database_timeout=TIMEOUT,
        corpus=[BUNDLED_CORPUS],
    )


@pytest.mark.parametrize("refuse_new", [True, False], ids=["down-for-a-while", "restarted"])
def test_an_outage_mid_run_fails_within_a_bound_and_the_thread_resumes_after(
    tmp_path: Path, outage: Outage, refuse_new: bool
) -> None:
    settings = _settings(tmp_path, outage.url)
    with Workflow(settings) as workflow:
        context = with_faults(workflow.context, outage.at("writer:attempt", refuse_new=refuse_new))
        with Workflow(settings, context=context) as doomed:
            with pytest.raises(DatabaseUnavailable) as failure:
                doomed.run(doomed.task(OBJECTIVE), "t-outage")
            elapsed = time.monotonic() - outage.started
        assert outage.started, "the outage began mid-run"
        assert elapsed < BOUND, f"the run took {elapsed:.1f}s to fail"
        message = failure.value.message
        assert "database unavailable" in message and "'t-outage'" in message
        assert "handoff resume t-outage" in message

        outage.end()
        outcome = workflow.resume("t-outage")  # the same long-lived worker, reconnected
        assert outcome.result_status == "completed"
        assert_single_writer_history(workflow, "t-outage")
        writer = [run for run in workflow.history("t-outage") if run.node_id == "writer"]
        if refuse_new:  # the attempt cut short is on record as failed
            assert writer[0].status == "failed" and writer[0].error is not None
            assert "did not finish" in writer[0].error.detail
            assert writer[-1].status == "succeeded" and not writer[-1].reused
        else:  # the writer finished on a fresh connection; only its checkpoint was lost
            assert [run.status for run in writer] == ["succeeded", "succeeded"]
            assert writer[-1].reused, "the resumed writer reused the finished attempt"


@pytest.mark.e2e
def test_an_unreachable_server_exits_9_with_one_line_within_the_timeout(tmp_path: Path) -> None:
    env = {"HANDOFF_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/test"}  # refused
    env["HANDOFF_DATABASE_TIMEOUT"] = str(TIMEOUT)
    env["HANDOFF_DATA_DIR"] = str(tmp_path)
    env["PATH"] = "/usr/bin:/bin"
    command = [str(HANDOFF)] if HANDOFF.exists() else [sys.executable, "-m", "app.cli"]
    began = time.monotonic()
    result = subprocess.run(
        [*command, "run", OBJECTIVE, "--thread", "t-x"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.monotonic() - began
    assert result.returncode == ExitCode.DATABASE_UNAVAILABLE, result.stderr
    assert result.stderr.startswith("error: database unavailable at postgresql://")
    assert "Connection refused" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert elapsed < BOUND + 10, f"took {elapsed:.1f}s"


def test_a_server_that_never_answers_fails_within_the_timeout(tmp_path: Path) -> None:
    silent = "postgresql://postgres@10.255.255.1:5432/test"  # unroutable: no reply at all
    began = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match="database unavailable at postgresql://"):
        Workflow(_settings(tmp_path, silent)).open()
    assert time.monotonic() - began < BOUND


@pytest.mark.e2e
def test_a_refused_connection_fails_at_once_not_after_the_timeout(tmp_path: Path) -> None:
    """A closed port is refused at once; only a server that does not answer gets the wait.

    The timeout is long so that waiting it out cannot pass for a slow start of the command
    on a busy machine (which took 14 s of a 30 s timeout once).
    """
    timeout = 300.0
    env = {
        "HANDOFF_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/test",  # refused
        "HANDOFF_DATABASE_TIMEOUT": str(timeout),
    }
    began = time.monotonic()
    result = handoff("threads", data_dir=tmp_path, env=env)
    elapsed = time.monotonic() - began
    assert result.returncode == ExitCode.DATABASE_UNAVAILABLE, result.stderr
    assert "Connection refused" in one_line_error(result)
    assert elapsed < timeout / 3, f"{elapsed:.1f}s of a {timeout:.0f}s timeout"

    settings = _settings(tmp_path, env["HANDOFF_DATABASE_URL"]).with_overrides(
        database_timeout=timeout
    )
    began = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match="Connection refused"):
        Workflow(settings).open()
    elapsed = time.monotonic() - began
    assert elapsed < timeout / 15, f"{elapsed:.1f}s of a {timeout:.0f}s timeout"


def test_a_server_that_accepts_but_never_answers_still_gets_the_whole_timeout(
    tmp_path: Path,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens, never replies
        port = silent.getsockname()[1]
        url = f"postgresql://postgres@127.0.0.1:{port}/test"
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="database unavailable at postgresql://"):
            Workflow(_settings(tmp_path, url)).open()
        elapsed = time.monotonic() - began
    assert TIMEOUT * 0.9 <= elapsed < BOUND, f"{elapsed:.1f}s for a {TIMEOUT:.0f}s timeout"
