"""Settings changed in code are validated like settings read from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from app.settings import Settings
from app.workflow import Workflow


def test_overrides_are_validated_naming_the_field(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="artifact_store"):
        settings.with_overrides(artifact_store="s3")
    with pytest.raises(ValidationError, match="invalid HANDOFF_FAULT rule 'kill:writer'"):
        settings.with_overrides(fault="kill:writer")
    with pytest.raises(ValidationError, match="database_timeout"):
        settings.with_overrides(database_timeout=-1)
    assert settings.with_overrides(database_timeout=3).database_timeout == 3


def test_a_workflow_override_is_validated_too(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="database_url"):
        Workflow(settings, database_url=42)  # type: ignore[arg-type]
