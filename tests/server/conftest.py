"""A real ``langgraph dev`` server: a subprocess on a free port, in a folder of its own.

The folder holds the project's langgraph.json unchanged, a link to ``app/`` (the paths in
langgraph.json are relative to the server's working folder) and a ``.env`` that points
every store into the folder, so the server reads its settings exactly as a user's would and
nothing is written to the checkout.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient

from app.server import graph as server
from app.server.dev_server import OFFLINE_DEFAULTS, OFFLINE_ENV, free_port
from app.server.graph import GRAPH_ID
from app.settings import BUNDLED_CORPUS, Settings
from app.storage.backends import artifact_store_for
from app.workflow import Workflow
from contracts import HumanDecision, HumanRequest, RunOutcome, TaskSpec
from graphs.human import request_in
from tests import forked
from tests.backends import BACKENDS, postgres_schema
from tests.conftest import OBJECTIVE

ROOT = Path(__file__).resolve().parents[2]
READY_SECONDS = 60.0
STOP_SECONDS = 15.0
LANGGRAPH = Path(sys.executable).parent / "langgraph"


def server_folder(folder: Path, database_url: str | None = None) -> Path:
    """A folder to run the server in, with a .env naming its data folder (and database)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "langgraph.json", folder / "langgraph.json")
    (folder / "app").symlink_to(ROOT / "app", target_is_directory=True)
    lines = [f"HANDOFF_DATA_DIR={folder / 'data'}"]
    if database_url is not None:
        lines.append(f'HANDOFF_DATABASE_URL="{database_url}"')
    (folder / ".env").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def folder_settings(folder: Path, database_url: str | None = None) -> Settings:
    """The settings the server derives from that .env, for reading what it wrote."""
    data = folder / "data"
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=data,
        database_url=database_url or f"sqlite:///{data / 'handoff.db'}",
        artifact_dir=data / "artifacts",
        corpus=[BUNDLED_CORPUS],
    )


def server_env() -> dict[str, str]:
    """The test's environment without HANDOFF_* (the .env decides), offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    return {**OFFLINE_DEFAULTS, **env, **OFFLINE_ENV}


def langgraph_dev(port: int, *extra: str) -> list[str]:
    """``langgraph dev`` as the issue runs it: no browser, no reload, the given port."""
    command = [str(LANGGRAPH)] if LANGGRAPH.exists() else [sys.executable, "-m", "langgraph_cli"]
    return [*command, "dev", "--no-browser", "--no-reload", "--port", str(port), *extra]


@dataclass
class RunningServer:
    """A started server process and where it listens."""

    process: subprocess.Popen[bytes]
    url: str
    folder: Path
    log: Path
    settings: Settings

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, size: int = 4000) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return text[-size:]

    def wait_ready(self, timeout: float = READY_SECONDS) -> float:
        """Poll /ok until it answers; returns the seconds it took."""
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            if self.process.poll() is not None:
                pytest.fail(f"server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/ok", timeout=1) as response:
                    if response.status == 200:
                        return time.monotonic() - began
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"server not ready after {timeout:.0f}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """Stop the server by its pid: SIGTERM, then SIGKILL if it lingers."""
        if self.process.poll() is not None:
            return
        os.kill(self.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_SECONDS)


def start_server(
    argv: list[str], folder: Path, port: int, database_url: str | None = None
) -> RunningServer:
    """Start ``argv`` in ``folder`` with its output in a log file there."""
    log = folder / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv, cwd=folder, env=server_env(), stdout=sink, stderr=subprocess.STDOUT
        )
    return RunningServer(
        process=process,
        url=f"http://127.0.0.1:{port}",
        folder=folder,
        log=log,
        settings=folder_settings(folder, database_url),
    )


@contextmanager
def database_for(kind: str) -> Iterator[str | None]:
    """No URL for SQLite (the default file under the data folder), or a fresh schema."""
    if kind == "sqlite":
        yield None
    else:
        with postgres_schema("handoff_srv") as url:
            yield url


PER_BACKEND = [pytest.param(kind, marks=getattr(pytest.mark, kind)) for kind in BACKENDS]
"""Parameters of a module-scoped server fixture: one server per backend, marked by it."""


@pytest.fixture(scope="module", params=PER_BACKEND)
def dev_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """``langgraph dev`` on the project's langgraph.json, two runs at a time, per backend."""
    with served(request.param, tmp_path_factory.mktemp(f"dev-{request.param}")) as server:
        yield server


@pytest.fixture(scope="module", params=PER_BACKEND)
def gated_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """A dev server whose writer waits for the test's gate file before it writes."""
    folder = tmp_path_factory.mktemp(f"gated-{request.param}")
    with served(request.param, folder, f"HANDOFF_FAULT=wait:writer:{folder / 'gate'}") as server:
        yield server


@contextmanager
def served(kind: str, folder: Path, *env: str) -> Iterator[RunningServer]:
    """A ready server on backend ``kind`` in ``folder``; ``env`` adds lines to its .env."""
    with database_for(kind) as database_url:
        server_folder(folder, database_url)
        with (folder / ".env").open("a", encoding="utf-8") as dotenv:
            dotenv.writelines(f"{line}\n" for line in env)
        port = free_port()
        server = start_server(
            langgraph_dev(port, "--n-jobs-per-worker", "2"), folder, port, database_url
        )
        try:
            server.wait_ready()
            yield server
        finally:
            server.stop()


# -- driving the server through langgraph-sdk ----------------------------------------


def task(task_id: str) -> dict[str, Any]:
    """The graph input: a TaskSpec (as JSON) that asks for approval after research."""
    spec = TaskSpec(task_id=task_id, objective=OBJECTIVE, policies={"require_approval": True})
    return {"task": spec.model_dump(mode="json")}


def approval(request: HumanRequest, **fields: Any) -> dict[str, Any]:
    decision = HumanDecision(
        interrupt_id=request.interrupt_id, action="approve", decided_by="sdk-test"
    )
    return {**decision.model_dump(mode="json"), **fields}


async def start(client: LangGraphClient, task_id: str) -> tuple[str, HumanRequest]:
    """Create a thread, run it to the approval interrupt, return the typed request."""
    thread = await client.threads.create()
    thread_id = thread["thread_id"]
    await client.runs.wait(thread_id, GRAPH_ID, input=task(task_id))
    return thread_id, await waiting(client, thread_id)


async def waiting(client: LangGraphClient, thread_id: str) -> HumanRequest:
    """The thread's open request; fails unless it is interrupted at the approval node."""
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["approve_research"]
    [pending] = state["interrupts"]
    return request_in(pending["value"])


def check_article(server: RunningServer, thread_id: str, outcome: RunOutcome) -> bytes:
    """The article's bytes from the project's artifact store, checked against its ref."""
    assert outcome.article is not None
    ref = outcome.article
    assert ref.artifact_id == f"{thread_id}-article"
    assert ref.uri == f"artifact://article/{thread_id}-article"
    with Workflow(server.settings) as workflow:
        data = workflow.context.store.get(ref)
    second = artifact_store_for(server.settings)
    try:
        assert second.get(ref) == data, "a second store reads it too"
    finally:
        second.close()
    assert hashlib.sha256(data).hexdigest() == ref.sha256
    assert len(data) == ref.size_bytes
    return data


async def cli_resume(folder: Path, thread_id: str, *decision: str) -> tuple[int, str]:
    """``handoff resume ID [decision flags]`` where the server runs (same .env, database)."""
    return await cli_in(folder, "resume", thread_id, *decision)


async def cli_in(folder: Path, *args: str) -> tuple[int, str]:
    """``handoff ARGS`` where the server runs (same .env, database): exit code, output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    ran = await asyncio.to_thread(forked.run, args, env=env, cwd=folder)
    return ran.returncode, ran.stdout + ran.stderr


async def writing(workflow: Workflow, thread_id: str) -> None:
    """Wait until the thread's writer attempt is running: its resumer holds the thread."""
    for _ in range(600):
        runs = await asyncio.to_thread(workflow.history, thread_id)
        if any(run.node_id == "writer" and run.status == "running" for run in runs):
            return
        await asyncio.sleep(0.1)
    pytest.fail(f"{thread_id}: no writer attempt started within 60 s")


@pytest.fixture
def served_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder whose .env points the served graph's services at it, as the server's does."""
    for name in [name for name in os.environ if name.startswith("HANDOFF_")]:
        monkeypatch.delenv(name)
    (tmp_path / ".env").write_text(f"HANDOFF_DATA_DIR={tmp_path / 'data'}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    server._services.cache_clear()
    yield tmp_path
    server._services.cache_clear()
