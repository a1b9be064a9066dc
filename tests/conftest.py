"""Shared fixtures: real SQLite files, real PostgreSQL schemas, real artifact folders."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from app.services import build_context
from app.settings import Settings
from app.workflow import Workflow
from contracts import Source
from graphs import ArtifactStore
from tests.backends import (
    BACKENDS,
    backend_settings,
    postgres_problem,
    postgres_required,
    postgres_url,
)
from tests.routes import WALKED, check_handoffs_follow_the_route, graph_edges, unwalked

OBJECTIVE = "Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs"


def pytest_report_header() -> str:
    problem = postgres_problem()
    if problem is None:
        return f"postgresql: {postgres_url()} reachable; backend tests run on sqlite and postgres"
    return (
        f"postgresql: UNREACHABLE at {postgres_url()} ({problem}); PostgreSQL tests will be "
        f"{'FAILED (HANDOFF_REQUIRE_POSTGRES=1)' if postgres_required() else 'SKIPPED'}"
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--routes-walked",
        action="store_true",
        help="fail the session when an edge a router's Literal names was walked by no test "
        "(make check and make test pass it; a run of a few tests would walk only some)",
    )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Which of the graph's edges the suite's threads walked (checked after each test)."""
    gated = config.getoption("routes_walked")
    if not WALKED and not gated:
        return
    edges = graph_edges()
    missed = sorted(edges - WALKED)
    terminalreporter.write_line(
        f"handoff routes: {len(WALKED & edges)} of {len(edges)} graph edges walked and checked"
        + (f"; not walked: {', '.join(f'{a}->{b}' for a, b in missed)}" if missed else "")
    )
    if gated:
        for line in unwalked(WALKED):
            terminalreporter.write_line(f"FAILED (--routes-walked) {line}", red=True)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Under ``-n``, the edges a worker walked join the session's (``pytest_sessionfinish``)."""
    WALKED.update((a, b) for a, b in getattr(node, "workeroutput", {}).get("walked", ()))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker of ``-n`` hands the edges its tests walked to the session that reports them.

    With ``--routes-walked`` the session fails when the graph has an edge none walked.
    """
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["walked"] = sorted(WALKED)
    elif session.config.getoption("routes_walked") and unwalked(WALKED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


SHARED_SERVERS = ("dev_server", "gated_server")
"""Module-scoped server fixtures (tests/server): a server per module and backend."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``-n --dist loadgroup``, the tests sharing one module-scoped server go to one
    worker, so that server starts once rather than on every worker that gets one of them."""
    if not hasattr(config, "workerinput"):
        return
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for name in SHARED_SERVERS:
            if name in params and isinstance(item, pytest.Function):
                item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}[{params[name]}]"))


class SlowFirst:
    """Under ``-n``, the SIGKILL loops, the servers' rounds and the other ``slow`` tests
    (minutes each) are handed out first, so no worker is still in one of them long after
    the others have finished."""

    @pytest.hookimpl(trylast=True)  # after the fixtures' own ordering, which it keeps
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items.sort(key=lambda item: not any(map(item.get_closest_marker, ("slow", "server"))))


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(SlowFirst(), "handoff-slow-first")


PROCESS_MARKS = ("e2e", "slow", "server")
"""Marks that let a test start processes; ``make check`` leaves all three out."""


@pytest.fixture(autouse=True)
def processes_are_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that starts a subprocess says so with a mark, so the fast loop stays fast.

    Each process (the ``handoff`` command, a copy of the project) costs seconds; the tests
    that need one are marked ``e2e`` and run in ``make test``, not in ``make check``.
    """
    if any(request.node.get_closest_marker(mark) for mark in PROCESS_MARKS):
        return
    started = subprocess.Popen.__init__

    def refuse(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        command = args[0] if args else kwargs.get("args")
        pytest.fail(
            f"{request.node.nodeid} starts a subprocess ({command!r}): mark it "
            "@pytest.mark.e2e (tests that start processes are left out of make check)",
            pytrace=False,
        )
        started(self, *args, **kwargs)  # not reached: pytest.fail raises

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@pytest.fixture(params=[pytest.param(kind, marks=getattr(pytest.mark, kind)) for kind in BACKENDS])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """Settings for one backend: an SQLite file, or a PostgreSQL schema of this test's own
    (dropped afterwards); artifacts in this test's folder or in that schema."""
    with backend_settings(request.param, tmp_path / "data") as chosen:
        yield chosen


@pytest.fixture
def settings(backend: Settings) -> Settings:
    """Settings pointing every store at this test's own folder (or schema), per backend.

    The model is pinned offline so a developer's HANDOFF_MODEL never reaches a real API.
    """
    return backend.with_overrides(model="offline", fault=None)


@pytest.fixture
def workflow(settings: Settings) -> Iterator[Workflow]:
    """An open Workflow on a fresh SQLite file."""
    with Workflow(settings) as opened:
        yield opened
        check_handoffs_follow_the_route(opened)


@pytest.fixture
def own_store_workflow(settings: Settings) -> Iterator[Workflow]:
    """An open Workflow on its database's own artifact store, whatever the environment names.

    For tests that damage stored bytes (``tests/app/store_faults``): those helpers know
    where the stores a database keeps by default put them, blob files or rows.
    """
    with Workflow(settings.with_overrides(artifact_store="auto")) as opened:
        yield opened
        check_handoffs_follow_the_route(opened)


def write_corpus(folder: Path, documents: dict[str, str]) -> Path:
    """Create a corpus folder with the given file names and texts."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in documents.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def stored_source(store: ArtifactStore, name: str, title: str, text: str) -> Source:
    """Source ``src-1``: ``text`` snapshotted in ``store`` as the file ``name`` read."""
    snapshot = store.put("t-src-1", "source", text.encode(), "text/markdown")
    return Source(
        id="src-1",
        uri=f"file:///corpus/{name}",
        title=title,
        retrieved_at=datetime(2026, 1, 1, tzinfo=UTC),
        sha256=snapshot.sha256,
        snapshot=snapshot,
    )


def nodes_run(workflow: Workflow, thread: str) -> list[str]:
    """The nodes of ``thread``'s audit in the order they ran: the path the graph took."""
    return [run.node_id for run in workflow.history(thread)]


def passes(ran: Sequence[str], *nodes: str) -> list[str]:
    """The visits of ``ran`` to ``nodes``, in the order they ran.

    A test states the path its behaviour is about, ``passes(ran, *path) == [*path]``: those
    nodes ran in that order, each as often as named. A node an adapted wiring puts between
    them (a check before review, a step after publishing) is no part of that path.
    """
    return [node for node in ran if node in nodes]


__all__ = ["OBJECTIVE", "build_context", "nodes_run", "passes", "write_corpus"]
