"""A forked CLI process behaves as the installed script does: same output, status, signals."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.e2e


def environment(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    env["HANDOFF_DATA_DIR"] = str(data)
    return env


@pytest.mark.parametrize("args", [["--version"], ["resume", "t-none"], ["status", "--json"]])
def test_a_forked_command_prints_and_exits_exactly_as_the_script_does(
    tmp_path: Path, args: list[str]
) -> None:
    env = environment(tmp_path / "data")
    script = subprocess.run(
        [str(forked.SCRIPT), *args], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    fork = forked.run(args, env=env, cwd=tmp_path)
    assert (fork.returncode, fork.stdout, fork.stderr) == (
        script.returncode,
        script.stdout,
        script.stderr,
    )


def test_a_forked_command_reads_its_own_environment_and_folder(tmp_path: Path) -> None:
    database = tmp_path / "named-in-dotenv.db"
    (tmp_path / ".env").write_text(f"HANDOFF_DATABASE_URL=sqlite:///{database}\n")
    ran = forked.run(["resume", "t-none"], env=environment(tmp_path / "given"), cwd=tmp_path)
    assert ran.returncode != 0
    assert str(database) in ran.stderr, ran.stderr  # the .env of its own working folder


def test_a_forked_process_is_its_own_and_dies_of_sigkill(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    env = environment(tmp_path / "data") | {"HANDOFF_FAULT": f"wait:writer:{gate}"}
    process = forked.start(["run", OBJECTIVE], env=env, cwd=tmp_path)
    assert process.pid not in (os.getpid(), os.getppid())
    time.sleep(1.0)
    assert process.poll() is None, "held at the gate, it is still running"
    process.send_signal(signal.SIGKILL)
    assert process.wait(30) == -signal.SIGKILL
    assert process.cpu > 0
