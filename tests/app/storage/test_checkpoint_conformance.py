"""LangGraph's public checkpointer conformance suite, against every saver the project builds.

* ``workflow``: what ``Workflow`` checkpoints through (``open_backend(...).saver``): a
  SingleWriterSaver around BlobSqliteSaver, PostgresSaver (on the shared pool) or
  InMemorySaver. Its async methods run the sync ones in a worker thread, so this validates
  the sync savers.
* ``locked``: the same PostgreSQL saver while its thread is held, so every write goes
  through the PostgresSaver on the advisory lock's own connection.
* ``server``: what ``langgraph dev`` checkpoints through (``open_async_checkpointer``):
  AsyncBlobSqliteSaver, AsyncPostgresSaver or InMemorySaver.

Every base capability must pass; extended ones a saver implements must pass too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport

from app.settings import Settings
from app.storage.backends import open_backend
from app.storage.checkpointing import SingleWriterSaver
from tests.backends import backend_settings


def _factory(settings: Settings, layer: str) -> Any:
    @checkpointer_test(name=f"{layer}:{settings.resolved_database_url().split(':')[0]}")
    async def saver() -> AsyncIterator[BaseCheckpointSaver[Any]]:
        if layer == "server":
            from app.server.checkpointer import open_async_checkpointer

            async with open_async_checkpointer(settings.resolved_database_url()) as opened:
                yield opened
            return
        with open_backend(settings) as backend:
            if layer == "workflow":
                yield backend.saver
                return
            with backend.lock.hold("conformance-writer"):
                writer = backend.lock.writer("conformance-writer")
                assert writer is not None and writer is not backend.saver.inner
                yield SingleWriterSaver(backend.saver.inner, lambda _thread_id: writer)

    return saver


def _summary(report: CapabilityReport) -> str:
    lines = []
    for capability, result in sorted(report.results.items()):
        lines.append(
            f"{capability}: detected={result.detected} passed={result.passed} "
            f"failures={result.failures}"
        )
    return "\n".join(lines)


def _check(report: CapabilityReport) -> None:
    assert report.passed_all_base(), _summary(report)
    assert report.passed_all(), _summary(report)


@pytest.mark.parametrize("layer", ["workflow", "server"])
def test_every_saver_passes_the_conformance_suite(backend: Settings, layer: str) -> None:
    _check(asyncio.run(validate(_factory(backend, layer))))


@pytest.mark.postgres
def test_the_saver_on_the_postgres_lock_connection_passes_the_conformance_suite(
    tmp_path: Path,
) -> None:
    with backend_settings("postgres", tmp_path / "data") as settings:
        _check(asyncio.run(validate(_factory(settings, "locked"))))


@pytest.mark.parametrize("layer", ["workflow", "server"])
def test_the_memory_savers_pass_the_conformance_suite(tmp_path: Path, layer: str) -> None:
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    _check(asyncio.run(validate(_factory(settings, layer))))
