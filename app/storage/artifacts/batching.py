"""One fsync for a node's puts: the block the node runner wraps a node's puts in."""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import ClassVar


class BatchedSyncs(ABC):
    """A store whose puts inside :meth:`batch` leave a shared fsync to the block's end.

    What a put defers is only the durability of its new history entry; its blob is durable
    before the entry is written, as outside a block. The caller must not record a ref
    anywhere before the block ends (the node runner ends it before the ledger's finish
    row). The fsync runs only when the block ends normally; after an exception it stays
    pending for the next block or :meth:`sync` (a failed node records no refs). Blocks
    nest (the outermost one syncs) and are per thread.
    """

    sync_at_end: ClassVar[bool] = True
    """Whether the block's end syncs; False for a store whose pending writes are made
    durable by the next fsynced commit that records them (see app.storage.artifacts.sqlite)."""

    def __init__(self) -> None:
        self._batching = threading.local()

    @property
    def _in_batch(self) -> bool:
        return bool(getattr(self._batching, "depth", 0))

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Puts in this block share one fsync, taken when it ends."""
        depth = getattr(self._batching, "depth", 0)
        self._batching.depth = depth + 1
        try:
            yield
        finally:
            self._batching.depth = depth
        if depth == 0 and self.sync_at_end:
            self.sync()

    @abstractmethod
    def sync(self) -> None:
        """Make every put a batch left pending durable now (any thread's)."""
