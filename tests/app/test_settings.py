"""Settings changed in code are validated like settings read from the environment."""

from __future__ import annotations

import os
from datetime import timedelta
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


@pytest.mark.parametrize(
    "typed",
    [
        pytest.param("{a}", id="one path"),
        pytest.param("{a}" + os.pathsep + "{b}", id="joined by the path separator"),
        pytest.param('["{a}", "{b}"]', id="a JSON list"),
        pytest.param(" {a}" + os.pathsep + os.pathsep + "{b} ", id="empty parts ignored"),
    ],
)
def test_a_list_setting_reads_the_forms_people_type(
    typed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    value = typed.format(a=a, b=b)
    monkeypatch.setenv("HANDOFF_CORPUS_ROOTS", value)
    monkeypatch.setenv("HANDOFF_CORPUS", value)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    expected = [a] if typed == "{a}" else [a, b]
    assert settings.corpus_roots == expected and settings.corpus == expected


def test_a_list_setting_that_is_no_list_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HANDOFF_CORPUS_ROOTS", '["unclosed"')
    with pytest.raises(ValueError, match="corpus_roots"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_the_retention_age_reads_as_people_type_it_and_a_bad_one_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HANDOFF_RETENTION_OLDER_THAN", "30d")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.retention_older_than == timedelta(days=30)
    assert settings.with_overrides(retention_keep_last=3).retention_older_than == timedelta(days=30)
    typed = settings.with_overrides(retention_older_than="90m")  # as the Python API sets it
    assert typed.retention_older_than == timedelta(minutes=90)
    monkeypatch.setenv("HANDOFF_RETENTION_OLDER_THAN", "a month")
    with pytest.raises(ValidationError, match="HANDOFF_RETENTION_OLDER_THAN: invalid duration"):
        Settings(_env_file=None)  # type: ignore[call-arg]
    monkeypatch.delenv("HANDOFF_RETENTION_OLDER_THAN")
    assert Settings(_env_file=None).retention_older_than is None  # type: ignore[call-arg]
