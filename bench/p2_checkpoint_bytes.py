"""P2 checkpoint bytes vs artifact size: notes by reference vs notes in state.

For each notes size, one thread per side runs the whole offline workflow (research →
writer → reviewer → finalize) with a research agent whose notes artifact has that size.
Then one thread per side runs ``ROUNDS`` review rounds (a Writer that leaves one
sentence uncited every time, as in P3), 1 KiB of notes: the cost of a long thread.

- naive: the bare graph (see ``bench/_bare.py``) that also keeps the notes text in state.
- ours: the project's workflow; the notes go to the artifact store, state holds the ref.

Measured: the bytes of every row the thread has in every table the project's SQLite saver
owns (all columns), the tables read from a database the saver set up
(``owned_tables``): ``checkpoints``, ``writes``, ``checkpoint_blobs`` and
``checkpoint_values``. Ours also writes
an audit row per node attempt beside the checkpoints (``handoff_node_runs``); that is
shown in its own column, as is the one copy of the notes in the artifact store. Byte
counts are deterministic: one run per case.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from app.storage.backends import open_checkpointer, sqlite_path
from app.storage.backends.sqlite_saver import owned_tables
from app.storage.backends.sqlite_saver_sql import BLOBS_TABLE
from app.storage.backends.sqlite_values import SHARED, VALUES_TABLE
from app.storage.serde import contract_serializer
from app.workflow import Workflow
from bench._bare import BareAgents, MemoryStore, build_bare_graph
from bench._common import (
    OBJECTIVE,
    Measure,
    Row,
    parse_args,
    print_table,
    scratch_dir,
    size,
    workflow_settings,
)
from bench._variants import BigNotesResearch, StubbornWriter
from contracts import Budget, TaskSpec

KIB = 1024
MIB = 1024 * KIB
SIZES = (1 * KIB, 100 * KIB, 1 * MIB, 10 * MIB)
QUICK_SIZES = (1 * KIB, 100 * KIB)
ROUNDS = 8
QUICK_ROUNDS = 3
LIMIT = 64 * KIB
CHECKPOINT_TABLES = owned_tables()
LEDGER_TABLE = "handoff_node_runs"
VALUE_COLUMNS = {"writes": "value", BLOBS_TABLE: "blob"}
"""Where the saver keeps channel values inline, or a shared value's digest: a task's writes,
and each channel's values."""
SHARED_BY_CHANNEL = f"""
SELECT refs.channel, SUM(LENGTH(shared.value)) FROM (
    SELECT channel, value AS digest FROM writes WHERE thread_id = :thread AND type = :shared
    UNION SELECT channel, blob FROM {BLOBS_TABLE} WHERE thread_id = :thread AND type = :shared
) AS refs JOIN {VALUES_TABLE} AS shared
ON shared.thread_id = :thread AND shared.digest = refs.digest GROUP BY refs.channel"""
"""The shared values' bytes by the channel whose write or blob row refers to them."""


def thread_bytes(database: Path, tables: Sequence[str], thread_id: str) -> int:
    """Bytes of every column of every row the thread has in ``tables`` (absent tables: 0)."""
    return sum(bytes_by_table(database, tables, thread_id).values())


def bytes_by_table(database: Path, tables: Sequence[str], thread_id: str) -> dict[str, int]:
    """The thread's bytes in each of ``tables`` (absent tables: 0)."""
    found = dict.fromkeys(tables, 0)
    with closing(sqlite3.connect(database)) as conn:
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        for table in tables:
            if table not in present:
                continue
            for row in conn.execute(f"SELECT * FROM {table} WHERE thread_id = ?", (thread_id,)):
                found[table] += sum(_cell_bytes(cell) for cell in row)
    return found


def value_bytes(database: Path, thread_id: str) -> dict[str, Counter[str]]:
    """Per table that holds channel values (and exists), the thread's value bytes by channel.

    The writes and blob rows' own bytes (a shared value's digest), then the shared values
    by the channel that refers to them.
    """
    found: dict[str, Counter[str]] = {}
    with closing(sqlite3.connect(database)) as conn:
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        for table, column in VALUE_COLUMNS.items():
            if table not in present:
                continue
            rows = conn.execute(
                f"SELECT channel, SUM(LENGTH({column})) FROM {table} WHERE thread_id = ? "
                "GROUP BY channel",
                (thread_id,),
            )
            found[table] = Counter({channel: int(total or 0) for channel, total in rows})
        if VALUES_TABLE in present:
            rows = conn.execute(SHARED_BY_CHANNEL, {"thread": thread_id, "shared": SHARED})
            found[VALUES_TABLE] = Counter({channel: int(total or 0) for channel, total in rows})
    return found


def _cell_bytes(cell: object) -> int:
    if cell is None:
        return 0
    if isinstance(cell, bytes):
        return len(cell)
    if isinstance(cell, str):
        return len(cell.encode())
    return 8


@dataclass(frozen=True)
class Pair:
    """One case measured on both sides."""

    naive: int
    ours: int
    ledger: int
    artifact: int
    checkpoints: int
    naive_checkpoints: int


def run_pair(
    workflow: Workflow,
    naive_saver: object,
    naive_db: Path,
    name: str,
    notes_size: int,
    rounds: int | None = None,
) -> Pair:
    """Run the case on both sides, threads ``naive-<name>`` and ``ours-<name>``."""
    base = workflow.context
    budget = Budget(max_review_rounds=rounds) if rounds else Budget()
    task = TaskSpec(task_id=f"p2-{name}", objective=OBJECTIVE, budget=budget)
    research = BigNotesResearch(base.agents["research"], notes_size)
    writer = StubbornWriter(base.agents["writer"]) if rounds else base.agents["writer"]

    naive_thread = f"naive-{name}"
    agents = BareAgents(research, writer, base.agents["reviewer"])
    naive = build_bare_graph(agents, MemoryStore(), notes_in_state=True).compile(
        checkpointer=naive_saver  # type: ignore[arg-type]
    )
    config = workflow.config(naive_thread)
    naive.invoke({"task": task}, config, durability="sync")
    values = naive.get_state(config).values
    if len(values.get("notes", "")) != notes_size or values["draft"].revision != (rounds or 1):
        raise RuntimeError(f"naive run did not keep the notes and write {rounds or 1} drafts")

    ours_thread = f"ours-{name}"
    context = base.with_agent("research", research).with_agent("writer", writer)
    with Workflow(workflow.settings, context=context) as ours:
        outcome = ours.run(task, thread_id=ours_thread)
        notes_ref = ours.artifact_ref(ours_thread, "notes")
        draft = ours.state(ours_thread)["draft"]
        checkpoints = ours.checkpoint_count(ours_thread)
    if notes_ref.size_bytes != notes_size or draft.revision != (rounds or 1):
        raise RuntimeError(f"ours did not store the notes and write {rounds or 1} drafts")
    if not rounds and outcome.result_status != "completed":
        raise RuntimeError(f"ours did not complete: {outcome}")

    ours_db = sqlite_path(workflow.settings.resolved_database_url())
    return Pair(
        naive=thread_bytes(naive_db, CHECKPOINT_TABLES, naive_thread),
        ours=thread_bytes(ours_db, CHECKPOINT_TABLES, ours_thread),
        ledger=thread_bytes(ours_db, (LEDGER_TABLE,), ours_thread),
        artifact=notes_ref.size_bytes,
        checkpoints=checkpoints,
        naive_checkpoints=len(list(naive.get_state_history(config))),
    )


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P2; returns the rows."""
    args = parse_args(argv, "P2 checkpoint bytes vs artifact size", repeats=1, quick_repeats=1)
    sizes = QUICK_SIZES if args.quick else SIZES
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    rows: list[Row] = []
    table: list[list[str]] = []
    with (
        scratch_dir("p2") as root,
        Workflow(workflow_settings(root)) as workflow,
        open_checkpointer(f"sqlite:///{root / 'naive' / 'naive.db'}") as naive_saver,
    ):
        ours_db = sqlite_path(workflow.settings.resolved_database_url())
        naive_db = root / "naive" / "naive.db"
        cases: list[tuple[str, str, int, int | None]] = [
            (f"notes {size(n)}", str(n), n, None) for n in sizes
        ]
        cases.append((f"{rounds} review rounds", f"rounds-{rounds}", sizes[0], rounds))
        for case, name, notes_size, review_rounds in cases:
            pair = run_pair(workflow, naive_saver, naive_db, name, notes_size, review_rounds)
            row = Row(
                bench="P2",
                case=case,
                unit="bytes",
                baseline_name="naive",
                baseline=Measure.exact(pair.naive),
                candidate_name="ours",
                candidate=Measure.exact(pair.ours),
                target="" if review_rounds else f"ours < {size(LIMIT)}",
                passed=None if review_rounds else pair.ours < LIMIT,
            )
            rows.append(row)
            table.append(
                [
                    case,
                    size(pair.naive),
                    f"{pair.naive / notes_size:.1f}",
                    size(pair.ours),
                    f"{pair.naive_checkpoints} / {pair.checkpoints}",
                    size(pair.ledger),
                    size(pair.artifact),
                    f"{pair.naive / pair.ours:.1f}x",
                    row.target_text,
                    row.verdict,
                ]
            )
        final_state = workflow.state(f"ours-{sizes[-1]}")
        parts = {
            cases[index][0]: (
                bytes_by_table(ours_db, CHECKPOINT_TABLES, f"ours-{cases[index][1]}"),
                value_bytes(ours_db, f"ours-{cases[index][1]}"),
            )
            for index in (len(sizes) - 1, len(sizes))
        }
    print_table(
        f"P2 checkpoint bytes per thread ({', '.join(CHECKPOINT_TABLES)} tables), one run a case",
        [
            "case",
            "naive",
            "naive/notes",
            "ours",
            "checkpoints naive / ours",
            "ours audit rows",
            "ours artifact",
            "naive/ours",
            "target",
            "verdict",
        ],
        table,
    )
    serde = contract_serializer()
    channels = ", ".join(
        f"{channel} {size(len(serde.dumps_typed(value)[1]))}"
        for channel, value in final_state.items()
    )
    print(f"ours, final state by channel: {channels}")
    for case, (by_table, by_value) in parts.items():
        print(
            f"ours, {case}, by table: "
            + ", ".join(f"{name} {size(total)}" for name, total in by_table.items())
        )
        for table_name, totals in by_value.items():
            print(
                f"  values in {table_name}: "
                + ", ".join(f"{channel} {size(total)}" for channel, total in totals.most_common())
            )
    flat = rows[len(sizes) - 1].candidate.median / rows[0].candidate.median
    growth = rows[len(sizes) - 1].baseline.median / rows[0].baseline.median
    print(
        f"from {rows[0].case[6:]} to {rows[len(sizes) - 1].case[6:]} of notes: ours x{flat:.2f}, "
        f"naive x{growth:.0f}"
    )
    return rows


if __name__ == "__main__":
    main()
