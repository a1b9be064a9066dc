"""Shared base for every contract: strict, described, versioned per contract, registered."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import FunctionType
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict

from contracts.upgrades import VERSION_PATTERN, distance, upgrade_steps, version_key

INITIAL_VERSION = "1.0"
"""The version a contract has until it declares another ``VERSION``."""

ProseText = Annotated[str, Field(min_length=1, max_length=2000)]
"""Prose a person or the task gives (an objective, a question, a constraint): one limit
for every contract that carries it, so what one accepts the next can hold."""

Identifier = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="A short identifier: letters, digits, '.', '_' and '-'.",
    ),
]
Sha256Hex = Annotated[
    str,
    Field(pattern=r"^[0-9a-f]{64}$", description="Lower-case hex sha256 digest (64 chars)."),
]


def _to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("datetime must include a timezone, e.g. 2030-01-01T00:00:00Z")
    try:
        return value.astimezone(UTC)
    except OverflowError as error:
        raise ValueError(f"datetime {value.isoformat()} is out of range in UTC") from error


UtcDatetime = Annotated[datetime, AfterValidator(_to_utc)]
"""A timezone-aware instant, normalised to UTC so it survives JSON exactly."""

_DURATION = re.compile(r"^(?:(\d{1,9})d)?(?:(\d{1,9})h)?(?:(\d{1,9})m)?(?:(\d{1,9})s)?$")
LONGEST_DURATION = timedelta(days=366)


def short_duration(text: str) -> timedelta | None:
    """A duration as people type it ("24h", "90m", "1h30m", "2d", "45s"), else None.

    The one reading of such text: the task's policies and the settings and flags of
    ``app`` (retention) all take durations through it.
    """
    match = _DURATION.match(text.strip())
    if match is None or not any(match.groups()):
        return None
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def _duration(value: Any) -> Any:
    """A short duration to a timedelta; ISO 8601 ("PT24H") and seconds are pydantic's."""
    if not isinstance(value, str) or value.strip().upper().startswith("P"):
        return value
    span = short_duration(value)
    if span is None:
        raise ValueError(
            f'{value!r} is no duration: expected e.g. "24h", "90m", "1h30m", "2d" or "PT24H"'
        )
    return span


def _positive(value: timedelta) -> timedelta:
    if value <= timedelta(0) or value > LONGEST_DURATION:
        raise ValueError(
            f"duration must be more than 0 and at most {LONGEST_DURATION.days} days, "
            'e.g. "24h", "90m", "2d" or "PT24H"'
        )
    return value


Duration = Annotated[timedelta, BeforeValidator(_duration), AfterValidator(_positive)]
"""A positive span of time: "24h", "90m", "1h30m", "2d", "45s", ISO 8601 or seconds."""


def first_problem(error: ValidationError) -> tuple[str, str]:
    """Where (dotted path) and what the first problem of a validation error is."""
    first = error.errors()[0]
    return ".".join(str(part) for part in first["loc"]), first["msg"]


class Contract(BaseModel):
    """Base for nested contract parts: unknown fields are an error, never ignored."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, revalidate_instances="always"
    )

    NOT_WORK: ClassVar[frozenset[str]] = frozenset()
    """Fields that say how work was arranged, not what it is (a branch's budget share):
    an input hash leaves them out, so work they alone changed is still reused."""


_REGISTERED: dict[str, type[VersionedContract]] = {}
"""Every top-level contract class defined so far, by ``module.qualname``."""


def defined_contracts() -> list[type[VersionedContract]]:
    """Every top-level contract class created in this process, in definition order.

    Use ``contracts.registry.registered()`` instead: it first imports every module of the
    package, so a contract is found whether or not anything imported it yet.
    """
    return list(_REGISTERED.values())


def _schema_version_field(cls: type[VersionedContract]) -> Any:
    older = ", ".join(cls.SUPPORTED_VERSIONS[:-1])
    readers = (
        f"readers upgrade {older} and refuse any other version"
        if older
        else "readers refuse any other version"
    )
    return Field(
        default=cls.VERSION,
        description=f"Schema version of this contract: writers write {cls.VERSION}; {readers}.",
        json_schema_extra={"enum": [cls.VERSION]},
    )


def _schema_examples(schema: JsonDict, cls: type[BaseModel]) -> None:
    """Put a contract's ``EXAMPLES`` into its JSON Schema, as the ``examples`` keyword.

    Copied, so whoever edits a generated schema cannot change the class's examples.
    """
    examples = getattr(cls, "EXAMPLES", ())
    if examples:
        schema["examples"] = copy.deepcopy(list(examples))


@functools.cache
def _contract_methods() -> frozenset[str]:
    """The public methods every top-level contract has of its own (``summary``, ...)."""
    return frozenset(
        name
        for klass in (Contract, VersionedContract)
        for name, value in vars(klass).items()
        if not name.startswith("_") and isinstance(value, FunctionType | classmethod | property)
    )


class VersionedContract(Contract):
    """Base for top-level contracts, which travel between agents and processes.

    Each contract carries its own ``VERSION``; a shape change raises it and adds an
    ``@upgrader`` from the previous version, so payloads stored by older code (checkpoints,
    JSON files) are brought to the current shape whenever they are validated, and threads
    survive the change. Any other version is refused loudly: LangGraph's deserializer falls
    back to ``model_construct`` when the constructor fails, so a payload it could not read
    must still fail on the re-validation every node does, rather than be half-loaded.

    Every subclass registers itself when it is defined; nothing lists contracts by hand,
    and each declares ``EXAMPLES``, the data its schema shows and its tests start from.
    """

    model_config = ConfigDict(json_schema_extra=_schema_examples)

    VERSION: ClassVar[str] = INITIAL_VERSION
    """The version this code writes; raise it (with an upgrader) when the shape changes."""
    SUPPORTED_VERSIONS: ClassVar[tuple[str, ...]] = (INITIAL_VERSION,)
    """Versions a reader accepts, oldest first, the current one last (derived)."""
    UPGRADE_STEPS: ClassVar[Mapping[str, tuple[str, str]]] = {}
    """``from -> (to, upgrader method name)`` for every older supported version (derived)."""
    EXAMPLES: ClassVar[Sequence[JsonDict]] = ()
    """Realistic payloads as this contract's writers write them (JSON; fields left out take
    their defaults). They are the ``examples`` of the exported JSON Schema, and the tests
    validate, round-trip and generate data from them, so a new contract needs no test data
    of its own; a registered contract without one fails the tests, naming it."""

    schema_version: str = Field(
        default=INITIAL_VERSION,
        description="Schema version of this contract.",
        json_schema_extra={"enum": [INITIAL_VERSION]},
    )

    def summary(self) -> str:
        """One line for progress output; empty when there is nothing worth showing."""
        return ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Derive the version bookkeeping and the ``schema_version`` field of the subclass.

        Runs before pydantic collects the fields, so the field's default and its schema
        name this class's own version.
        """
        super().__init_subclass__(**kwargs)
        if not VERSION_PATTERN.match(cls.VERSION):
            raise TypeError(f"{cls.__name__}.VERSION {cls.VERSION!r} is not MAJOR.MINOR")
        own_annotations: dict[str, Any] = cls.__dict__.get("__annotations__", {})
        if "schema_version" in own_annotations:
            raise TypeError(f"{cls.__name__} declares schema_version itself; set VERSION instead")
        shadowing = sorted(set(own_annotations) & _contract_methods())
        if shadowing:  # pydantic only warns, and every caller of the method then breaks
            raise TypeError(
                f"{cls.__name__} declares the field {shadowing[0]!r}, which would hide the "
                f"method {VersionedContract.__name__}.{shadowing[0]} the template calls on "
                "every contract (progress lines, upgrades): rename the field"
            )
        steps = upgrade_steps(cls, cls.VERSION)
        cls.UPGRADE_STEPS = steps
        cls.SUPPORTED_VERSIONS = (
            *sorted(steps, key=lambda version: -distance(steps, version, cls.VERSION)),
            cls.VERSION,
        )
        own_annotations = cls.__annotations__  # creates the class's own dict if it had none
        own_annotations["schema_version"] = "str"
        setattr(cls, "schema_version", _schema_version_field(cls))  # noqa: B010

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Register the finished class (fields and schema built) under its import path."""
        super().__pydantic_init_subclass__(**kwargs)
        _REGISTERED[f"{cls.__module__}.{cls.__qualname__}"] = cls

    @classmethod
    def upgrade(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """A payload of any supported version, brought to the current version (unvalidated).

        Raises ``ValueError`` naming the contract and the supported versions for any other
        version, or when an upgrader fails.
        """
        current = dict(data)
        version = current.get("schema_version", cls.VERSION)
        while version != cls.VERSION:
            if not isinstance(version, str) or version not in cls.UPGRADE_STEPS:
                raise ValueError(cls.unsupported(version))
            target, method = cls.UPGRADE_STEPS[version]
            try:
                upgraded = getattr(cls, method)(dict(current))
            except Exception as error:
                raise ValueError(
                    f"{cls.__name__}.{method} could not upgrade a schema_version {version!r} "
                    f"payload to {target!r}: {error}"
                ) from error
            if not isinstance(upgraded, dict):
                raise ValueError(
                    f"{cls.__name__}.{method} returned {type(upgraded).__name__}, not a dict"
                )
            current = {**upgraded, "schema_version": target}
            version = target
        return current

    @classmethod
    def unsupported(cls, version: object) -> str:
        """The message for a version this code cannot read."""
        supported = ", ".join(cls.SUPPORTED_VERSIONS)
        said = f"unsupported schema_version {version!r} for {cls.__name__}; supported: {supported}"
        if not (isinstance(version, str) and VERSION_PATTERN.match(version)):
            return said
        if version_key(version) > version_key(cls.VERSION):
            return f"{said}; newer code wrote it: read it with that code"
        onward = min(
            (v for v in cls.SUPPORTED_VERSIONS if version_key(v) > version_key(version)),
            key=version_key,
        )
        return (
            f"{said}; to read {version} payloads, give {cls.__name__} a classmethod marked "
            f'@upgrader(from_version="{version}", to_version="{onward}") returning the '
            f"{onward} payload (contracts.upgrades; docs/contracts.md)"
        )

    @model_validator(mode="before")
    @classmethod
    def _upgrade_older_versions(cls, data: Any, info: ValidationInfo) -> Any:
        # Assigning schema_version hands this validator the whole field dict but keeps only
        # the assigned value: an upgrade there would be half-applied, so it is left to the
        # field check. (For a nested contract, field_name is the parent's field.)
        if info.field_name == "schema_version" or not isinstance(data, dict):
            return data
        version = data.get("schema_version")
        if not isinstance(version, str) or version not in cls.UPGRADE_STEPS:
            return data
        return cls.upgrade(data)

    @field_validator("schema_version")
    @classmethod
    def _check_version(cls, value: str) -> str:
        if value == cls.VERSION:
            return value
        if value in cls.UPGRADE_STEPS:
            raise ValueError(
                f"schema_version {value!r} is older than {cls.__name__} {cls.VERSION!r}: "
                f"validate the whole {value} payload so it is upgraded"
            )
        raise ValueError(cls.unsupported(value))
