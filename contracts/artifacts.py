"""References to content held in the artifact store; state carries these, never the bytes."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints, model_validator
from pydantic.config import JsonDict

from contracts.base import Identifier, Sha256Hex, VersionedContract


def example_ref(kind: str, artifact_id: str) -> JsonDict:
    """A reference as the examples of every contract that holds one show it."""
    return {
        "artifact_id": artifact_id,
        "kind": kind,
        "uri": f"artifact://{kind}/{artifact_id}",
        "media_type": "text/markdown",
        "sha256": "0123456789abcdef" * 4,
        "revision": 2,
        "size_bytes": 1234,
    }


ArtifactKind = Annotated[str, StringConstraints(pattern=r"^[a-z]+$", max_length=40)]
"""What an artifact is, the first segment of its URI: lower-case letters. The shipped nodes
store ``source``, ``notes``, ``draft``, ``review``, ``article`` and ``human``; a node a
project adds names its own, with no list to extend."""


class ArtifactRef(VersionedContract):
    """A pointer to one revision of an artifact, with the hash its bytes must match."""

    artifact_id: Identifier = Field(description="Stable id of the artifact across revisions.")
    kind: ArtifactKind = Field(description="What the artifact holds.")
    uri: str = Field(
        pattern=r"^artifact://[a-z]+/[A-Za-z0-9._-]+$",
        max_length=300,
        description="Address in the store: artifact://<kind>/<artifact_id>.",
    )
    media_type: str = Field(
        max_length=100,
        pattern=r"^[a-z]+/[A-Za-z0-9.+-]+$",
        description="IANA media type of the bytes, e.g. text/markdown.",
    )
    sha256: Sha256Hex = Field(description="sha256 of the bytes of this revision.")
    revision: int = Field(ge=1, description="Revision number; grows by one per content change.")
    size_bytes: int = Field(ge=0, description="Length of the bytes of this revision.")

    EXAMPLES = [example_ref("article", "article-rosetta")]

    @model_validator(mode="after")
    def _uri_matches(self) -> ArtifactRef:
        expected = f"artifact://{self.kind}/{self.artifact_id}"
        if self.uri != expected:
            raise ValueError(f"uri {self.uri!r} does not match kind/artifact_id ({expected!r})")
        return self
