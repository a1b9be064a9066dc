"""An artifact store in PostgreSQL: content-addressed blobs plus gap-free revision histories.

Three tables in the schema that holds the checkpoints::

    handoff_artifact_blobs      sha256 -> bytes, written once per distinct content
    handoff_artifacts           one row per artifact id: its kind and head revision
    handoff_artifact_revisions  (artifact_id, revision) -> the ArtifactRef recorded for it

``put`` runs in one transaction that locks the artifact's row (``SELECT … FOR UPDATE``), so
puts from any number of processes get revisions 1, 2, 3 … with no gap and no duplicate, and
re-putting the head's content returns the head. It behaves exactly like
FilesystemArtifactStore: the same errors and messages, every read verified against sha256.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from app.artifacts.records import (
    Verification,
    candidate,
    check_id,
    parse_artifact_uri,
    recorded_revision,
    sha256_hex,
)
from app.postgres import DEFAULT_TIMEOUT, SchemaPool
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import ArtifactError, ArtifactNotFound, IntegrityError

if TYPE_CHECKING:
    from app.postgres import PgConnection

POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_artifact_blobs (
    sha256 TEXT PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    content BYTEA NOT NULL,
    size_bytes BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS handoff_artifacts (
    artifact_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    head INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS handoff_artifact_revisions (
    artifact_id TEXT NOT NULL REFERENCES handoff_artifacts (artifact_id),
    revision INTEGER NOT NULL CHECK (revision >= 1),
    sha256 TEXT NOT NULL REFERENCES handoff_artifact_blobs (sha256),
    ref TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (artifact_id, revision)
);
"""


class PostgresArtifactStore:
    """Revisioned, hash-verified artifact storage in PostgreSQL, safe across processes.

    Give it the Workflow's pool (``pool=``) to share connections, or a ``url`` to have it
    open a pool of its own on first use (``close()`` releases that one).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: Any | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._db = SchemaPool(
            POSTGRES_SCHEMA, url, pool=pool, timeout=timeout, owner="PostgresArtifactStore"
        )
        self._connection = self._db.connection

    def setup(self) -> None:
        """Create the tables if they do not exist (idempotent, safe across processes)."""
        self._db.setup()

    def close(self) -> None:
        """Close the pool this store opened itself (a shared pool belongs to its owner)."""
        self._db.close()

    # -- records ---------------------------------------------------------------------

    @staticmethod
    def _parse(artifact_id: str, revision: int, raw: str) -> ArtifactRef:
        try:
            ref = ArtifactRef.model_validate_json(raw)
        except (ValueError, ValidationError) as exc:
            raise IntegrityError(
                f"history of artifact {artifact_id!r} is unreadable at revision {revision}: {exc}"
            ) from exc
        if ref.artifact_id != artifact_id or ref.revision != revision:
            raise IntegrityError(
                f"history of artifact {artifact_id!r} is inconsistent: entry {revision} is "
                f"{ref.artifact_id!r} revision {ref.revision}"
            )
        return ref

    def _history(self, conn: PgConnection, artifact_id: str) -> list[ArtifactRef]:
        rows = conn.execute(
            "SELECT revision, ref FROM handoff_artifact_revisions WHERE artifact_id = %s "
            "ORDER BY revision",
            (artifact_id,),
        ).fetchall()
        refs = [self._parse(artifact_id, row["revision"], row["ref"]) for row in rows]
        for position, ref in enumerate(refs, start=1):
            if ref.revision != position:
                raise IntegrityError(
                    f"history of artifact {artifact_id!r} is inconsistent: entry {position} "
                    f"is revision {ref.revision}"
                )
        return refs

    def _read_blob(self, conn: PgConnection, ref: ArtifactRef) -> bytes:
        row = conn.execute(
            "SELECT content FROM handoff_artifact_blobs WHERE sha256 = %s", (ref.sha256,)
        ).fetchone()
        if row is None:
            raise ArtifactNotFound(
                f"{ref.uri} revision {ref.revision}: blob {ref.sha256} is missing from the store"
            )
        content = bytes(row["content"])
        actual = sha256_hex(content)
        if actual != ref.sha256:
            raise IntegrityError(
                f"{ref.uri} revision {ref.revision}: blob {ref.sha256} was modified in the "
                f"database; expected sha256 {ref.sha256}, actual {actual}"
            )
        return content

    def _recorded(
        self, conn: PgConnection, ref: ArtifactRef
    ) -> tuple[ArtifactRef, list[ArtifactRef]]:
        """The store's own record of ref's revision, so a forged ref cannot fetch bytes."""
        history = self._history(conn, check_id(ref.artifact_id))
        return recorded_revision(ref, history), history

    # -- public API --------------------------------------------------------------------

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content; identical content to the head returns the head unchanged."""
        # Validate id, kind and media type before anything touches the database.
        content, first = candidate(artifact_id, kind, content, media_type)
        sha256 = first.sha256
        with self._connection() as conn, conn.transaction():
            # Written once; rewritten only if the stored bytes were damaged (a repair).
            conn.execute(
                "INSERT INTO handoff_artifact_blobs AS b (sha256, content, size_bytes) "
                "VALUES (%s, %s, %s) ON CONFLICT (sha256) DO UPDATE "
                "SET content = EXCLUDED.content WHERE encode(sha256(b.content), 'hex') <> b.sha256",
                (sha256, content, len(content)),
            )
            conn.execute(
                "INSERT INTO handoff_artifacts (artifact_id, kind) VALUES (%s, %s) "
                "ON CONFLICT (artifact_id) DO NOTHING",
                (artifact_id, kind),
            )
            row = conn.execute(
                "SELECT kind, head FROM handoff_artifacts WHERE artifact_id = %s FOR UPDATE",
                (artifact_id,),
            ).fetchone()
            assert row is not None
            if row["kind"] != kind:
                raise ArtifactError(
                    f"artifact {artifact_id!r} is a {row['kind']!r} artifact and cannot be "
                    f"stored as {kind!r}; use a different artifact id"
                )
            head_revision = int(row["head"])
            if head_revision:
                head_row = conn.execute(
                    "SELECT ref FROM handoff_artifact_revisions "
                    "WHERE artifact_id = %s AND revision = %s",
                    (artifact_id, head_revision),
                ).fetchone()
                if head_row is None:
                    raise IntegrityError(
                        f"history of artifact {artifact_id!r} is inconsistent: the head "
                        f"revision {head_revision} is not recorded"
                    )
                head = self._parse(artifact_id, head_revision, head_row["ref"])
                if head.sha256 == sha256 and head.media_type == media_type:
                    return head
            ref = first.model_copy(update={"revision": head_revision + 1})
            conn.execute(
                "INSERT INTO handoff_artifact_revisions (artifact_id, revision, sha256, ref) "
                "VALUES (%s, %s, %s, %s)",
                (artifact_id, ref.revision, sha256, ref.model_dump_json()),
            )
            conn.execute(
                "UPDATE handoff_artifacts SET head = %s WHERE artifact_id = %s",
                (ref.revision, artifact_id),
            )
            return ref

    def get(self, ref: ArtifactRef | dict[str, Any]) -> bytes:
        """The bytes of exactly that revision, verified against its sha256."""
        checked = ArtifactRef.model_validate(ref)
        with self._connection() as conn:
            recorded, _ = self._recorded(conn, checked)
            return self._read_blob(conn, recorded)

    def head(self, artifact_id: str) -> ArtifactRef | None:
        """The latest revision, or None if the artifact was never stored."""
        history = self.history(artifact_id)
        return history[-1] if history else None

    def history(self, artifact_id: str) -> list[ArtifactRef]:
        """Every revision, oldest first."""
        check_id(artifact_id)
        with self._connection() as conn:
            return self._history(conn, artifact_id)

    def ids(self) -> list[str]:
        """Every stored artifact id, sorted."""
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT artifact_id FROM handoff_artifacts WHERE head > 0"
            ).fetchall()
        return sorted(str(row["artifact_id"]) for row in rows)

    def get_uri(self, uri: str, revision: int | None = None) -> tuple[ArtifactRef, bytes]:
        """Resolve an ``artifact://`` address to a ref and its bytes; the head by default."""
        kind, artifact_id = parse_artifact_uri(uri)
        with self._connection() as conn:
            history = self._history(conn, artifact_id)
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
            return ref, self._read_blob(conn, ref)

    def verify(self, ref: ArtifactRef | dict[str, Any]) -> Verification:
        """Classify a ref without raising, so callers can decide how to treat old inputs."""
        checked = ArtifactRef.model_validate(ref)
        with self._connection() as conn:
            try:
                recorded, history = self._recorded(conn, checked)
                self._read_blob(conn, recorded)
            except ArtifactNotFound:
                return "missing"
            except IntegrityError:
                return "tampered"
        return "stale" if recorded.revision < len(history) else "fresh"
