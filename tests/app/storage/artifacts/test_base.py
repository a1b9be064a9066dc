"""What a store of one's own gets from ArtifactStoreBase without writing it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.storage.artifacts import FilesystemArtifactStore
from app.storage.artifacts.base import ArtifactStoreBase
from graphs.errors import UsageError


def test_a_store_without_forget_and_sweep_runs_and_a_prune_on_it_is_refused_naming_them(
    tmp_path: Path,
) -> None:
    """A swapped store need not write retention to run threads; a prune says what it needs."""
    store = FilesystemArtifactStore(tmp_path / "artifacts")
    ref = store.put("t-draft", "draft", b"text", "text/markdown")
    with pytest.raises(UsageError, match=r"FilesystemArtifactStore keeps every artifact.*forget"):
        ArtifactStoreBase.forget(store, ["t-draft"])
    with pytest.raises(UsageError, match="sweep"):
        ArtifactStoreBase.sweep(store, {ref.sha256})
    assert ArtifactStoreBase.sweep(store, set()) == set(), "nothing to sweep: nothing to refuse"
    assert store.get(ref) == b"text", "nothing was removed"
