"""The SQLite savers keep each channel value once per version, compressed, and read the old layout.

See app/storage/backends/sqlite_saver.py. LangGraph's conformance suite runs on both savers in
test_checkpoint_conformance.py; here: what that suite cannot see (the rows in the file),
threads saved by LangGraph's own SqliteSaver, and a DeltaChannel, whose history is walked
through the blob rows.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import Annotated, Any

import aiosqlite
import pytest
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from app.settings import Settings
from app.storage.backends.sqlite_saver import BlobSqliteSaver, owned_tables
from app.storage.backends.sqlite_saver_aio import AsyncBlobSqliteSaver
from app.storage.backends.sqlite_saver_sql import BLOBS_TABLE
from app.storage.backends.sqlite_values import (
    DELTA,
    PACKED,
    SHARED,
    VALUES_TABLE,
    packed,
    unpacked,
)
from app.workflow import Workflow
from contracts import TaskState
from tests.backends import sqlite_settings
from tests.conftest import OBJECTIVE

TEXT = "notes " * 2_000
STEPS = 5


class Counting(TypedDict):
    text: str
    n: int


def counting_graph(saver: BaseCheckpointSaver[Any] | None, *, ask: bool = False) -> Any:
    """``text`` set once, ``n`` counted up one step at a time; ``ask`` pauses at n == 2."""

    def step(state: Counting) -> dict[str, Any]:
        if ask and state["n"] == 2:
            return {"n": state["n"] + int(interrupt("how many?"))}
        return {"n": state["n"] + 1}

    graph = StateGraph(Counting)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda state: END if state["n"] >= STEPS else "step")
    return graph.compile(checkpointer=saver)


@contextmanager
def sync_saver(path: Path, kind: type[SqliteSaver] = BlobSqliteSaver) -> Iterator[SqliteSaver]:
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        saver = kind(conn)
        saver.setup()
        yield saver


@asynccontextmanager
async def async_saver(path: Path) -> AsyncIterator[AsyncBlobSqliteSaver]:
    async with aiosqlite.connect(path) as conn:
        yield AsyncBlobSqliteSaver(conn)


def count(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """The counting graph run to its end on ``saver``."""
    counting_graph(saver).invoke({"text": TEXT, "n": 0}, config(thread_id))


async def count_async(path: Path, thread_id: str) -> None:
    """The counting graph run to its end on the async saver."""
    async with async_saver(path) as saver:
        await counting_graph(saver).ainvoke({"text": TEXT, "n": 0}, config(thread_id))


@contextmanager
def counted_both_ways(path: Path, async_thread: str, sync_thread: str) -> Iterator[SqliteSaver]:
    """One file the async saver counted a thread in, then the sync one another; still open."""
    asyncio.run(count_async(path, async_thread))
    with sync_saver(path) as saver:
        count(saver, sync_thread)
        yield saver


def rows(path: Path, query: str, *args: object) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(query, args).fetchall()


def has_blobs_table(path: Path) -> bool:
    return bool(rows(path, "SELECT 1 FROM sqlite_master WHERE name = ?", BLOBS_TABLE))


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def history(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[dict[str, Any]]:
    return [
        dict(state.values) for state in counting_graph(saver).get_state_history(config(thread_id))
    ]


def test_a_value_is_stored_once_however_many_checkpoints_carry_it(tmp_path: Path) -> None:
    path = tmp_path / "blobs.db"
    with sync_saver(path) as saver:
        count(saver, "t")
        states = history(saver, "t")
    assert len(states) == STEPS + 2 and all(state.get("text") == TEXT for state in states[:-1])
    assert rows(path, f"SELECT COUNT(*) FROM {BLOBS_TABLE} WHERE channel = 'text'") == [(1,)]
    [(largest,)] = rows(path, "SELECT MAX(LENGTH(checkpoint)) FROM checkpoints")
    assert largest < 1_000, "the rows keep versions, not the text"
    assert owned_tables() == (BLOBS_TABLE, VALUES_TABLE, "checkpoints", "writes")
    index = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
    for table in (BLOBS_TABLE, "writes"):
        assert rows(path, index, table) == [], f"{table} rows live in their key's b-tree"


def test_the_writes_table_has_sqlite_savers_columns_and_key_sync_and_async(
    tmp_path: Path,
) -> None:
    with sync_saver(tmp_path / "stock.db", SqliteSaver):
        pass
    with counted_both_ways(tmp_path / "both.db", "async", "sync"):
        pass

    async def made_async() -> None:
        async with async_saver(tmp_path / "async.db") as saver:
            await saver.setup()

    asyncio.run(made_async())
    columns = "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('writes')"
    stock = rows(tmp_path / "stock.db", columns)
    assert rows(tmp_path / "both.db", columns) == rows(tmp_path / "async.db", columns) == stock
    no_rowid = "SELECT sql LIKE '%WITHOUT ROWID' FROM sqlite_master WHERE name = 'writes'"
    assert rows(tmp_path / "async.db", no_rowid) == [(1,)] == rows(tmp_path / "both.db", no_rowid)


def test_the_async_saver_stores_what_the_sync_one_reads_and_the_other_way_round(
    tmp_path: Path,
) -> None:
    path = tmp_path / "both.db"
    with counted_both_ways(path, "from-async", "from-sync") as saver:
        from_async = history(saver, "from-async")
        from_sync = history(saver, "from-sync")

    async def read_async() -> list[dict[str, Any]]:
        async with async_saver(path) as saver:
            graph = counting_graph(saver)
            return [dict(s.values) async for s in graph.aget_state_history(config("from-sync"))]

    assert from_async == from_sync == asyncio.run(read_async())
    stored = f"SELECT thread_id, channel FROM {BLOBS_TABLE} ORDER BY 1, 2"
    assert rows(path, stored) == [
        (thread_id, channel)
        for thread_id in ("from-async", "from-sync")
        for channel in ("__start__", "text")  # the input, then the text; n is in the rows
    ]


def test_a_write_and_the_channel_version_it_becomes_share_one_value_sync_and_async(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.db"
    with counted_both_ways(path, "async", "sync") as saver:
        assert history(saver, "sync") == history(saver, "async")
    for thread_id in ("sync", "async"):
        refs = rows(
            path,
            "SELECT type, value FROM writes WHERE thread_id = ? AND channel = 'text' UNION ALL "
            f"SELECT type, blob FROM {BLOBS_TABLE} WHERE thread_id = ? AND channel = 'text'",
            thread_id,
            thread_id,
        )
        assert len(refs) == 2 and len(set(refs)) == 1, "the write and the blob row: one value"
        [(kind, digest)] = set(refs)
        assert kind == SHARED and len(digest) == 32
        stored = f"SELECT type FROM {VALUES_TABLE} WHERE thread_id = ? AND digest = ?"
        assert rows(path, stored, thread_id, digest) == [(PACKED + "msgpack",)]
    short = rows(path, "SELECT DISTINCT type FROM writes WHERE channel = 'n'")
    assert short == [("msgpack",)], "a value shorter than a reference stays in its row"


def test_values_and_checkpoint_rows_are_stored_compressed_unless_that_is_larger(
    tmp_path: Path,
) -> None:
    path = tmp_path / "packed.db"
    noise = os.urandom(4_000).hex()  # random text: compresses to half, not to a fifth
    with sync_saver(path) as saver:
        counting_graph(saver).invoke({"text": noise, "n": 0}, config("t"))
        assert history(saver, "t")[0] == {"text": noise, "n": STEPS}
    stored = rows(path, f"SELECT type, LENGTH(value) FROM {VALUES_TABLE}")
    assert {kind for kind, _ in stored} == {PACKED + "msgpack"}, "the input and the text"
    assert max(length for _, length in stored) < len(noise)
    first_row = rows(path, "SELECT type FROM checkpoints ORDER BY checkpoint_id LIMIT 1")
    assert first_row == [(PACKED + "msgpack",)], "later rows: differences from it (below)"
    assert packed("msgpack", os.urandom(500))[0] == "msgpack", "incompressible: kept as is"
    assert unpacked(*packed("msgpack", noise.encode())) == ("msgpack", noise.encode())


class Drafting(TypedDict):
    text: str
    n: int


def drafting_graph(saver: BaseCheckpointSaver[Any] | None) -> Any:
    """``text`` changed a little at each step, as a handoff envelope changes node to node."""

    def step(state: Drafting) -> dict[str, Any]:
        return {"text": f"{state['text']} step {state['n']}.", "n": state["n"] + 1}

    graph = StateGraph(Drafting)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda state: END if state["n"] >= STEPS else "step")
    return graph.compile(checkpointer=saver)


def drafted(text: str) -> list[dict[str, Any]]:
    """The drafting thread's history, newest first, as ``get_state_history`` gives it."""
    states = [{"text": text + "".join(f" step {n}." for n in range(k)), "n": k} for k in range(6)]
    return [*reversed(states), {}]


def text_values(path: Path, thread_id: str) -> list[tuple[str, int]]:
    """Type and stored bytes of each value of the thread's ``text``, first stored first."""
    return rows(
        path,
        f"SELECT v.type, LENGTH(v.value) FROM {VALUES_TABLE} AS v JOIN {BLOBS_TABLE} AS b "
        "ON b.thread_id = v.thread_id AND b.blob = v.digest "
        "WHERE v.thread_id = ? AND b.channel = 'text' ORDER BY b.version",
        thread_id,
    )


def keyframe_of(row: bytes) -> str:
    """The checkpoint id a row stored as a difference names as its keyframe."""
    return row[1 : 1 + row[0]].decode()


def test_a_channels_later_values_are_stored_as_differences_and_read_back_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "delta.db"
    noise = os.urandom(3_000).hex()  # compresses to half: the difference is what is small
    with sync_saver(path) as saver:
        drafting_graph(saver).invoke({"text": noise, "n": 0}, config("sync"), durability="sync")

    async def draft_async() -> None:
        async with async_saver(path) as saver:
            await drafting_graph(saver).ainvoke(
                {"text": noise, "n": 0}, config("async"), durability="sync"
            )

    asyncio.run(draft_async())
    for thread_id in ("sync", "async"):
        stored = text_values(path, thread_id)
        assert len(stored) == STEPS + 1
        (first_kind, first_size), *later = stored
        assert first_kind == PACKED + "msgpack" and first_size > 2_000, "the keyframe: whole"
        assert {kind for kind, _ in later} == {DELTA + "msgpack"}
        assert max(size for _, size in later) < first_size / 10, "a few bytes changed: few stored"
        stored_rows = rows(
            path,
            "SELECT checkpoint_id, type, checkpoint FROM checkpoints WHERE thread_id = ?",
            thread_id,
        )
        kinds = {checkpoint_id: kind for checkpoint_id, kind, _ in stored_rows}
        differences = [data for _, kind, data in stored_rows if kind == DELTA + "msgpack"]
        assert differences, "checkpoint rows too, where that is at most half their bytes"
        assert {kinds[keyframe_of(data)] for data in differences} == {PACKED + "msgpack"}
    with sync_saver(path) as reader:  # a new saver: no keyframe in memory
        for thread_id in ("sync", "async"):
            states = [
                dict(state.values)
                for state in drafting_graph(reader).get_state_history(config(thread_id))
            ]
            assert states == drafted(noise)


def test_a_keyframe_the_file_no_longer_holds_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "gone.db"
    noise = os.urandom(3_000).hex()
    with sync_saver(path) as saver:
        drafting_graph(saver).invoke({"text": noise, "n": 0}, config("t"))
        with closing(sqlite3.connect(path)) as other:  # another process deletes the thread
            for table in ("checkpoints", "writes", BLOBS_TABLE, VALUES_TABLE):
                other.execute(f"DELETE FROM {table} WHERE thread_id = 't'")
            other.commit()
        again = "other " + noise  # the same thread id, run anew in this process
        drafting_graph(saver).invoke({"text": again, "n": 0}, config("t"))
    stored = rows(path, f"SELECT digest, type, value FROM {VALUES_TABLE} WHERE thread_id = 't'")
    whole = {bytes(digest) for digest, kind, _ in stored if kind == PACKED + "msgpack"}
    differences = [bytes(value) for _, kind, value in stored if kind == DELTA + "msgpack"]
    assert differences, "the new run's values are differences from its own keyframes"
    assert all(value[:32] in whole for value in differences), "none from the deleted ones"
    with sync_saver(path) as reader:
        states = [dict(s.values) for s in drafting_graph(reader).get_state_history(config("t"))]
        assert states == drafted(again)


def test_a_difference_whose_keyframe_is_a_difference_is_reported_as_damage(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chain.db"
    noise = os.urandom(3_000).hex()
    with sync_saver(path) as saver:
        drafting_graph(saver).invoke({"text": noise, "n": 0}, config("t"))
    [(digest, value)] = rows(
        path, f"SELECT digest, value FROM {VALUES_TABLE} WHERE type = ? LIMIT 1", PACKED + "msgpack"
    )
    with closing(sqlite3.connect(path)) as conn:  # damage: the keyframe made a difference
        conn.execute(
            f"UPDATE {VALUES_TABLE} SET type = ?, value = ? WHERE digest = ?",
            (DELTA + "msgpack", bytes(digest) + bytes(value), digest),
        )
        conn.commit()
    with sync_saver(path) as reader, pytest.raises(LookupError, match="damaged"):
        list(drafting_graph(reader).get_state_history(config("t")))


def test_a_checkpoint_row_whose_keyframe_row_is_gone_is_reported_as_damage(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rows.db"
    with sync_saver(path) as saver:
        drafting_graph(saver).invoke({"text": TEXT, "n": 0}, config("t"))
    [(data,)] = rows(
        path,
        "SELECT checkpoint FROM checkpoints WHERE type = ? ORDER BY checkpoint_id DESC LIMIT 1",
        DELTA + "msgpack",
    )
    with closing(sqlite3.connect(path)) as conn:  # damage: the latest row's keyframe lost
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (keyframe_of(data),))
        conn.commit()
    with sync_saver(path) as reader, pytest.raises(LookupError, match="gone: the file is damaged"):
        list(drafting_graph(reader).get_state_history(config("t")))


def test_a_file_saved_before_values_were_shared_reads_and_resumes(tmp_path: Path) -> None:
    from tests.fixtures.checkpoints.make_blob_layout_fixture import (
        FINISHED,
        FIXTURE,
        PAUSED,
    )
    from tests.fixtures.checkpoints.make_blob_layout_fixture import (
        TEXT as SAVED,
    )

    path = Path(shutil.copy(FIXTURE, tmp_path / "blobs.db"))
    old_rows = {
        table: rows(path, f"SELECT * FROM {table} ORDER BY 1, 2, 3, 4")
        for table in ("checkpoints", "writes", BLOBS_TABLE)
    }
    assert not rows(path, "SELECT 1 FROM sqlite_master WHERE name = ?", VALUES_TABLE)
    finished = [{"text": SAVED, "n": n} for n in range(STEPS, -1, -1)] + [{}]

    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        reader = BlobSqliteSaver(conn)
        reader.is_setup = True  # as the backend opens a read-only file: setup would write
        assert history(reader, FINISHED) == finished
        assert counting_graph(reader, ask=True).get_state(config(PAUSED)).next == ("step",)
    assert not rows(path, "SELECT 1 FROM sqlite_master WHERE name = ?", VALUES_TABLE)

    with sync_saver(path) as saver:
        assert history(saver, FINISHED) == finished
        graph = counting_graph(saver, ask=True)
        assert graph.invoke(Command(resume=3), config(PAUSED)) == {"text": SAVED, "n": STEPS}
        count(saver, "new")
        assert history(saver, "new")[0] == {"text": TEXT, "n": STEPS}
    for table, before in old_rows.items():
        after = rows(path, f"SELECT * FROM {table} WHERE thread_id != 'new' ORDER BY 1, 2, 3, 4")
        assert set(before) <= set(after), f"nothing saved before is rewritten in {table}"
    shared = f"SELECT DISTINCT thread_id FROM {VALUES_TABLE}"
    assert rows(path, shared) == [("new",)], "the new thread's values are shared"


def test_deleting_a_thread_deletes_its_blob_rows_sync_and_async(tmp_path: Path) -> None:
    path = tmp_path / "delete.db"
    with sync_saver(path) as saver:
        for thread_id in ("gone", "kept", "gone-async"):
            count(saver, thread_id)
        saver.delete_thread("gone")

    async def delete_async() -> None:
        async with async_saver(path) as saver:
            await saver.adelete_thread("gone-async")

    asyncio.run(delete_async())
    for table in owned_tables():
        assert rows(path, f"SELECT DISTINCT thread_id FROM {table}") == [("kept",)], table


def test_a_thread_saved_by_langgraphs_sqlite_saver_reads_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "stock.db"
    with sync_saver(path, SqliteSaver) as stock:
        counting_graph(stock, ask=True).invoke({"text": TEXT, "n": 0}, config("old"))
        before = history(stock, "old")
    assert not has_blobs_table(path)
    old_rows = rows(path, "SELECT checkpoint_id, checkpoint FROM checkpoints ORDER BY 1")

    with sync_saver(path) as saver:
        assert history(saver, "old") == before, "the old rows read as the stock saver reads them"
        graph = counting_graph(saver, ask=True)
        assert graph.get_state(config("old")).next == ("step",)
        assert graph.invoke(Command(resume=3), config("old")) == {"text": TEXT, "n": STEPS}
        after = history(saver, "old")
    assert after[len(after) - len(before) :] == before
    assert (
        rows(path, "SELECT checkpoint_id, checkpoint FROM checkpoints ORDER BY 1")[: len(old_rows)]
        == old_rows
    ), "nothing saved before is rewritten"
    carried = rows(path, f"SELECT COUNT(*) FROM {BLOBS_TABLE} WHERE channel = 'text'")
    assert carried == [(1,)], "the unchanged text got its one blob row when the thread saved"


def test_a_workflow_thread_paused_before_the_blob_layout_resumes_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings: Settings = sqlite_settings(tmp_path / "data")
    database = tmp_path / "data" / "handoff.db"
    with monkeypatch.context() as stock:
        stock.setattr("app.storage.backends.sqlite.BlobSqliteSaver", SqliteSaver)
        with Workflow(settings) as workflow:
            task = workflow.task(OBJECTIVE, policies={"require_approval": True})
            paused = workflow.run(task, "t-old")
    assert paused.state == TaskState.INPUT_REQUIRED and paused.human_request is not None
    assert not has_blobs_table(database), "saved by LangGraph's SqliteSaver"

    with Workflow(settings, read_only=True) as reader:
        status = reader.status("t-old")
        assert status.fact_count is not None and status.fact_count > 0
        assert reader.pending("t-old") == paused.human_request
        assert reader.threads() == ["t-old"]
    assert not has_blobs_table(database), "reading set nothing up"

    with Workflow(settings) as workflow:
        decision = {"interrupt_id": paused.human_request.interrupt_id, "action": "approve"}
        outcome = workflow.resume("t-old", decision)
        assert outcome.result_status == "completed"
        state = workflow.state("t-old")
        assert state["research"].facts and state["task"].objective == OBJECTIVE
        assert workflow.status("t-old").fact_count == len(state["research"].facts)
    channels = {name for (name,) in rows(database, f"SELECT channel FROM {BLOBS_TABLE}")}
    assert {"task", "research", "handoff", "draft", "review", "outcome"} <= channels


def extend(items: list[int], batches: Sequence[list[int]]) -> list[int]:
    return items + [item for batch in batches for item in batch]


class Tally(TypedDict):
    items: Annotated[list[int], DeltaChannel(extend, snapshot_frequency=3)]


def tally_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    graph = StateGraph(Tally)
    graph.add_node("add", lambda state: {"items": [len(state["items"])]})
    graph.add_edge(START, "add")
    graph.add_conditional_edges("add", lambda state: END if len(state["items"]) >= 7 else "add")
    return graph.compile(checkpointer=saver)


def test_a_delta_channel_is_rebuilt_from_blob_rows_and_writes(tmp_path: Path) -> None:
    expected_graph = tally_graph(InMemorySaver())
    expected_graph.invoke({"items": []}, config("t"))
    expected = [s.values for s in expected_graph.get_state_history(config("t"))]
    with sync_saver(tmp_path / "delta.db") as saver:
        graph = tally_graph(saver)
        graph.invoke({"items": []}, config("t"))
        assert [s.values for s in graph.get_state_history(config("t"))] == expected
    snapshots = f"SELECT COUNT(*) FROM {BLOBS_TABLE} WHERE channel = 'items'"
    assert rows(tmp_path / "delta.db", snapshots) == [(2,)], "the other steps replay writes"

    async def run_async() -> list[Any]:
        async with async_saver(tmp_path / "delta-async.db") as saver:
            graph = tally_graph(saver)
            await graph.ainvoke({"items": []}, config("t"))
            return [s.values async for s in graph.aget_state_history(config("t"))]

    assert asyncio.run(run_async()) == expected
    assert expected[0] == {"items": list(range(7))}


def test_a_checkpoint_with_more_values_than_one_query_asks_for_reads_them_all(
    tmp_path: Path,
) -> None:
    values = {f"channel-{index}": f"value {index}" for index in range(250)}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, 1)
    with sync_saver(tmp_path / "wide.db") as saver:
        saved = saver.put(
            {"configurable": {"thread_id": "wide", "checkpoint_ns": ""}},
            checkpoint,
            {},
            checkpoint["channel_versions"],
        )
        found = saver.get_tuple(saved)
    assert found is not None and found.checkpoint["channel_values"] == values
