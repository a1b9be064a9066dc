"""Shared fixtures: real SQLite files and real artifact folders under tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.services import build_context
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow

OBJECTIVE = "Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings pointing every store at this test's own folder."""
    return Settings(
        data_dir=tmp_path / "data",
        database_url=f"sqlite:///{tmp_path / 'data' / 'handoff.db'}",
        artifact_dir=tmp_path / "data" / "artifacts",
        corpus=[BUNDLED_CORPUS],
    )


@pytest.fixture
def workflow(settings: Settings) -> Iterator[Workflow]:
    """An open Workflow on a fresh SQLite file."""
    with Workflow(settings) as opened:
        yield opened


def write_corpus(folder: Path, documents: dict[str, str]) -> Path:
    """Create a corpus folder with the given file names and texts."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in documents.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


__all__ = ["OBJECTIVE", "build_context", "write_corpus"]
