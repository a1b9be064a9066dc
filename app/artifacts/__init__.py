"""Artifact storage: where everything too large for graph state lives, revisioned and hashed."""

from app.artifacts.filesystem import FilesystemArtifactStore, Verification, parse_artifact_uri

__all__ = ["FilesystemArtifactStore", "Verification", "parse_artifact_uri"]
