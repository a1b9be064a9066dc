"""Top-level contracts refuse versions and fields they do not know, even on ready-made instances."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from contracts import (
    ArtifactRef,
    Budget,
    DraftArticle,
    TaskSpec,
    VersionedContract,
    registered,
)
from tests.contracts.examples import EXAMPLES, contract_id

BAD_VERSIONS = ["0.9", "2.0"]

CONTRACTS = registered()
contracts = pytest.mark.parametrize("model", CONTRACTS, ids=contract_id)
bad_versions = pytest.mark.parametrize("version", BAD_VERSIONS)


def valid_data(model: type[VersionedContract]) -> dict[str, Any]:
    return EXAMPLES[model].model_dump(mode="json")


def assert_names_unsupported_version(
    error: ValidationError, model: type[VersionedContract], version: str
) -> None:
    assert [e["loc"] for e in error.errors()] == [("schema_version",)]
    message = str(error)
    assert "schema_version" in message
    assert repr(version) in message
    assert f"supported: {', '.join(model.SUPPORTED_VERSIONS)}" in message


@contracts
def test_each_contract_writes_its_own_current_version_the_last_one_it_reads(
    model: type[VersionedContract],
) -> None:
    assert model.SUPPORTED_VERSIONS[-1] == model.VERSION
    assert set(model.SUPPORTED_VERSIONS[:-1]) == set(model.UPGRADE_STEPS)
    assert EXAMPLES[model].schema_version == model.VERSION
    assert model.model_construct().schema_version == model.VERSION


Validate = Callable[[type[VersionedContract], dict[str, Any]], object]
validators = pytest.mark.parametrize(
    "validate",
    [
        pytest.param(lambda model, data: model.model_validate(data), id="model_validate"),
        pytest.param(
            lambda model, data: model.model_validate_json(json.dumps(data)),
            id="model_validate_json",
        ),
    ],
)


@contracts
@bad_versions
@validators
def test_validating_an_unknown_schema_version_is_refused_naming_it_and_the_supported_ones(
    model: type[VersionedContract], version: str, validate: Validate
) -> None:
    with pytest.raises(ValidationError) as caught:
        validate(model, {**valid_data(model), "schema_version": version})
    assert_names_unsupported_version(caught.value, model, version)


@contracts
@bad_versions
def test_assigning_an_unknown_schema_version_is_refused(
    model: type[VersionedContract], version: str
) -> None:
    instance = EXAMPLES[model].model_copy(deep=True)
    with pytest.raises(ValidationError) as caught:
        instance.schema_version = version
    assert_names_unsupported_version(caught.value, model, version)
    assert instance.schema_version == model.VERSION


DROPPED = {
    ("DecisionLog", "1.0"),
    ("FreshnessReport", "1.0"),
    ("Handoff", "1.0"),
    ("HumanDecision", "1.0"),
    ("HumanRequest", "1.0"),
    ("NodeRun", "1.0"),
    ("ResearchBundle", "1.0"),
    ("ReviewResult", "1.0"),
}
"""Versions the project wrote once and no longer reads: their upgraders were dropped."""


def older_versions(model: type[VersionedContract]) -> list[str]:
    major, minor = (int(part) for part in model.VERSION.split("."))
    return [f"{major}.{older}" for older in range(minor)]


def test_the_older_versions_no_contract_reads_any_more_are_the_dropped_ones() -> None:
    unread = {
        (model.__name__, version)
        for model in CONTRACTS
        for version in older_versions(model)
        if version not in model.SUPPORTED_VERSIONS
    }
    assert unread == DROPPED


@pytest.mark.parametrize(("name", "version"), sorted(DROPPED))
def test_a_payload_of_a_dropped_version_is_refused_naming_the_contract_and_the_version(
    name: str, version: str
) -> None:
    model = next(model for model in CONTRACTS if model.__name__ == name)
    with pytest.raises(ValidationError) as caught:
        model.model_validate({**valid_data(model), "schema_version": version})
    assert_names_unsupported_version(caught.value, model, version)
    supported = ", ".join(model.SUPPORTED_VERSIONS)
    assert f"unsupported schema_version {version!r} for {name}; supported: {supported}" in str(
        caught.value
    )


@contracts
def test_unknown_extra_field_is_refused_naming_the_field(model: type[VersionedContract]) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate({**valid_data(model), "surprise_field": "x"})
    assert [(e["loc"], e["type"]) for e in caught.value.errors()] == [
        (("surprise_field",), "extra_forbidden")
    ]
    assert "surprise_field" in str(caught.value)


@contracts
@bad_versions
def test_model_validate_of_an_unvalidated_instance_revalidates_its_schema_version(
    model: type[VersionedContract], version: str
) -> None:
    # LangGraph's checkpoint deserializer falls back to model_construct on schema drift.
    constructed = model.model_construct(**{**dict(EXAMPLES[model]), "schema_version": version})
    assert constructed.schema_version == version
    with pytest.raises(ValidationError) as caught:
        model.model_validate(constructed)
    assert_names_unsupported_version(caught.value, model, version)


@contracts
def test_model_validate_of_an_unvalidated_instance_reports_missing_required_fields(
    model: type[VersionedContract],
) -> None:
    required = sorted(name for name, field in model.model_fields.items() if field.is_required())
    assert required, f"{model.__name__} has no required field to drop"
    with pytest.raises(ValidationError) as caught:
        model.model_validate(model.model_construct())
    missing = sorted(str(e["loc"][0]) for e in caught.value.errors() if e["type"] == "missing")
    assert missing == required


@contracts
def test_model_validate_of_a_valid_instance_returns_an_equal_copy(
    model: type[VersionedContract],
) -> None:
    example = EXAMPLES[model]
    revalidated = model.model_validate(example)
    assert revalidated == example
    assert revalidated is not example


def test_revalidation_reaches_an_unvalidated_nested_contract() -> None:
    body = ArtifactRef.model_construct(**{**dict(EXAMPLES[ArtifactRef]), "revision": 0})
    draft = DraftArticle.model_construct(**{**dict(EXAMPLES[DraftArticle]), "body": body})
    with pytest.raises(ValidationError) as caught:
        DraftArticle.model_validate(draft)
    assert [e["loc"] for e in caught.value.errors()] == [("body", "revision")]


def test_revalidation_refuses_a_naive_deadline_smuggled_in_by_model_construct() -> None:
    budget = Budget.model_construct(deadline=datetime(2030, 1, 1))
    task = TaskSpec.model_construct(**{**dict(EXAMPLES[TaskSpec]), "budget": budget})
    with pytest.raises(ValidationError) as caught:
        TaskSpec.model_validate(task)
    assert [e["loc"] for e in caught.value.errors()] == [("budget", "deadline")]
    assert "timezone" in str(caught.value)


def test_revalidation_accepts_nested_contracts_left_as_plain_dicts() -> None:
    # LangGraph's msgpack serde hands nested models to model_construct as dicts.
    example = EXAMPLES[DraftArticle]
    data = {**dict(example), "body": example.body.model_dump(mode="json")}
    assert DraftArticle.model_validate(DraftArticle.model_construct(**data)) == example


def test_a_datetime_that_overflows_when_converted_to_utc_is_a_validation_error() -> None:
    early = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    with pytest.raises(ValidationError) as caught:
        Budget(deadline=early)
    assert [e["loc"] for e in caught.value.errors()] == [("deadline",)]
    assert "out of range in UTC" in str(caught.value)


@pytest.mark.parametrize("name", ["summary", "upgrade", "unsupported"])
def test_a_field_hiding_a_method_every_contract_has_is_refused_naming_it(name: str) -> None:
    with pytest.raises(TypeError, match=rf"declares the field {name!r}, which would hide the"):
        type("Shadowing", (VersionedContract,), {"__annotations__": {name: "str"}, name: "x"})
