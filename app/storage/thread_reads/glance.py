"""The read-only saver ``threads`` and ``status`` read through: large channels left out.

Which database the Workflow's saver writes decides how a glance reads it: SQLite
(``app.storage.thread_reads.sqlite``) and PostgreSQL (``app.storage.thread_reads.postgres``)
leave the large values unselected; other savers (``memory://``) are read whole, since
nothing of theirs outlives the process that wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, NoReturn, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from app.storage.checkpointing import SingleWriterSaver
from app.storage.thread_reads.packed import count_decoded
from app.storage.thread_reads.postgres import PostgresGlance, is_postgres
from app.storage.thread_reads.sqlite import SqliteGlance

_CHANNEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_:.-]*$")


class GlanceSaver(BaseCheckpointSaver[str]):
    """A read-only saver whose checkpoints leave the ``skipped`` channels out, undecoded.

    Only ``get_tuple`` is served (all ``get_state`` needs); it never writes. ``inner`` is
    the Workflow's saver; its serializer decodes what is read.
    """

    def __init__(self, inner: BaseCheckpointSaver[str], skipped: Collection[str]) -> None:
        bare = inner.inner if isinstance(inner, SingleWriterSaver) else inner
        super().__init__(serde=bare.serde)
        for channel in skipped:
            if not _CHANNEL_NAME.match(channel):
                raise ValueError(f"channel name {channel!r} cannot be left out of a query")
        self.inner = bare
        self.skipped = frozenset(skipped)
        self._sqlite = (
            SqliteGlance(bare, self.skipped, self.serde) if isinstance(bare, SqliteSaver) else None
        )
        self._postgres = (
            PostgresGlance(bare, self.skipped, self.serde) if is_postgres(bare) else None
        )

    # -- what a listing asks -----------------------------------------------------------

    def thread_ids(self) -> list[str]:
        """Every thread id with a checkpoint, sorted; no checkpoint is decoded."""
        query = "SELECT DISTINCT thread_id FROM checkpoints"
        if self._sqlite is not None:
            rows = self._sqlite.rows(query, ())
        elif self._postgres is not None:
            rows = self._postgres.rows(query, ())
        elif isinstance(self.inner, InMemorySaver):
            return sorted(str(thread) for thread in self.inner.storage)
        else:  # a saver this module does not know: its own listing, which decodes
            return sorted(
                {str(item.config["configurable"]["thread_id"]) for item in self.inner.list(None)}
            )
        return sorted(str(row[0]) for row in rows)

    def checkpoint_count(self, thread_id: str) -> int:
        """How many checkpoints the thread has, in every namespace; none is decoded."""
        query = "SELECT COUNT(*) FROM checkpoints WHERE thread_id = "
        if self._sqlite is not None:
            return int(self._sqlite.rows(query + "?", (thread_id,))[0][0])
        if self._postgres is not None:
            return int(self._postgres.rows(query + "%s", (thread_id,))[0][0])
        if isinstance(self.inner, InMemorySaver):
            return sum(len(found) for found in self.inner.storage.get(thread_id, {}).values())
        return sum(1 for _ in self.inner.list({"configurable": {"thread_id": thread_id}}))

    def count_items(self, config: RunnableConfig, channel: str, field: str) -> int | None:
        """Items in list ``field`` of the model in ``channel``, without building the model.

        The checkpoint is the one ``config`` names (the latest without an id); None when it
        holds no such value.
        """
        if self._sqlite is not None:
            return self._sqlite.count_items(config, channel, field)
        if self._postgres is not None:
            return self._postgres.count_items(config, channel, field)
        return count_decoded(self.inner, config, channel, field)

    # -- BaseCheckpointSaver -------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (the latest without an id), skipped channels out."""
        if self._sqlite is not None:
            return self._sqlite.get_tuple(config)
        if self._postgres is not None:
            return self._postgres.selecting().get_tuple(config)
        found = self.inner.get_tuple(config)
        if found is None:
            return None
        values = {
            channel: value
            for channel, value in found.checkpoint["channel_values"].items()
            if channel not in self.skipped
        }
        checkpoint = cast(Checkpoint, {**found.checkpoint, "channel_values": values})
        writes = [write for write in found.pending_writes or [] if write[1] not in self.skipped]
        return found._replace(checkpoint=checkpoint, pending_writes=writes)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Skipped channels empty, as left out; the others as the inner saver has them.

        LangGraph asks this for an aggregate channel whose value a checkpoint does not hold
        (``branches``, always skipped): answered by the default walk, every ancestor would
        be read through :meth:`get_tuple`, which leaves the channel out of each of them
        too, so a glance read the whole thread.
        """
        wanted = [channel for channel in channels if channel not in self.skipped]
        found = self.inner.get_delta_channel_history(config=config, channels=wanted)
        return {channel: found.get(channel) or {"writes": []} for channel in channels}

    def list(self, *args: Any, **kwargs: Any) -> Iterator[CheckpointTuple]:
        """Not served: a listing asks :meth:`thread_ids` and :meth:`checkpoint_count`."""
        raise NotImplementedError("GlanceSaver lists nothing: use thread_ids()/checkpoint_count()")

    def put(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: this saver only reads; run and resume through the Workflow's saver."""
        _refuse_writes()

    def put_writes(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: this saver only reads; run and resume through the Workflow's saver."""
        _refuse_writes()


def _refuse_writes() -> NoReturn:
    raise NotImplementedError("GlanceSaver is read-only: write through the Workflow's saver")
