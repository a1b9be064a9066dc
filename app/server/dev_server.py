"""How ``handoff serve`` starts ``langgraph dev`` offline: checks, command line, banner."""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from app.server.graph import GRAPH_ID
from app.settings import PROJECT_ROOT, Settings
from app.storage.backends import sqlite_path
from app.storage.postgres import describe_url
from graphs.errors import UsageError

DEFAULT_PORT = 2024
STUDIO = "https://smith.langchain.com/studio/?baseUrl={url}"
OFFLINE_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true"}
"""Always set for the dev server: no usage analytics, no version check."""
OFFLINE_DEFAULTS = {"LANGSMITH_TRACING": "false"}
"""Set unless the user already did (tracing to LangSmith is an explicit choice)."""


class ServeError(UsageError):
    """The dev server cannot be started as asked (missing extra, config or port)."""


@dataclass(frozen=True)
class DevServer:
    """How ``handoff serve`` starts ``langgraph dev``: command, folder and environment."""

    config: Path
    host: str
    port: int
    argv: list[str]
    env: dict[str, str]

    @property
    def cwd(self) -> Path:
        """``langgraph dev`` resolves the paths in langgraph.json (and .env) from here."""
        return self.config.parent

    @property
    def url(self) -> str:
        """Where the API listens."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def studio_url(self) -> str:
        """The LangGraph Studio page that connects to this server."""
        return STUDIO.format(url=self.url)


def find_config(explicit: Path | None = None, cwd: Path | None = None) -> Path:
    """The langgraph.json to serve: the given one, else ./langgraph.json, else the project's."""
    if explicit is not None:
        if not explicit.is_file():
            raise ServeError(f"no such config file: {explicit}")
        return explicit.resolve()
    for folder in (cwd or Path.cwd(), PROJECT_ROOT):
        candidate = folder / "langgraph.json"
        if candidate.is_file():
            return candidate.resolve()
    raise ServeError(
        "no langgraph.json here or in the project; run from the project folder or pass --config"
    )


def port_is_free(host: str, port: int) -> bool:
    """Whether ``port`` can be bound on ``host`` right now, as a server binds it.

    Servers (uvicorn) set SO_REUSEADDR, so a port whose last server was killed and whose
    connections linger in TIME_WAIT is free to them; the probe asks the same question.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free on ``host``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def dev_server_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: the caller's, with analytics and version checks off."""
    env = {**OFFLINE_DEFAULTS, **environ, **OFFLINE_ENV}
    return env


def plan_dev_server(
    *,
    config: Path | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    jobs: int = 4,
    reload: bool = False,
    environ: Mapping[str, str] | None = None,
) -> DevServer:
    """Check what ``handoff serve`` needs and build the ``langgraph dev`` command line.

    Without ``port``, 2024 is used if free, else any free port (``langgraph dev`` would
    switch ports by itself and the printed Studio link would be wrong). An explicit port
    that is taken is an error.
    """
    for module in ("langgraph_cli", "langgraph_api"):
        if importlib.util.find_spec(module) is None:
            raise ServeError(
                f"the dev server needs {module.replace('_', '-')}: install the 'server' "
                "extra, e.g. pip install -e '.[server]'"
            )
    if jobs < 1:
        raise ServeError(f"--jobs must be at least 1, got {jobs}")
    path = find_config(config)
    if port is None:
        port = DEFAULT_PORT if port_is_free(host, DEFAULT_PORT) else free_port(host)
    elif not port_is_free(host, port):
        raise ServeError(f"port {port} on {host} is in use; choose another with --port")
    argv = [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--config",
        str(path),
        "--host",
        host,
        "--port",
        str(port),
        "--n-jobs-per-worker",
        str(jobs),
        "--no-browser",
    ]
    if not reload:
        argv.append("--no-reload")
    env = dev_server_env(os.environ if environ is None else environ)
    return DevServer(config=path, host=host, port=port, argv=argv, env=env)


def dotenv_overrides(server: DevServer) -> list[str]:
    """``HANDOFF_*`` variables whose .env value the server uses over the environment's.

    ``langgraph dev`` loads .env over the environment; the CLI does the opposite. A
    variable set differently in both places makes the two disagree on where data lives.
    """
    env_file = server.cwd / ".env"
    if not env_file.is_file():
        return []
    from dotenv import dotenv_values

    return sorted(
        name
        for name, value in dotenv_values(env_file).items()
        if name.startswith("HANDOFF_")
        and name in server.env
        and value is not None
        and value != server.env[name]
    )


def exec_dev_server(server: DevServer) -> NoReturn:
    """Replace this process with the server, so its pid, signals and exit are the server's."""
    os.chdir(server.cwd)
    os.execve(server.argv[0], server.argv, server.env)


def banner(server: DevServer, settings: Settings) -> list[str]:
    """What ``handoff serve`` prints before the server starts: where to connect, where data goes."""
    url = settings.resolved_database_url()
    where = str(sqlite_path(url).resolve()) if url.startswith("sqlite:") else describe_url(url)
    artifacts = (
        f"in the database, beside the threads ({where})"
        if settings.resolved_artifact_store() == "database"
        else str(settings.resolved_artifact_dir().resolve())
    )
    return [
        f"serving graph {GRAPH_ID!r} from {server.config} with langgraph dev",
        f"  API:       {server.url}  (docs: {server.url}/docs)",
        f"  Studio:    {server.studio_url}",
        f"  threads:   {where}  (`handoff status <thread-id>` reads them)",
        f"  artifacts: {artifacts}",
        "stop with Ctrl-C",
    ]
