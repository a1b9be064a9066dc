"""A real ``handoff a2a`` server: a subprocess on a free port, its data in a folder of its own.

Each test gets its own folder and, on PostgreSQL, its own schema; the server reads its
settings from the environment exactly as a user's would. The tests drive it with the
a2a-sdk client and read what it stored with a Workflow of the same settings.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from a2a.client import A2AClientError, Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import (
    GetTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)

from app.a2a.parts import whole_numbers
from app.server.dev_server import free_port
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow
from tests.backends import postgres_schema
from tests.cli import HANDOFF, handoff
from tests.conftest import OBJECTIVE

UNATTENDED = {"objective": OBJECTIVE, "policies": {"require_approval": False}}
APPROVAL = {"objective": OBJECTIVE, "policies": {"require_approval": True}}
READY_SECONDS = 60.0
STOP_SECONDS = 15.0


@dataclass
class A2AServer:
    """A started ``handoff a2a`` and what it was started with."""

    folder: Path
    database_url: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def log(self) -> Path:
        return self.folder / f"server-{self.starts}.log"

    def env(self, **extra: str) -> dict[str, str]:
        """The test's environment, its HANDOFF_* replaced by this server's."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
        return {
            **env,
            "HANDOFF_DATA_DIR": str(self.folder / "data"),
            "HANDOFF_DATABASE_URL": self.database_url,
            **extra,
        }

    def settings(self) -> Settings:
        """The settings the server runs with, for reading what it stored."""
        return Settings(  # type: ignore[call-arg]
            _env_file=None,
            data_dir=self.folder / "data",
            database_url=self.database_url,
            artifact_dir=self.folder / "data" / "artifacts",
            corpus=[BUNDLED_CORPUS],
        )

    def start(self, **env: str) -> None:
        """Start the server (again) with extra environment, and wait for its agent card."""
        self.starts += 1
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [str(HANDOFF), "a2a", "--port", str(self.port)],
                cwd=self.folder,
                env=self.env(**env),
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        began = time.monotonic()
        while time.monotonic() - began < READY_SECONDS:
            if self.process.poll() is not None:
                pytest.fail(f"a2a server exited with {self.process.returncode}:\n{self.tail()}")
            try:
                card = f"{self.url}.well-known/agent-card.json"
                with urllib.request.urlopen(card, timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"a2a server not ready after {READY_SECONDS:.0f}s:\n{self.tail()}")

    def wait_killed(self, timeout: float = 60.0) -> int:
        """Wait for the process to end by itself (a kill rule); its return code."""
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_SECONDS)

    def tail(self, size: int = 4000) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-size:]

    @contextmanager
    def workflow(self) -> Iterator[Workflow]:
        """A Workflow over the server's storage (read-only)."""
        with Workflow(self.settings(), read_only=True) as workflow:
            yield workflow


@pytest.fixture(params=["sqlite", "postgres"])
def a2a_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[A2AServer]:
    """An A2A server on SQLite (a file in the folder) or PostgreSQL (a schema of its own)."""
    request.applymarker(getattr(pytest.mark, request.param))
    folder = tmp_path / "a2a"
    folder.mkdir()
    with postgres_schema("handoff_a2a") if request.param == "postgres" else _sqlite(folder) as url:
        server = A2AServer(folder=folder, database_url=url)
        try:
            yield server
        finally:
            server.stop()


@contextmanager
def _sqlite(folder: Path) -> Iterator[str]:
    yield f"sqlite:///{folder / 'data' / 'handoff.db'}"


@asynccontextmanager
async def client_of(server: A2AServer, *, streaming: bool = False) -> AsyncIterator[Client]:
    """An a2a-sdk client that found the server by its agent card."""
    client = await create_client(server.url, client_config=ClientConfig(streaming=streaming))
    try:
        yield client
    finally:
        await client.close()


def spec_message(spec: dict[str, Any], **fields: Any) -> Message:
    """A user message carrying a TaskSpec as its one data part."""
    return Message(
        message_id=f"m-{time.monotonic_ns()}",
        role=Role.ROLE_USER,
        parts=[new_data_part(spec)],
        **fields,
    )


def data_message(value: Any, **fields: Any) -> Message:
    """A user message carrying one data part (a decision, a revision)."""
    return spec_message(value, **fields)


def text_message(text: str, **fields: Any) -> Message:
    """A user message carrying text."""
    return Message(
        message_id=f"m-{time.monotonic_ns()}",
        role=Role.ROLE_USER,
        parts=[new_text_part(text)],
        **fields,
    )


async def send(client: Client, message: Message, *, immediately: bool = False) -> Task:
    """Send a message; the task the (blocking, unless ``immediately``) send answers with."""
    request = SendMessageRequest(
        message=message, configuration=SendMessageConfiguration(return_immediately=immediately)
    )
    task: Task | None = None
    async for response in client.send_message(request):
        if response.HasField("task"):
            task = response.task
    assert task is not None, "the server answered without a task"
    return task


async def stream(client: Client, message: Message) -> list[StreamResponse]:
    """Send a message on a streaming client; every event it streamed, in order."""
    return [response async for response in client.send_message(SendMessageRequest(message=message))]


async def paused(client: Client) -> Task:
    """A new task that asks a person to approve its research: input-required."""
    task = await send(client, spec_message(APPROVAL))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task.status
    return task


async def get(client: Client, task_id: str) -> Task:
    return await client.get_task(GetTaskRequest(id=task_id))


async def wait_for(client: Client, task_id: str, state: int, timeout: float = 60.0) -> Task:
    """Poll tasks/get until the task reaches ``state``."""
    began = time.monotonic()
    while True:
        task = await get(client, task_id)
        if task.status.state == state or time.monotonic() - began > timeout:
            return task
        await asyncio.sleep(0.1)


def status_json(server: A2AServer, thread_id: str) -> dict[str, Any]:
    """``handoff status --json`` of the thread, run as a user would, on the server's storage."""
    result = handoff("status", thread_id, "--json", env=server.env())
    assert result.returncode in (0, 1, 3, 4), result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def data_of(part: Any) -> Any:
    """A data part's JSON, whole numbers as ints (protobuf keeps every number a double)."""
    from google.protobuf.json_format import MessageToDict

    return whole_numbers(MessageToDict(part.data))


__all__ = ["A2AClientError"]


async def writer_started(server: A2AServer, timeout: float = 60.0) -> str:
    """The thread whose Writer has started (held at its gate), once one has."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    while loop.time() - began < timeout:
        with server.workflow() as workflow:
            for thread in workflow.threads():
                if any(run.node_id == "writer" for run in workflow.history(thread)):
                    return thread
        await asyncio.sleep(0.2)
    pytest.fail(f"no writer started:\n{server.tail()}")
