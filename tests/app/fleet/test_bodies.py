"""The Workflow a worker's jobs share, per thread, until the worker stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fleet import WORKFLOWS


def test_a_job_after_close_all_opens_a_workflow_on_the_settings_then_in_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDOFF_DATA_DIR", str(tmp_path / "before"))
    try:
        first = WORKFLOWS.current()
        assert WORKFLOWS.current() is first, "jobs on one thread share its Workflow"
        WORKFLOWS.close_all()
        monkeypatch.setenv("HANDOFF_DATA_DIR", str(tmp_path / "after"))
        second = WORKFLOWS.current()
        assert second is not first, "a closed Workflow is never handed to a job"
        assert second.settings.data_dir == tmp_path / "after"
    finally:
        WORKFLOWS.close_all()
