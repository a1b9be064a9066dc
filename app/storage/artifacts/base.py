"""What both artifact stores do the same way: every read path, over a few storage hooks.

A store supplies how a read opens its storage (``_session``), how a history and a blob are
fetched, and how a blob is named in messages; reading, verifying and resolving URIs is
then identical, so the two stores cannot drift apart in what they accept or report.
Writing (``put``) stays with each store: that is where their durability and locking differ.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar, Generic, TypeVar

from app.errors import ArtifactLost
from app.storage.artifacts.records import (
    Verification,
    check_id,
    parse_artifact_uri,
    recorded_revision,
    sha256_hex,
)
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import ArtifactNotFound, IntegrityError, UsageError

Session = TypeVar("Session")
"""What one read holds open: nothing for files, a connection for a database."""


class ArtifactStoreBase(ABC, Generic[Session]):
    """Revisioned, hash-verified reads shared by every artifact store."""

    modified_where: ClassVar[str]
    """Where damaged bytes were changed, for messages ("on disk", "in the database")."""

    @abstractmethod
    def _session(self) -> AbstractContextManager[Session]:
        """Storage opened for one read (a history and the blobs it names)."""

    @abstractmethod
    def _load_history(self, session: Session, artifact_id: str) -> list[ArtifactRef]:
        """Every recorded revision of a valid id, oldest first, checked for consistency."""

    @abstractmethod
    def _fetch_blob(self, session: Session, sha256: str) -> bytes | None:
        """The stored bytes named by a sha256 (unverified), or None when there are none."""

    def _blob_name(self, sha256: str) -> str:
        """How messages name a blob."""
        return sha256

    @abstractmethod
    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content; identical content to the head returns the head unchanged."""

    @abstractmethod
    def ids(self) -> list[str]:
        """Every stored artifact id, sorted."""

    def forget(self, artifact_ids: Collection[str]) -> None:
        """Delete the histories of ``artifact_ids``; their blobs stay until :meth:`sweep`.

        Only retention (``handoff prune``) calls it: a store of one's own runs without it,
        and a prune on it is refused, naming what to write, before a thread is removed.
        """
        raise self._keeps_everything()

    def sweep(self, sha256s: Collection[str]) -> set[str]:
        """Delete each of these blobs that no recorded revision names; the ones deleted.

        Blobs are shared by content across artifacts and threads, so a blob goes only with
        the last revision naming it. A put running meanwhile keeps the blob it records:
        each store excludes it for the check and the delete (see each ``sweep``).
        """
        if not sha256s:
            return set()
        raise self._keeps_everything()

    def _keeps_everything(self) -> UsageError:
        return UsageError(
            f"the artifact store {type(self).__name__} keeps every artifact: handoff prune "
            "needs its forget() and sweep() (see ArtifactStoreBase and the folder store's)"
        )

    def blobs_by_artifact(self) -> dict[str, dict[str, int]]:
        """Each artifact id, with the sha256 and size of every blob its revisions name."""
        artifact_ids = self.ids()
        with self._session() as session:
            return {
                artifact_id: {
                    ref.sha256: ref.size_bytes for ref in self._load_history(session, artifact_id)
                }
                for artifact_id in artifact_ids
            }

    def batch(self) -> AbstractContextManager[object]:
        """An empty block: each put of this store is durable when it returns."""
        return nullcontext()

    def _read_blob(self, session: Session, ref: ArtifactRef) -> bytes:
        """Bytes of a revision, verified; errors name the uri, revision and blob."""
        content = self._fetch_blob(session, ref.sha256)
        if content is None:
            raise ArtifactLost(
                f"{ref.uri} revision {ref.revision}: blob {self._blob_name(ref.sha256)} "
                "is missing from the store (deleted or lost since it was recorded; restore "
                "it from a backup)"
            )
        actual = sha256_hex(content)
        if actual != ref.sha256:
            raise IntegrityError(
                f"{ref.uri} revision {ref.revision}: blob {self._blob_name(ref.sha256)} was "
                f"modified {self.modified_where}; expected sha256 {ref.sha256}, actual {actual}"
            )
        return content

    def _blob_matches(self, session: Session, sha256: str) -> bool | None:
        """Whether the stored blob hashes to ``sha256``; None when there is none.

        Stores that can tell an unchanged blob without reading it again override this.
        """
        content = self._fetch_blob(session, sha256)
        return None if content is None else sha256_hex(content) == sha256

    def _check_blob(self, session: Session, ref: ArtifactRef) -> None:
        """Raise what :meth:`_read_blob` would for a missing or damaged blob."""
        if not self._blob_matches(session, ref.sha256):
            self._read_blob(session, ref)  # raises, naming what is wrong (or finds it mended)

    def _recorded(
        self, session: Session, ref: ArtifactRef
    ) -> tuple[ArtifactRef, list[ArtifactRef]]:
        """The store's own record of ref's revision, so a forged ref cannot fetch bytes."""
        history = self._load_history(session, check_id(ref.artifact_id))
        return recorded_revision(ref, history), history

    def get(self, ref: ArtifactRef | dict[str, Any]) -> bytes:
        """The bytes of exactly that revision, verified against its sha256."""
        checked = ArtifactRef.model_validate(ref)
        with self._session() as session:
            recorded, _ = self._recorded(session, checked)
            return self._read_blob(session, recorded)

    def head(self, artifact_id: str) -> ArtifactRef | None:
        """The latest revision, or None if the artifact was never stored."""
        history = self.history(artifact_id)
        return history[-1] if history else None

    def history(self, artifact_id: str) -> list[ArtifactRef]:
        """Every revision, oldest first."""
        check_id(artifact_id)
        with self._session() as session:
            return self._load_history(session, artifact_id)

    def get_uri(self, uri: str, revision: int | None = None) -> tuple[ArtifactRef, bytes]:
        """Resolve an ``artifact://`` address to a ref and its bytes; the head by default."""
        kind, artifact_id = parse_artifact_uri(uri)
        with self._session() as session:
            history = self._load_history(session, artifact_id)
            if not history:
                raise ArtifactNotFound(f"{uri} is not in the store")
            if revision is None:
                ref = history[-1]
            elif 1 <= revision <= len(history):
                ref = history[revision - 1]
            else:
                raise ArtifactNotFound(
                    f"{uri} has no revision {revision}; the head is revision {len(history)}"
                )
            if ref.kind != kind:
                raise ArtifactNotFound(
                    f"{uri} is not in the store; {artifact_id!r} is a {ref.kind!r}"
                )
            return ref, self._read_blob(session, ref)

    def verify(self, ref: ArtifactRef | dict[str, Any]) -> Verification:
        """Classify a ref without raising, so callers can decide how to treat old inputs."""
        checked = ArtifactRef.model_validate(ref)
        with self._session() as session:
            try:
                recorded, history = self._recorded(session, checked)
                self._check_blob(session, recorded)
            except ArtifactNotFound:
                return "missing"
            except IntegrityError:
                return "tampered"
        return "stale" if recorded.revision < len(history) else "fresh"
