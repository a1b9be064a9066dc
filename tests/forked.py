"""The ``handoff`` CLI in a fresh process that skips the interpreter's start-up.

A ``handoff`` process spends about two seconds importing LangGraph, LangChain, pydantic and
the project before it does anything; the end-to-end tests start it a thousand times. Here a
server process (one per test process, started at the first call) imports all of that once
and forks a child for each command: the child is a real process of its own, with its own
pid, environment, working folder, standard streams and exit status, that a test can
SIGKILL at any moment. It runs the same entry point the ``handoff`` script runs
(``app.cli.main``) and ends the way that script ends (``sys.exit``, then the interpreter's
own shutdown: atexit handlers, non-daemon threads, flushed streams).

What the server imports is every module the CLI needs except ``app.cli`` itself, whose
consoles read the terminal and the environment when they are made: the child imports it
under the command's own environment. Tests about the interpreter's start-up itself (what
a fresh process imports, how long ``handoff --version`` takes) start the script instead.

A request is one ``SOCK_SEQPACKET`` message: the command as JSON, and the child's stdin,
stdout and stderr as file descriptors (``SCM_RIGHTS``). The server answers with the
child's pid, then, once it has reaped the child, its wait status and CPU time. The server
never runs a second thread, so a fork never copies a lock some other thread holds.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

WARM_MODULES = (
    "app.opening",
    "app.workflow",
    "app.agents",
    "app.a2a.service",
    "app.fleet.worker",
    "app.storage.backends.postgres",
    "typer",
    "rich.console",
)
"""What the server imports before it forks: the CLI's dependencies, not the CLI."""
COLD_MODULES = ("app.cli",)
"""Modules that must be imported in the child, under the command's environment."""
MESSAGE_BYTES = 1 << 20
SCRIPT = Path(sys.executable).parent / "handoff"
"""What the child's ``sys.argv[0]`` names, as when the installed script starts it."""


@dataclass
class Forked:
    """A CLI process the server forked: its pid, and how it ended once it has."""

    pid: int
    channel: socket.socket
    args: Sequence[str]
    returncode: int | None = None
    cpu: float = 0.0
    """CPU seconds (user + system) the process used, known once it has ended."""

    def poll(self) -> int | None:
        """The exit code (``-N`` for signal N, as ``subprocess`` says it), or None if running."""
        if self.returncode is None:
            self.channel.setblocking(False)
            try:
                self._ended(self.channel.recv(256))
            except BlockingIOError:
                pass
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the process to end; past ``timeout`` it is killed and TimeoutExpired raised."""
        if self.returncode is None:
            self.channel.setblocking(True)
            self.channel.settimeout(timeout)
            try:
                self._ended(self.channel.recv(256))
            except TimeoutError:
                self.kill()
                self.channel.settimeout(None)
                self._ended(self.channel.recv(256))
                raise subprocess.TimeoutExpired(list(self.args), timeout or 0.0) from None
        assert self.returncode is not None
        return self.returncode

    def ended(self) -> tuple[int, float] | None:
        """Its exit code and CPU seconds once it has ended (``bench.p6_crash_loop.Running``)."""
        code = self.poll()
        return None if code is None else (code, self.cpu)

    def kill(self) -> None:
        """SIGKILL the process (nothing happens if it has ended)."""
        self.send_signal(signal.SIGKILL)

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the process if it is still running."""
        if self.returncode is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def _ended(self, message: bytes) -> None:
        if not message:
            raise RuntimeError(f"the fork server went away while {self.args} ran")
        _, status, user, system = message.decode().split()
        self.returncode = os.waitstatus_to_exitcode(int(status))
        self.cpu = float(user) + float(system)
        self.channel.close()


def start(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str | None = None,
    stdin: int | IO[bytes] | None = None,
    stdout: int | IO[bytes] | IO[str] | None = None,
    stderr: int | IO[bytes] | IO[str] | None = None,
) -> Forked:
    """Start ``handoff *args`` in a forked process; streams default to /dev/null."""
    with open(os.devnull, "r+b") as null:
        fds = [_fd(stream, null) for stream in (stdin, stdout, stderr)]
        channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        channel.connect(str(server()))
        command = [str(SCRIPT), *args]
        request = {"args": command, "env": dict(env), "cwd": str(cwd or os.getcwd())}
        socket.send_fds(channel, [json.dumps(request).encode()], fds)
    answer = channel.recv(256).decode()
    if not answer.startswith("pid "):
        raise RuntimeError(f"the fork server refused {list(args)}: {answer}")
    return Forked(int(answer.split()[1]), channel, list(args))


def run(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(["handoff", *args], capture_output=True, text=True)``, forked."""
    with (
        tempfile.TemporaryFile() as given,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        given.write((input or "").encode())
        given.seek(0)
        process = start(args, env=env, cwd=cwd, stdin=given, stdout=out, stderr=err)
        code = process.wait(timeout)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            [str(SCRIPT), *args], code, out.read().decode(), err.read().decode()
        )


def _fd(stream: int | IO[bytes] | IO[str] | None, null: IO[bytes]) -> int:
    if stream is None or stream == subprocess.DEVNULL:
        return null.fileno()
    return stream if isinstance(stream, int) else stream.fileno()


@functools.cache
def server() -> Path:
    """The socket of this process's fork server, started at the first call."""
    folder = Path(tempfile.mkdtemp(prefix="handoff-fork-"))
    path = folder / "server.sock"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.forked", str(path)],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.DEVNULL,
    )
    atexit.register(process.kill)
    deadline = time.monotonic() + 120
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the fork server did not start (exit {process.returncode})")
        time.sleep(0.02)
    return path


def serve(path: Path) -> None:
    """Import the CLI's dependencies, then fork one child per request, until killed."""
    for module in WARM_MODULES:
        __import__(module)
    early = [name for name in COLD_MODULES if name in sys.modules]
    if early:
        raise RuntimeError(f"{early} were imported before a fork: the child must import them")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path.with_suffix(".binding")))
    listener.listen(64)
    os.rename(path.with_suffix(".binding"), path)  # the client waits for this name
    waiting: dict[int, socket.socket] = {}
    events = selectors.DefaultSelector()
    events.register(listener, selectors.EVENT_READ)
    while True:
        if events.select(timeout=0.01):
            channel, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, 3)
            pid = os.fork()
            if pid == 0:
                events.close()
                listener.close()
                for other in waiting.values():
                    other.close()
                become_cli(json.loads(message), fds, channel)
            for fd in fds:
                os.close(fd)
            channel.send(f"pid {pid}".encode())
            waiting[pid] = channel
        reap(waiting)


def reap(waiting: dict[int, socket.socket]) -> None:
    """Tell each ended child's client how it ended."""
    while waiting:
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            return
        channel = waiting.pop(pid)
        try:
            channel.send(f"exit {status} {usage.ru_utime} {usage.ru_stime}".encode())
        except OSError:  # the client is gone: nobody to tell
            pass
        channel.close()


def become_cli(request: dict[str, object], fds: list[int], channel: socket.socket) -> None:
    """In the child: the command's streams, folder and environment, then the CLI."""
    channel.close()
    os.setsid()  # its own process group: a test may signal the group, never the server's
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    args = request["args"]
    assert isinstance(args, list)
    sys.argv = [str(arg) for arg in args]
    sys.path[0] = str(SCRIPT.parent)  # where the script's interpreter looks first
    script = types.ModuleType("__main__")  # click names the program from __main__
    script.__file__ = str(SCRIPT)
    sys.modules["__main__"] = script
    from app.cli import main

    sys.exit(main())  # up through serve and out of the interpreter, as the script ends


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
