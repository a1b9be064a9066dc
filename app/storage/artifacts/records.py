"""What every artifact store shares: id and URI rules, new revisions, recorded refs.

A ref is honoured only if it names a revision the store itself recorded.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal, cast

from pydantic import ValidationError

from app.errors import ArtifactLost
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import ArtifactError, IntegrityError, InvalidArtifactId

Verification = Literal["fresh", "stale", "tampered", "missing"]
"""What verify() found: current, superseded, bytes changed on disk, or gone."""

_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ID_MAX_LENGTH = 128
_ID_RULE = (
    f"artifact ids are 1-{_ID_MAX_LENGTH} characters of letters, digits, '.', '_' and '-', "
    "start with a letter or digit and never contain '..'"
)
_URI_PATTERN = re.compile(r"artifact://([a-z]+)/([^/]*)")


def check_id(artifact_id: object) -> str:
    """Refuse ids that could name a path outside the store before any path is built."""
    if not isinstance(artifact_id, str):
        raise InvalidArtifactId(
            f"invalid artifact id {artifact_id!r}: expected a string; {_ID_RULE}"
        )
    if (
        len(artifact_id) > _ID_MAX_LENGTH
        or ".." in artifact_id
        or _ID_PATTERN.fullmatch(artifact_id) is None
    ):
        raise InvalidArtifactId(f"invalid artifact id {artifact_id!r}: {_ID_RULE}")
    return artifact_id


def parse_artifact_uri(uri: str) -> tuple[ArtifactKind, str]:
    """Split ``artifact://<kind>/<artifact_id>``, refusing anything that is not exactly that."""
    match = _URI_PATTERN.fullmatch(uri) if isinstance(uri, str) else None
    if match is None:
        raise InvalidArtifactId(
            f"invalid artifact uri {uri!r}: expected artifact://<kind>/<artifact_id> "
            f"with a lower-case kind; {_ID_RULE}"
        )
    kind, artifact_id = match.groups()
    try:
        check_id(artifact_id)
    except InvalidArtifactId as exc:
        raise InvalidArtifactId(f"invalid artifact uri {uri!r}: {exc.message}") from exc
    return cast(ArtifactKind, kind), artifact_id


def sha256_hex(content: bytes) -> str:
    """Hex sha256 of some bytes."""
    return hashlib.sha256(content).hexdigest()


def candidate(
    artifact_id: str, kind: ArtifactKind, content: object, media_type: str
) -> tuple[bytes, ArtifactRef]:
    """The bytes and the revision-1 ref of a put, validated before anything is stored."""
    check_id(artifact_id)
    if not isinstance(content, bytes | bytearray | memoryview):
        raise TypeError(f"content must be bytes, not {type(content).__name__}")
    data = bytes(content)
    ref = ArtifactRef(
        artifact_id=artifact_id,
        kind=kind,
        uri=f"artifact://{kind}/{artifact_id}",
        media_type=media_type,
        sha256=sha256_hex(data),
        revision=1,
        size_bytes=len(data),
    )
    return data, ref


def recorded_revision(ref: ArtifactRef, history: list[ArtifactRef]) -> ArtifactRef:
    """The store's own record of ref's revision, so a forged ref cannot fetch bytes."""
    if not history:
        raise ArtifactLost(
            f"artifact {ref.artifact_id!r} ({ref.uri}) is not in the store: the revision "
            f"{ref.revision} recorded for it was deleted or lost (restore it from a backup)"
        )
    if ref.revision > len(history):
        raise ArtifactLost(
            f"artifact {ref.artifact_id!r} has no revision {ref.revision}; the head is "
            f"revision {len(history)} ({ref.uri}: later revisions were deleted or lost)"
        )
    recorded = history[ref.revision - 1]
    if recorded != ref:
        differing = sorted(
            name for name, value in ref.model_dump().items() if getattr(recorded, name) != value
        )
        raise IntegrityError(
            f"artifact {ref.artifact_id!r} revision {ref.revision}: the ref does not match "
            f"the store's record (differs in {', '.join(differing)}; recorded sha256 "
            f"{recorded.sha256}, ref sha256 {ref.sha256})"
        )
    return recorded


def parse_entry(artifact_id: str, revision: int, raw: str) -> ArtifactRef:
    """A history row stored as JSON, checked to be the revision it is stored as."""
    try:
        ref = ArtifactRef.model_validate_json(raw)
    except (ValueError, ValidationError) as exc:
        raise IntegrityError(
            f"history of artifact {artifact_id!r} is unreadable at revision {revision}: {exc}"
        ) from exc
    return check_entry(artifact_id, revision, ref)


def check_entry(artifact_id: str, position: int, ref: ArtifactRef) -> ArtifactRef:
    """Refuse a history entry recorded for another id or at another place in the history."""
    if ref.artifact_id != artifact_id or ref.revision != position:
        raise IntegrityError(
            f"history of artifact {artifact_id!r} is inconsistent: entry {position} is "
            f"{ref.artifact_id!r} revision {ref.revision}"
        )
    return ref


def next_revision(
    first: ArtifactRef, stored_kind: str | None, head: ArtifactRef | None
) -> ArtifactRef:
    """What a put records after ``head``: the head itself if it holds the same content.

    ``first`` is the put's revision-1 ref (see :func:`candidate`); ``stored_kind`` is the
    kind the id was first stored as, which it keeps for life.
    """
    if stored_kind is not None and stored_kind != first.kind:
        raise ArtifactError(
            f"artifact {first.artifact_id!r} is a {stored_kind!r} artifact and cannot be "
            f"stored as {first.kind!r}; use a different artifact id"
        )
    if head is not None and head.sha256 == first.sha256 and head.media_type == first.media_type:
        return head
    return first.model_copy(update={"revision": (head.revision if head else 0) + 1})
