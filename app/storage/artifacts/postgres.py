"""An artifact store in PostgreSQL: content-addressed blobs plus gap-free revision histories.

Three tables in the schema that holds the checkpoints::

    handoff_artifact_blobs      sha256 -> bytes, written once per distinct content
    handoff_artifacts           one row per artifact id: its kind and head revision
    handoff_artifact_revisions  (artifact_id, revision) -> the ArtifactRef recorded for it

``put`` runs in one transaction that locks the artifact's row (``SELECT … FOR UPDATE``), so
puts from any number of processes get revisions 1, 2, 3 … with no gap and no duplicate, and
re-putting the head's content returns the head. It behaves exactly like
FilesystemArtifactStore: the same errors and messages, every read verified against sha256.
A blob is deleted (:meth:`PostgresArtifactStore.sweep`) only when no revision names it,
with its row locked: a put locks the same row (writing the blob) before it records a
revision, so the two take turns.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from app.storage.artifacts.base import ArtifactStoreBase
from app.storage.artifacts.records import (
    candidate,
    check_entry,
    next_revision,
    parse_entry,
    sha256_hex,
)
from app.storage.encryption import KeyRing, open_blob, seal_blob
from app.storage.postgres_tables import PostgresTables
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import IntegrityError

if TYPE_CHECKING:
    from app.storage.postgres import PgConnection

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


class PostgresArtifactStore(PostgresTables, ArtifactStoreBase["PgConnection"]):
    """Revisioned, hash-verified artifact storage in PostgreSQL, safe across processes.

    Give it the Workflow's pool (``pool=``) to share connections, or a ``url`` to have it
    open a pool of its own on first use (``close()`` releases that one).
    """

    schema_sql = POSTGRES_SCHEMA
    modified_where = "in the database"
    keys: KeyRing | None = None
    """Blobs are sealed under these keys (``app.storage.encryption``); None: kept as given."""

    def _session(self) -> AbstractContextManager[PgConnection]:
        return self._db.connection()

    # -- records ---------------------------------------------------------------------

    def _load_history(self, session: PgConnection, artifact_id: str) -> list[ArtifactRef]:
        rows = session.execute(
            "SELECT revision, ref FROM handoff_artifact_revisions WHERE artifact_id = %s "
            "ORDER BY revision",
            (artifact_id,),
        ).fetchall()
        refs = [parse_entry(artifact_id, row["revision"], row["ref"]) for row in rows]
        return [check_entry(artifact_id, position, ref) for position, ref in enumerate(refs, 1)]

    def _fetch_blob(self, session: PgConnection, sha256: str) -> bytes | None:
        row = session.execute(
            "SELECT content FROM handoff_artifact_blobs WHERE sha256 = %s", (sha256,)
        ).fetchone()
        return None if row is None else open_blob(self.keys, bytes(row["content"]))

    # -- public API --------------------------------------------------------------------

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content; identical content to the head returns the head unchanged."""
        # Validate id, kind and media type before anything touches the database.
        content, first = candidate(artifact_id, kind, content, media_type)
        sha256 = first.sha256
        with self._session() as conn, conn.transaction():
            self._write_blob(conn, sha256, content)
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
            head_revision = int(row["head"])
            head = None
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
                head = parse_entry(artifact_id, head_revision, head_row["ref"])
            ref = next_revision(first, row["kind"], head)
            if ref is head:
                return ref
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

    def _write_blob(self, conn: PgConnection, sha256: str, content: bytes) -> None:
        """Written once; rewritten only if the stored bytes were damaged (a repair).

        Sealed blobs differ from their sha256 by design, so the database cannot tell a
        damaged one: it is opened here, under the row's lock, and hashed.
        """
        if self.keys is None:
            conn.execute(
                "INSERT INTO handoff_artifact_blobs AS b (sha256, content, size_bytes) "
                "VALUES (%s, %s, %s) ON CONFLICT (sha256) DO UPDATE "
                "SET content = EXCLUDED.content WHERE encode(sha256(b.content), 'hex') <> b.sha256",
                (sha256, content, len(content)),
            )
            return
        sealed = seal_blob(self.keys, content)
        row = conn.execute(
            "SELECT content FROM handoff_artifact_blobs WHERE sha256 = %s FOR UPDATE", (sha256,)
        ).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO handoff_artifact_blobs (sha256, content, size_bytes) "
                "VALUES (%s, %s, %s) ON CONFLICT (sha256) DO NOTHING",
                (sha256, sealed, len(content)),
            )
        elif sha256_hex(open_blob(self.keys, bytes(row["content"]))) != sha256:
            conn.execute(
                "UPDATE handoff_artifact_blobs SET content = %s WHERE sha256 = %s",
                (sealed, sha256),
            )

    def ids(self) -> list[str]:
        """Every stored artifact id, sorted."""
        with self._session() as conn:
            rows = conn.execute(
                "SELECT artifact_id FROM handoff_artifacts WHERE head > 0"
            ).fetchall()
        return sorted(str(row["artifact_id"]) for row in rows)

    def blobs_by_artifact(self) -> dict[str, dict[str, int]]:
        """Each artifact id, with the sha256 and size of every blob its revisions name."""
        found: dict[str, dict[str, int]] = {}
        with self._session() as conn:
            rows = conn.execute(
                "SELECT r.artifact_id, r.sha256, b.size_bytes FROM handoff_artifact_revisions r "
                "JOIN handoff_artifact_blobs b USING (sha256)"
            ).fetchall()
        for row in rows:
            found.setdefault(row["artifact_id"], {})[row["sha256"]] = int(row["size_bytes"])
        return found

    def forget(self, artifact_ids: Collection[str]) -> None:
        """Delete the histories of ``artifact_ids``; their blobs stay until :meth:`sweep`."""
        named = sorted(artifact_ids)
        with self._session() as conn, conn.transaction():
            for table in ("handoff_artifact_revisions", "handoff_artifacts"):
                conn.execute(f"DELETE FROM {table} WHERE artifact_id = ANY(%s)", (named,))

    def sweep(self, sha256s: Collection[str]) -> set[str]:
        """Delete each of these blobs no revision names, their rows locked first.

        A put holds its blob's row from writing it until its revision is committed: the
        lock waits for that put, and the check then sees its revision (a statement reads
        what was committed before it); a put after the lock waits, then writes the blob anew.
        """
        named = sorted(sha256s)
        with self._session() as conn, conn.transaction():
            conn.execute(
                "SELECT sha256 FROM handoff_artifact_blobs WHERE sha256 = ANY(%s) "
                "ORDER BY sha256 FOR UPDATE",
                (named,),
            )
            rows = conn.execute(
                "DELETE FROM handoff_artifact_blobs b WHERE sha256 = ANY(%s) AND NOT EXISTS "
                "(SELECT 1 FROM handoff_artifact_revisions r WHERE r.sha256 = b.sha256) "
                "RETURNING sha256",
                (named,),
            ).fetchall()
        return {str(row["sha256"]) for row in rows}
