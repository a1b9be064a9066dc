"""The committed JSON Schemas are current, well-formed, described, and agree with the models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from contracts import VersionedContract, registered
from contracts.registry import JSON_SCHEMA_DIALECT, SCHEMA_DIR, export_schemas, render_schema
from tests.contracts.examples import EXAMPLES, contract_id

REGENERATE = "run `python -m contracts` to regenerate contracts/schemas/ and commit the result"

CONTRACTS = registered()
contracts = pytest.mark.parametrize("model", CONTRACTS, ids=contract_id)


def committed_schema(model: type[VersionedContract]) -> dict[str, Any]:
    path = SCHEMA_DIR / f"{model.__name__}.json"
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


def resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/Name``) to its target; other nodes are returned as is."""
    ref = node.get("$ref")
    if ref is None:
        return node
    assert ref.startswith("#/$defs/"), f"unexpected non-local $ref {ref!r}"
    target: dict[str, Any] = root["$defs"][ref.removeprefix("#/$defs/")]
    return target


def object_schemas(root: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The top-level schema and every ``$defs`` entry, named by their JSON pointer."""
    yield "#", root
    for name, definition in root.get("$defs", {}).items():
        yield f"#/$defs/{name}", definition


def is_described(root: dict[str, Any], prop: dict[str, Any]) -> bool:
    """A property carries a description itself, or only wraps described ``$ref`` targets."""
    if prop.get("description"):
        return True
    if "$ref" in prop:
        return bool(resolve(root, prop).get("description"))
    for wrapper in ("allOf", "anyOf"):
        if wrapper in prop:
            branches = [branch for branch in prop[wrapper] if branch.get("type") != "null"]
            return bool(branches) and all(is_described(root, branch) for branch in branches)
    return False


@contracts
def test_committed_schema_file_equals_the_rendered_current_schema(
    model: type[VersionedContract],
) -> None:
    path = SCHEMA_DIR / f"{model.__name__}.json"
    assert path.is_file(), f"{path.name} is missing: {REGENERATE}"
    assert path.read_text(encoding="utf-8") == render_schema(model), (
        f"{path.name} is stale: {REGENERATE}"
    )


def test_schema_folder_holds_no_file_for_a_contract_that_is_gone() -> None:
    expected = {f"{model.__name__}.json" for model in CONTRACTS}
    present = {path.name for path in SCHEMA_DIR.iterdir()}
    assert present - expected == set(), (
        f"stale files in contracts/schemas/: {sorted(present - expected)}; "
        f"delete them and {REGENERATE}"
    )


def test_export_schemas_reproduces_the_committed_folder_byte_for_byte(tmp_path: Path) -> None:
    written = export_schemas(tmp_path)
    assert sorted(path.name for path in written) == sorted(p.name for p in SCHEMA_DIR.iterdir())
    for path in written:
        committed = SCHEMA_DIR / path.name
        assert path.read_bytes() == committed.read_bytes(), f"{path.name} differs: {REGENERATE}"


@contracts
def test_committed_schema_is_a_valid_draft_2020_12_schema(model: type[VersionedContract]) -> None:
    schema = committed_schema(model)
    Draft202012Validator.check_schema(schema)
    assert (
        schema["$schema"] == JSON_SCHEMA_DIALECT == "https://json-schema.org/draft/2020-12/schema"
    )
    assert schema["$id"] == f"{model.__name__}.json"


@contracts
def test_committed_schema_forbids_additional_properties_at_every_object_level(
    model: type[VersionedContract],
) -> None:
    schema = committed_schema(model)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    open_objects = [
        pointer
        for pointer, node in object_schemas(schema)
        if node.get("type") == "object" and node.get("additionalProperties") is not False
    ]
    assert open_objects == [], f"objects accepting unknown properties: {open_objects}"


@contracts
def test_committed_schema_describes_every_property_including_defs(
    model: type[VersionedContract],
) -> None:
    schema = committed_schema(model)
    assert schema.get("description"), f"{model.__name__} itself has no description"
    undescribed = [
        f"{pointer}/properties/{name}"
        for pointer, node in object_schemas(schema)
        for name, prop in node.get("properties", {}).items()
        if not is_described(schema, prop)
    ]
    assert undescribed == [], f"properties without a description: {undescribed}"


@contracts
def test_schema_version_is_pinned_to_the_contracts_own_current_version_in_the_schema(
    model: type[VersionedContract],
) -> None:
    prop = committed_schema(model)["properties"]["schema_version"]
    assert prop["enum"] == [model.VERSION]
    assert prop["default"] == model.VERSION
    assert f"writers write {model.VERSION}" in prop["description"]


@contracts
def test_valid_example_instance_validates_against_its_committed_schema(
    model: type[VersionedContract],
) -> None:
    instance = EXAMPLES[model].model_dump(mode="json")
    errors = list(Draft202012Validator(committed_schema(model)).iter_errors(instance))
    assert errors == [], [error.message for error in errors]


@contracts
def test_committed_schema_rejects_an_instance_with_an_extra_field(
    model: type[VersionedContract],
) -> None:
    instance = {**EXAMPLES[model].model_dump(mode="json"), "surprise_field": 1}
    errors = list(Draft202012Validator(committed_schema(model)).iter_errors(instance))
    assert [error.validator for error in errors] == ["additionalProperties"]
    assert "surprise_field" in errors[0].message


@contracts
@pytest.mark.parametrize("version", ["0.9", "2.0"])
def test_committed_schema_rejects_an_instance_with_an_unsupported_schema_version(
    model: type[VersionedContract], version: str
) -> None:
    instance = {**EXAMPLES[model].model_dump(mode="json"), "schema_version": version}
    errors = list(Draft202012Validator(committed_schema(model)).iter_errors(instance))
    assert [(list(error.absolute_path), error.validator) for error in errors] == [
        (["schema_version"], "enum")
    ]
