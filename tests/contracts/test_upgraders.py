"""Per-contract versions: older payloads are upgraded step by step, unknown ones refused."""

from __future__ import annotations

import json
import logging
from typing import Any, ClassVar

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel, Field, ValidationError

from contracts import VersionedContract, registered, upgrader


class Note(VersionedContract):
    """A note whose shape changed twice: 1.0 had ``body``; 1.1 renamed it; 1.2 added tags."""

    VERSION: ClassVar[str] = "1.2"

    text: str = Field(description="The note.")
    tags: list[str] = Field(default_factory=list, description="Tags.")

    @upgrader(from_version="1.0", to_version="1.1")
    @classmethod
    def _body_became_text(cls, data: dict[str, Any]) -> dict[str, Any]:
        data["text"] = data.pop("body")
        return data

    @upgrader(from_version="1.1", to_version="1.2")
    @classmethod
    def _tags_split_out_of_text(cls, data: dict[str, Any]) -> dict[str, Any]:
        text, _, tags = data["text"].partition(" #")
        return {**data, "text": text, "tags": [tag for tag in tags.split(" #") if tag]}


class Folder(VersionedContract):
    """Holds notes: nested contracts of an older version are upgraded too."""

    notes: list[Note] = Field(description="The notes.")


class Fragile(VersionedContract):
    """An upgrader that fails on data it does not expect."""

    VERSION: ClassVar[str] = "2.0"

    value: int = Field(description="A number.")

    @upgrader(from_version="1.0", to_version="2.0")
    @classmethod
    def _value_was_text(cls, data: dict[str, Any]) -> dict[str, Any]:
        data["value"] = int(data.pop("value_text"))
        return data


class _NoteAsVersion10Wrote(BaseModel):
    """What the code of version 1.0 stored: same module and class name, the old shape."""

    schema_version: str = "1.0"
    body: str


_NoteAsVersion10Wrote.__name__ = _NoteAsVersion10Wrote.__qualname__ = "Note"

OLD = {"schema_version": "1.0", "body": "Check the Canopus decree #sources #dates"}


def test_a_contract_declares_its_chain_oldest_first() -> None:
    assert Note.VERSION == "1.2"
    assert Note.SUPPORTED_VERSIONS == ("1.0", "1.1", "1.2")
    assert Note.model_fields["schema_version"].default == "1.2"
    assert Folder.SUPPORTED_VERSIONS == ("1.0",)


def test_test_contracts_stay_out_of_the_project_registry() -> None:
    assert Note not in registered()


def test_model_validate_upgrades_a_payload_through_every_step() -> None:
    note = Note.model_validate(OLD)
    assert note == Note(text="Check the Canopus decree", tags=["sources", "dates"])
    assert note.schema_version == "1.2"


def test_model_validate_upgrades_from_an_intermediate_version() -> None:
    note = Note.model_validate({"schema_version": "1.1", "text": "Ask a person #human"})
    assert (note.text, note.tags, note.schema_version) == ("Ask a person", ["human"], "1.2")


def test_model_validate_json_upgrades_an_old_payload() -> None:
    assert Note.model_validate_json(json.dumps(OLD)).tags == ["sources", "dates"]


def test_the_constructor_upgrades_as_langgraph_calls_it_with_the_stored_fields() -> None:
    assert Note(**OLD).text == "Check the Canopus decree"


def test_a_current_payload_is_not_touched_by_upgraders() -> None:
    note = Note.model_validate({"schema_version": "1.2", "text": "a #b", "tags": []})
    assert (note.text, note.tags) == ("a #b", [])


def test_an_older_nested_contract_is_upgraded_inside_its_parent() -> None:
    folder = Folder.model_validate({"notes": [OLD, {"text": "new", "schema_version": "1.2"}]})
    assert [note.text for note in folder.notes] == ["Check the Canopus decree", "new"]
    assert {note.schema_version for note in folder.notes} == {"1.2"}


@pytest.mark.parametrize("version", ["0.9", "1.3", "2.0", ""])
def test_an_unknown_or_newer_version_is_refused_naming_the_contract_and_supported_ones(
    version: str,
) -> None:
    with pytest.raises(ValidationError) as caught:
        Note.model_validate({**OLD, "schema_version": version})
    message = str(caught.value)
    assert f"unsupported schema_version {version!r} for Note; supported: 1.0, 1.1, 1.2" in message


class Bumped(VersionedContract):
    """A contract whose version went up with no upgrader for the payloads stored before."""

    VERSION: ClassVar[str] = "1.1"
    text: str


def test_a_version_older_than_any_upgrader_reads_is_told_which_upgrader_to_add() -> None:
    with pytest.raises(ValidationError) as caught:
        Bumped.model_validate({"schema_version": "1.0", "text": "kept"})
    message = str(caught.value)
    assert "unsupported schema_version '1.0' for Bumped; supported: 1.1" in message
    assert '@upgrader(from_version="1.0", to_version="1.1")' in message


def test_a_version_newer_than_the_code_is_told_newer_code_wrote_it() -> None:
    with pytest.raises(ValidationError, match="newer code wrote it"):
        Bumped.model_validate({"schema_version": "1.10", "text": "kept"})


def test_an_upgrader_that_fails_is_a_validation_error_naming_the_step() -> None:
    with pytest.raises(ValidationError) as caught:
        Fragile.model_validate({"schema_version": "1.0", "value_text": "seven"})
    message = str(caught.value)
    assert "Fragile._value_was_text could not upgrade a schema_version '1.0' payload" in message
    assert "'2.0'" in message


def test_assigning_an_older_version_is_refused_rather_than_half_upgraded() -> None:
    note = Note(text="x")
    with pytest.raises(ValidationError, match="older than Note '1.2'"):
        note.schema_version = "1.0"
    assert note.schema_version == "1.2"


def test_an_old_object_read_by_langgraphs_serializer_comes_back_upgraded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    serde = JsonPlusSerializer(allowed_msgpack_modules=[Note])
    stored = serde.dumps_typed(_NoteAsVersion10Wrote(body=OLD["body"]))
    with caplog.at_level(logging.WARNING):
        restored = serde.loads_typed(stored)
    assert caplog.records == []
    assert type(restored) is Note
    assert restored == Note(text="Check the Canopus decree", tags=["sources", "dates"])


def test_an_unreadable_old_object_falls_back_to_construct_and_fails_revalidation() -> None:
    # LangGraph revives with model_construct when the constructor raises; every node
    # re-validates what it reads, which is where such an object must fail loudly.
    half = Fragile.model_construct(schema_version="1.0")
    with pytest.raises(ValidationError, match="Fragile._value_was_text could not upgrade"):
        Fragile.model_validate(half)


def define(body: dict[str, Any]) -> type[VersionedContract]:
    return type("Broken", (VersionedContract,), {"__module__": __name__, **body})


def unchanged(cls: Any, data: dict[str, Any]) -> dict[str, Any]:
    return data


@pytest.mark.parametrize(
    ("version", "steps", "problem"),
    [
        pytest.param(
            "1.2",
            [("1.0", "1.1")],
            "upgrading '1.0' stops at '1.1'",
            id="a-chain-that-stops-short-of-the-current-version",
        ),
        pytest.param(
            "1.1",
            [("1.0", "1.1"), ("1.0", "1.1")],
            "two upgraders from '1.0'",
            id="two-upgraders-from-one-version",
        ),
        pytest.param(
            "1.1",
            [("1.1", "1.2")],
            "upgrades from its current version '1.1'",
            id="an-upgrader-from-the-current-version",
        ),
    ],
)
def test_a_broken_upgrade_chain_fails_at_definition(
    version: str, steps: list[tuple[str, str]], problem: str
) -> None:
    upgraders = {
        f"step_{number}": upgrader(from_version=source, to_version=target)(classmethod(unchanged))
        for number, (source, target) in enumerate(steps)
    }
    with pytest.raises(TypeError, match=problem):
        define({"VERSION": version, **upgraders})


def test_upgrader_must_sit_above_classmethod() -> None:
    with pytest.raises(TypeError, match="above @classmethod"):
        upgrader(from_version="1.0", to_version="1.1")(unchanged)


@pytest.mark.parametrize(("source", "target"), [("1", "1.1"), ("1.0", "v2"), ("1.0", "1.0")])
def test_upgrader_versions_must_be_distinct_major_minor(source: str, target: str) -> None:
    with pytest.raises(ValueError, match="MAJOR.MINOR|upgrades nothing"):
        upgrader(from_version=source, to_version=target)


def test_a_contract_may_not_declare_schema_version_itself() -> None:
    with pytest.raises(TypeError, match="set VERSION instead"):
        define({"__annotations__": {"schema_version": "str"}, "schema_version": "1.0"})


def test_version_must_be_major_minor() -> None:
    with pytest.raises(TypeError, match="not MAJOR.MINOR"):
        define({"VERSION": "2"})
