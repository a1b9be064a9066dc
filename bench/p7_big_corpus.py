"""P7 a big corpus in the store: ``threads`` and ``status`` with and without it.

Two SQLite stores hold four threads each, run to the end: one holds four small threads
(the bundled corpus), the other three of them and a thread that researched a corpus of
10,000 small generated markdown files (``HANDOFF_CORPUS_MAX_FILES`` raised to admit it).
Its research bundle and handoff envelope list every source: megabytes of channel values,
each stored once per version in the saver's ``checkpoint_blobs`` table.

- threads: what ``handoff threads`` does after start-up: open a read-only Workflow, list
  the thread ids and read each thread's row (``Workflow.summary``). The store of small
  threads (baseline) vs the store with the big thread in place of one (candidate).
- status: what ``handoff status`` does: a read-only Workflow and ``status`` (whose report
  holds the outcome too). A small thread (baseline) vs the big thread (candidate), in the
  store holding both.
- info: the big thread's status read the way LangGraph reads a thread (``get_state`` of
  the full state and ``list`` of its checkpoints, as ``status`` did before it read only
  the small channels) vs as ``status`` reads it now.

Printed besides: the big thread's bytes per checkpoint and the time its run took.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path

from app.settings import Settings
from app.storage.backends import sqlite_path
from app.storage.backends.sqlite_saver_sql import blob_values, named_blobs, row_bytes
from app.storage.backends.sqlite_steps import run
from app.storage.serde import contract_serializer
from app.workflow import Workflow
from bench._common import (
    OBJECTIVE,
    Row,
    interleaved,
    parse_args,
    print_rows,
    print_table,
    scratch_dir,
    size,
    timed,
    workflow_settings,
)

FILES = 10_000
QUICK_FILES = 200
SMALL_THREADS = 3
THREADS_TARGET = 1.5
"""A store holding the big thread lists its threads at most this much slower."""
STATUS_TARGET = 2.0
"""The big thread's status takes at most this much longer than a small thread's."""
_WORDS = (
    "stone script priest decree king temple scribe greek demotic hieroglyph text name "
    "royal cartouche column copy museum"
).split()


def write_corpus(folder: Path, count: int) -> Path:
    """``count`` small markdown files of deterministic prose about the objective's topic."""
    folder.mkdir(parents=True)
    rng = random.Random(7)
    for index in range(count):
        body = " ".join(rng.choice(_WORDS) for _ in range(40))
        (folder / f"note-{index:05d}.md").write_text(
            f"# Note {index}\n\nThe Rosetta Stone {body}.\n", encoding="utf-8"
        )
    return folder


def _small_threads(settings: Settings, count: int) -> list[str]:
    threads = [f"small-{index}" for index in range(count)]
    with Workflow(settings) as workflow:
        for thread in threads:
            outcome = workflow.run(OBJECTIVE, thread_id=thread)
            if outcome.result_status != "completed":
                raise RuntimeError(f"small thread did not complete: {outcome}")
    return threads


def checkpoint_bytes(database: Path, thread_id: str) -> tuple[int, int]:
    """The thread's checkpoints: how many, and the bytes of the largest.

    A checkpoint's bytes: its row and the values its blob rows hold or share, what a full
    read of it reads (the rows themselves keep versions, not values).
    """
    serde = contract_serializer()
    sizes = []
    with closing(sqlite3.connect(database)) as conn:
        rows = conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, type, checkpoint FROM checkpoints "
            "WHERE thread_id = ?",
            (thread_id,),
        ).fetchall()
        for namespace, checkpoint_id, kind, data in rows:
            stored = row_bytes(thread_id, namespace, checkpoint_id, kind, data)
            serialized = run(conn.cursor(), stored)
            keys = named_blobs(serde.loads_typed(serialized))
            values = run(conn.cursor(), blob_values(thread_id, namespace, keys))
            sizes.append(len(data) + sum(len(value or b"") for _, _, value in values))
    return len(sizes), max(sizes)


def timed_read(settings: Settings, read: Callable[[Workflow], object]) -> Callable[[int], float]:
    """One sample of a read-only CLI command: opening the Workflow is timed with the read."""

    def command() -> None:
        with Workflow(settings, read_only=True) as workflow:
            read(workflow)

    return lambda _: timed(command)


def list_threads(workflow: Workflow) -> None:
    """``handoff threads`` after start-up: list the ids, read each thread's row."""
    rows = [workflow.summary(thread) for thread in workflow.threads()]
    if not rows:
        raise RuntimeError("no threads listed")


def show_status(thread_id: str) -> Callable[[Workflow], object]:
    """``handoff status THREAD`` after start-up."""
    return lambda workflow: workflow.status(thread_id)


def full_read(thread_id: str) -> Callable[[Workflow], object]:
    """A thread read LangGraph's way: the full state and every checkpoint."""

    def read(workflow: Workflow) -> None:
        config = workflow.config(thread_id)
        workflow.graph.get_state(config)
        sum(1 for _ in workflow.saver.list(config))

    return read


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P7; returns the rows."""
    args = parse_args(
        argv, "P7 threads and status beside a big-corpus thread", repeats=20, quick_repeats=2
    )
    files = QUICK_FILES if args.quick else FILES
    with scratch_dir("p7") as root:
        corpus = write_corpus(root / "corpus", files)
        plain = workflow_settings(root, "without")
        loaded = workflow_settings(root, "with").with_overrides(
            corpus_roots=[root], corpus_max_files=files
        )
        small = _small_threads(plain, SMALL_THREADS + 1)
        _small_threads(loaded, SMALL_THREADS)
        with Workflow(loaded) as workflow:
            began = time.perf_counter()
            outcome = workflow.run(workflow.task(OBJECTIVE, corpus=[str(corpus)]), "big")
            run_seconds = time.perf_counter() - began
        if outcome.state.value != "TASK_STATE_COMPLETED":
            raise RuntimeError(f"the big thread did not end: {outcome}")
        checkpoints, largest = checkpoint_bytes(sqlite_path(loaded.resolved_database_url()), "big")

        samples = interleaved(
            {
                "threads without": timed_read(plain, list_threads),
                "threads with": timed_read(loaded, list_threads),
                "status small": timed_read(loaded, show_status(small[0])),
                "status big": timed_read(loaded, show_status("big")),
            },
            repeats=args.repeats,
        )
        full = interleaved(
            {
                "full": timed_read(loaded, full_read("big")),
                "glance": timed_read(loaded, show_status("big")),
            },
            repeats=max(1, args.repeats // 3),
        )
    rows = [
        Row.of(
            "P7",
            f"threads, one of {files:,} files",
            (f"{SMALL_THREADS + 1} small threads", samples["threads without"]),
            (f"{SMALL_THREADS} + a {files:,}-file one", samples["threads with"]),
            max_ratio=THREADS_TARGET,
        ),
        Row.of(
            "P7",
            "status",
            ("small thread", samples["status small"]),
            (f"{files:,}-file thread", samples["status big"]),
            max_ratio=STATUS_TARGET,
        ),
        Row.of(
            "P7",
            f"status of the {files:,}-file thread (info)",
            ("small channels", full["glance"]),
            ("full state + list", full["full"]),
        ),
    ]
    print_rows("P7 threads and status beside a big-corpus thread (SQLite)", rows)
    print_table(
        "P7 the big thread",
        ["files", "run", "checkpoints", "largest checkpoint", "result"],
        [
            [
                f"{files:,}",
                f"{run_seconds:.1f} s",
                str(checkpoints),
                size(largest),
                str(outcome.result_status),
            ]
        ],
    )
    return rows


if __name__ == "__main__":
    main()
