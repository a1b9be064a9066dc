"""The async twin of :class:`~app.storage.backends.sqlite_saver.BlobSqliteSaver`, for serving.

``langgraph dev`` checkpoints through an async saver (see ``app/server/checkpointer.py``),
and a thread it starts is resumed by the CLI and the other way round, so both must store
the same layout. This one runs the very statements of :mod:`app.storage.backends.sqlite_saver_sql`
on ``aiosqlite``; only the driver differs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar, cast

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from app.storage.backends import sqlite_saver_sql as sql
from app.storage.backends.sqlite_steps import Rows, Steps
from app.storage.backends.sqlite_values import Keyframes

T = TypeVar("T")


async def arun(conn: aiosqlite.Connection, steps: Steps[T]) -> T:
    """Run the statements on ``conn``; returns what the steps return."""
    try:
        statement = next(steps)
        while True:
            if statement.many:
                await conn.executemany(statement.text, statement.params)
                rows: Rows = []
            else:
                async with conn.execute(statement.text, statement.params) as cursor:
                    rows = [tuple(row) for row in await cursor.fetchall()]
            statement = steps.send(rows)
    except StopIteration as done:
        return cast(T, done.value)


class AsyncBlobSqliteSaver(AsyncSqliteSaver):
    """AsyncSqliteSaver storing each channel value once per version, as the sync one does."""

    def __init__(self, conn: aiosqlite.Connection, *, serde: SerializerProtocol | None = None):
        super().__init__(conn, serde=serde)
        self._blobs = False
        self._blobs_tried = False
        self.keyframes = Keyframes()

    async def setup(self) -> None:
        """The saver's own tables first, as the sync saver makes them, then AsyncSqliteSaver's."""
        if not self._blobs_tried:
            await self._own_tables()
        await super().setup()

    async def _own_tables(self) -> None:
        """``sql.CREATE_TABLES``, once; a read-only file is left as it is."""
        async with self.lock:
            if self._blobs_tried:
                return
            try:
                for statement in sql.CREATE_TABLES:
                    await self.conn.execute(statement)
                await self.conn.commit()
                self._blobs = True
            except aiosqlite.OperationalError as error:
                if "readonly database" not in str(error):
                    raise
            self._blobs_tried = True

    async def _has_blobs(self) -> bool:
        """Whether the file has ``checkpoint_blobs``; asked until it has."""
        if not self._blobs:
            async with self.conn.execute(sql.BLOBS_PRESENT) as cursor:
                self._blobs = bool(await cursor.fetchall())
        return self._blobs

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (the latest without an id), its values read."""
        await self.setup()
        async with self.lock:
            blobs = await self._has_blobs()
            steps = sql.get(
                self.serde,
                config,
                blobs=blobs,
                task_path=self._has_task_path,
                keyframes=self.keyframes,
            )
            return await arun(self.conn, steps)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The matching checkpoints, newest first, each with its values and writes."""
        await self.setup()
        query = sql.listing(config, filter, before, limit)
        async with self.lock, self.conn.execute(query.text, query.params) as cur:
            blobs = await self._has_blobs()
            async for row in cur:
                steps = sql.load(self.serde, tuple(row), blobs=blobs, task_path=self._has_task_path)
                yield await arun(self.conn, steps)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save the checkpoint and its new blob rows in one transaction (see the sync one)."""
        await self.setup()
        async with self.lock:
            return await self._transaction(
                sql.put(self.serde, config, checkpoint, metadata, self.keyframes)
            )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a task's writes and the values they share in one transaction."""
        await self.setup()
        async with self.lock:
            await self._transaction(
                sql.put_writes(self.serde, config, writes, task_id, task_path, self.keyframes)
            )

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread's rows in every table the saver owns, in one transaction."""
        await self.setup()
        async with self.lock:
            await self._transaction(sql.delete(thread_id))
        self.keyframes.forget(str(thread_id))

    async def _transaction(self, steps: Steps[T]) -> T:
        try:
            result = await arun(self.conn, steps)
        except BaseException:
            await self.conn.rollback()
            raise
        await self.conn.commit()
        return result

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """LangGraph's generic walk, as the sync saver's."""
        return await BaseCheckpointSaver.aget_delta_channel_history(
            self, config=config, channels=channels
        )
