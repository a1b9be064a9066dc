"""Damaging stored blobs on purpose, the way disk corruption or an operator would."""

from __future__ import annotations

from typing import Any

from app.storage.artifacts.folder_blobs import FolderBlobs
from app.storage.artifacts.postgres import PostgresArtifactStore
from contracts import ArtifactRef


def rows(store: Any) -> Any:
    """The PostgreSQL store whose rows are damaged; another store is one these helpers cannot.

    They know the stores a database keeps by default: blob files, or rows beside the
    checkpoints. A test that damages stored bytes opens its workflow on one of them
    (``own_store_workflow``), whatever store ``HANDOFF_ARTIFACT_STORE`` names.
    """
    if not isinstance(store, PostgresArtifactStore):
        raise TypeError(f"store_faults cannot damage a {type(store).__name__}: see rows()")
    return store


def tamper(store: Any, ref: ArtifactRef) -> None:
    """Change the stored bytes of a revision without changing its recorded hash."""
    if isinstance(store, FolderBlobs):
        path = store.root / "blobs" / ref.sha256[:2] / ref.sha256
        path.chmod(0o644)
        path.write_bytes(path.read_bytes() + b"\nInjected sentence that nobody wrote.\n")
        return
    with rows(store)._session() as conn:
        conn.execute(
            "UPDATE handoff_artifact_blobs SET content = content || %s WHERE sha256 = %s",
            (b"\nInjected sentence.\n", ref.sha256),
        )


def restore(store: Any, ref: ArtifactRef, content: bytes) -> None:
    """Put back the bytes a revision was recorded with (an operator's restore from backup)."""
    if isinstance(store, FolderBlobs):
        (store.root / "blobs" / ref.sha256[:2] / ref.sha256).write_bytes(content)
        return
    with rows(store)._session() as conn:
        conn.execute(
            "UPDATE handoff_artifact_blobs SET content = %s WHERE sha256 = %s",
            (content, ref.sha256),
        )


def delete(store: Any, ref: ArtifactRef) -> None:
    """Remove the stored bytes of a revision."""
    if isinstance(store, FolderBlobs):
        (store.root / "blobs" / ref.sha256[:2] / ref.sha256).unlink()
        return
    with rows(store)._session() as conn:  # the whole artifact, as a purge by an operator would
        conn.execute(
            "DELETE FROM handoff_artifact_revisions WHERE artifact_id = %s", (ref.artifact_id,)
        )
        conn.execute("DELETE FROM handoff_artifacts WHERE artifact_id = %s", (ref.artifact_id,))
        conn.execute(
            "DELETE FROM handoff_artifact_blobs b WHERE sha256 = %s AND NOT EXISTS "
            "(SELECT 1 FROM handoff_artifact_revisions r WHERE r.sha256 = b.sha256)",
            (ref.sha256,),
        )
