"""Shared base for every contract: strict, described, versioned."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

SCHEMA_VERSION = "1.0"
"""The schema version this code writes."""

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
    return value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_to_utc)]
"""A timezone-aware instant, normalised to UTC so it survives JSON exactly."""


class Contract(BaseModel):
    """Base for nested contract parts: unknown fields are an error, never ignored."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, revalidate_instances="always"
    )


class VersionedContract(Contract):
    """Base for top-level contracts, which travel between agents and processes.

    The version is checked explicitly because LangGraph's deserializer falls back to
    ``model_construct`` on schema drift: an object written by another version must be
    refused loudly rather than half-loaded. (Drift *within* a version, such as an extra
    field, is dropped by ``model_construct`` before we see it: bump the version when the
    shape changes.)
    """

    SUPPORTED_VERSIONS: ClassVar[tuple[str, ...]] = (SCHEMA_VERSION,)

    schema_version: str = Field(
        default=SCHEMA_VERSION,
        description="Schema version of this contract; readers refuse versions they do not support.",
        json_schema_extra={"enum": [SCHEMA_VERSION]},
    )

    def summary(self) -> str:
        """One line for progress output; empty when there is nothing worth showing."""
        return ""

    @field_validator("schema_version")
    @classmethod
    def _check_version(cls, value: str) -> str:
        if value not in cls.SUPPORTED_VERSIONS:
            supported = ", ".join(cls.SUPPORTED_VERSIONS)
            raise ValueError(
                f"unsupported schema_version {value!r} for {cls.__name__}; supported: {supported}"
            )
        return value
