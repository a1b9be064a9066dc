"""``handoff serve``: the dev server started offline, on a free port, with a Studio link."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client
from typer.testing import CliRunner

from app.cli import cli
from app.exit_codes import ExitCode
from app.server import dev_server as server
from app.workflow import Workflow
from contracts import TaskState
from tests.cli import HANDOFF
from tests.server.conftest import (
    RunningServer,
    approval,
    check_article,
    folder_settings,
    server_env,
    server_folder,
    start,
)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A served folder whose .env decides; the working folder is restored afterwards."""
    for name in [name for name in os.environ if name.startswith("HANDOFF_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return server_folder(tmp_path / "project")


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something else is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_the_command_line_is_offline_headless_and_names_the_port(folder: Path) -> None:
    port = server.free_port()
    plan = server.plan_dev_server(config=folder / "langgraph.json", port=port, environ={})
    assert plan.argv[1:4] == ["-m", "langgraph_cli", "dev"]
    for flag in ("--no-browser", "--no-reload"):
        assert flag in plan.argv
    assert plan.argv[plan.argv.index("--port") + 1] == str(port)
    assert plan.argv[plan.argv.index("--config") + 1] == str(folder / "langgraph.json")
    assert plan.cwd == folder, "langgraph.json's relative paths resolve from its folder"
    assert plan.env["LANGGRAPH_CLI_NO_ANALYTICS"] == "1"
    assert plan.env["LANGGRAPH_NO_VERSION_CHECK"] == "true"
    assert plan.env["LANGSMITH_TRACING"] == "false"
    assert plan.studio_url == f"https://smith.langchain.com/studio/?baseUrl=http://127.0.0.1:{port}"


def test_tracing_stays_on_when_the_user_turned_it_on(folder: Path) -> None:
    environ = {"LANGSMITH_TRACING": "true", "LANGGRAPH_CLI_NO_ANALYTICS": "0"}
    plan = server.plan_dev_server(config=folder / "langgraph.json", environ=environ)
    assert plan.env["LANGSMITH_TRACING"] == "true"
    assert plan.env["LANGGRAPH_CLI_NO_ANALYTICS"] == "1"


def test_a_taken_default_port_is_replaced_and_a_taken_explicit_one_refused(
    folder: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "DEFAULT_PORT", taken_port)
    plan = server.plan_dev_server(config=folder / "langgraph.json")
    assert plan.port != taken_port and server.port_is_free("127.0.0.1", plan.port)
    with pytest.raises(server.ServeError, match=f"port {taken_port} .* is in use"):
        server.plan_dev_server(config=folder / "langgraph.json", port=taken_port)


def test_the_config_is_found_here_or_in_the_project(folder: Path, tmp_path: Path) -> None:
    assert server.find_config(cwd=folder) == folder / "langgraph.json"
    assert server.find_config(cwd=tmp_path) == (server.PROJECT_ROOT / "langgraph.json")
    with pytest.raises(server.ServeError, match="no such config file"):
        server.find_config(tmp_path / "missing.json")


def test_a_dotenv_value_that_overrides_the_environment_is_reported(folder: Path) -> None:
    plan = server.plan_dev_server(
        config=folder / "langgraph.json",
        environ={"HANDOFF_DATA_DIR": "/elsewhere", "HANDOFF_MODEL": "offline"},
    )
    assert server.dotenv_overrides(plan) == ["HANDOFF_DATA_DIR"]


def test_serve_prints_where_to_connect_then_becomes_the_server(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[server.DevServer] = []
    monkeypatch.setattr(server, "exec_dev_server", started.append)
    port = server.free_port()
    result = CliRunner().invoke(
        cli, ["serve", "--port", str(port), "--config", str(folder / "langgraph.json")], env={}
    )
    assert result.exit_code == 0, result.output
    [plan] = started
    assert plan.port == port and Path.cwd() == folder
    settings = folder_settings(folder)
    assert f"Studio:    https://smith.langchain.com/studio/?baseUrl=http://127.0.0.1:{port}" in (
        result.output
    )
    assert f"API:       http://127.0.0.1:{port}" in result.output
    assert str(settings.resolved_artifact_dir()) in result.output
    assert str(folder / "data" / "handoff.db") in result.output


def test_serve_refuses_a_taken_port_with_a_usage_error(folder: Path, taken_port: int) -> None:
    result = CliRunner().invoke(
        cli, ["serve", "--port", str(taken_port), "--config", str(folder / "langgraph.json")]
    )
    assert result.exit_code == ExitCode.USAGE
    assert f"port {taken_port}" in result.output


@pytest.mark.server
def test_handoff_serve_becomes_the_server_whose_threads_outlive_a_sigkill(folder: Path) -> None:
    """The pid `handoff serve` started is the server; killing it loses no thread."""
    port = server.free_port()
    command = [str(HANDOFF)] if HANDOFF.exists() else [sys.executable, "-m", "app.cli"]
    log = folder / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, "serve", "--port", str(port), "--jobs", "1"],
            cwd=folder,
            env=server_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    running = RunningServer(process, url, folder, log, folder_settings(folder))
    try:
        running.wait_ready()
        banner = log.read_text(encoding="utf-8", errors="replace")
        assert f"Studio:    https://smith.langchain.com/studio/?baseUrl={url}" in banner
        thread_id, request = asyncio.run(start(get_client(url=url), "sdk-killed"))
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        running.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{url}/ok", timeout=2)  # that pid was the server

    with Workflow(running.settings) as workflow:  # the thread is in the project's database
        assert workflow.pending(thread_id) == request
        outcome = workflow.resume(thread_id, approval(request))
    assert outcome.state == TaskState.COMPLETED
    check_article(running, thread_id, outcome)


def test_the_banner_names_where_artifacts_really_are(folder: Path) -> None:
    port = server.free_port()
    plan = server.plan_dev_server(config=folder / "langgraph.json", port=port, environ={})
    on_files = folder_settings(folder)
    [files_line] = [line for line in server.banner(plan, on_files) if "artifacts:" in line]
    assert files_line.endswith(str(on_files.resolved_artifact_dir().resolve()))
    url = "postgresql://handoff:secret@db.example:5432/handoff"
    on_postgres = on_files.with_overrides(database_url=url)
    [db_line] = [line for line in server.banner(plan, on_postgres) if "artifacts:" in line]
    assert "in the database" in db_line and "secret" not in db_line
    assert str(on_files.resolved_artifact_dir()) not in db_line
