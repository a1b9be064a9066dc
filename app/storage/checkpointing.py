"""The saver a Workflow checkpoints through: one writer per thread, whatever the database.

``app.storage.backends.open_checkpointer(url)`` gives the bare saver (for the bare graph and
scripts). The Workflow wraps it in :class:`SingleWriterSaver`, which sends the writes of a
thread that this process has locked through the lock's own writer (see ``app/storage/locks.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, DeltaChannelHistory

from app.errors import CheckpointNotLatest

WriterRoute = Callable[[str], "BaseCheckpointSaver[str] | None"]
"""Given a thread id, the saver its writes must go through, or None for the inner saver."""


def _thread_of(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get("thread_id", ""))


class SingleWriterSaver(BaseCheckpointSaver[str]):
    """A saver that reads from ``inner`` and writes a locked thread through its lock.

    ``route(thread_id)`` names the saver that must carry that thread's writes: for
    PostgreSQL, a saver on the very connection that holds the thread's advisory lock. If
    that session ends (crash, restart, network), the lock is released *and* every further
    write of the old holder fails with it, so a process that lost its lock can never add a
    checkpoint after another process took the thread over: the chain cannot fork.

    Threads the process has not locked are written through ``inner``; the Workflow locks
    every thread it runs, so that path is only for tools such as the bare graph.

    The async methods run the sync ones in a worker thread, so the wrapper also serves
    async callers when the inner saver is sync-only (SqliteSaver, PostgresSaver).
    """

    def __init__(self, inner: BaseCheckpointSaver[str], route: WriterRoute) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.route = route
        self._heads: dict[tuple[str, str], str | None] = {}
        """The latest checkpoint of each (thread, namespace) as this saver last saw it."""

    def _writer(self, thread_id: str) -> BaseCheckpointSaver[str]:
        return self.route(thread_id) or self.inner

    @property
    def config_specs(self) -> list[Any]:
        """The inner saver's configuration fields."""
        return list(self.inner.config_specs)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> SingleWriterSaver:
        """Apply a msgpack allowlist to the inner saver (LangGraph does this on compile)."""
        inner = self.inner.with_allowlist(extra_allowlist)
        return self if inner is self.inner else SingleWriterSaver(inner, self.route)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Read through the inner saver."""
        return self.inner.get_tuple(config)

    def list(self, config: RunnableConfig | None, **options: Any) -> Iterator[CheckpointTuple]:
        """List through the inner saver (``options``: its ``filter``, ``before``, ``limit``)."""
        return self.inner.list(config, **options)

    def put(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> RunnableConfig:
        """Write through the thread's lock when this process holds it; never a fork.

        The checkpoint, metadata and versions pass on as given: only ``config`` (which
        names the thread and the checkpoint the new one follows) is this wrapper's business.
        A checkpoint that follows one other than the thread's latest would start a second
        history (LangGraph's time travel: a run or ``update_state`` from an earlier
        checkpoint): the audit, the reuse of results and the artifacts are the thread's, one
        history's, so it is refused and nothing is written. A revision is how a thread
        changes course.
        """
        configurable = config.get("configurable") or {}
        thread = _thread_of(config)
        key = (thread, str(configurable.get("checkpoint_ns") or ""))
        parent = configurable.get("checkpoint_id")
        if parent is not None and self._heads.get(key, "") != parent:
            latest = self.inner.get_tuple(
                {"configurable": {"thread_id": thread, "checkpoint_ns": key[1]}}
            )
            head = latest.config["configurable"]["checkpoint_id"] if latest else None
            if head is not None and head != parent:
                raise CheckpointNotLatest(
                    f"thread {thread!r}: a run goes on only from its latest checkpoint "
                    f"({head}), not from {parent}, which would fork the thread's history "
                    "(its audit, reused results and artifacts are one history's); nothing was "
                    "written: revise the thread to change its course, or start a new thread"
                )
        saved = self._writer(thread).put(config, *args, **kwargs)
        self._heads[key] = (saved.get("configurable") or {}).get("checkpoint_id")
        return saved

    def put_writes(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> None:
        """Write through the thread's lock when this process holds it (as ``put``)."""
        self._writer(_thread_of(config)).put_writes(config, *args, **kwargs)

    def delete_thread(self, thread_id: str) -> None:
        """Delete through the thread's lock when this process holds it."""
        self._writer(str(thread_id)).delete_thread(thread_id)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The inner saver's version scheme."""
        return self.inner.get_next_version(current, channel)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The inner saver's (possibly optimised) delta history."""
        return self.inner.get_delta_channel_history(config=config, channels=channels)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """``get_tuple`` in a worker thread."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self, config: RunnableConfig | None, **options: Any
    ) -> AsyncIterator[CheckpointTuple]:
        """``list`` in a worker thread."""
        items = await asyncio.to_thread(lambda: list(self.list(config, **options)))
        for item in items:
            yield item

    async def aput(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        """``put`` in a worker thread."""
        return await asyncio.to_thread(self.put, *args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        """``put_writes`` in a worker thread."""
        await asyncio.to_thread(self.put_writes, *args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        """``delete_thread`` in a worker thread."""
        await asyncio.to_thread(self.delete_thread, thread_id)
