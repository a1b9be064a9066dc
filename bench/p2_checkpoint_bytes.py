"""P2 checkpoint bytes vs artifact size: notes by reference vs notes in state.

For each notes size, one thread per side runs the whole offline workflow (research →
writer → reviewer → finalize) with a research agent whose notes artifact has that size.

- naive: the bare graph (see ``bench/_bare.py``) that also keeps the notes text in state.
- ours: the project's workflow; the notes go to the artifact store, state holds the ref.

Measured: the bytes of every row the thread has in the SQLite ``checkpoints`` and
``writes`` tables (all columns). Ours also writes an audit row per node attempt beside
the checkpoints (``handoff_node_runs``); that is shown in its own column, as is the one
copy of the notes in the artifact store. Byte counts are deterministic: one run per size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from app.backends import open_checkpointer, sqlite_path
from app.serde import contract_serializer
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
from bench._variants import BigNotesResearch
from contracts import TaskSpec

KIB = 1024
MIB = 1024 * KIB
SIZES = (1 * KIB, 100 * KIB, 1 * MIB, 10 * MIB)
QUICK_SIZES = (1 * KIB, 100 * KIB)
LIMIT = 64 * KIB
CHECKPOINT_TABLES = ("checkpoints", "writes")
LEDGER_TABLE = "handoff_node_runs"


def thread_bytes(database: Path, tables: Sequence[str], thread_id: str) -> int:
    """Bytes of every column of every row the thread has in ``tables`` (absent tables: 0)."""
    total = 0
    with sqlite3.connect(database) as conn:
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        for table in tables:
            if table not in present:
                continue
            for row in conn.execute(f"SELECT * FROM {table} WHERE thread_id = ?", (thread_id,)):
                total += sum(_cell_bytes(cell) for cell in row)
    conn.close()
    return total


def _cell_bytes(cell: object) -> int:
    if cell is None:
        return 0
    if isinstance(cell, bytes):
        return len(cell)
    if isinstance(cell, str):
        return len(cell.encode())
    return 8


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P2; returns the rows."""
    args = parse_args(argv, "P2 checkpoint bytes vs artifact size", repeats=1, quick_repeats=1)
    sizes = QUICK_SIZES if args.quick else SIZES
    rows: list[Row] = []
    table: list[list[str]] = []
    with (
        scratch_dir("p2") as root,
        Workflow(workflow_settings(root)) as workflow,
        open_checkpointer(f"sqlite:///{root / 'naive' / 'naive.db'}") as naive_saver,
    ):
        ours_db = sqlite_path(workflow.settings.resolved_database_url())
        naive_db = root / "naive" / "naive.db"
        base = workflow.context
        for notes_size in sizes:
            task = TaskSpec(task_id=f"p2-{notes_size}", objective=OBJECTIVE)
            research = BigNotesResearch(base.agents["research"], notes_size)

            naive_thread = f"naive-{notes_size}"
            agents = BareAgents(research, base.agents["writer"], base.agents["reviewer"])
            naive = build_bare_graph(agents, MemoryStore(), notes_in_state=True).compile(
                checkpointer=naive_saver
            )
            config = workflow.config(naive_thread)
            naive.invoke({"task": task}, config, durability="sync")
            values = naive.get_state(config).values
            if len(values.get("notes", "")) != notes_size or "article" not in values:
                raise RuntimeError("naive run did not keep the notes and reach finalize")

            ours_thread = f"ours-{notes_size}"
            with Workflow(workflow.settings, context=base.with_agent("research", research)) as ours:
                outcome = ours.run(task, thread_id=ours_thread)
                notes_ref = ours.artifact_ref(ours_thread, "notes")
                final_state = ours.graph.get_state(ours.config(ours_thread)).values
                checkpoints = ours.checkpoint_count(ours_thread)
            if outcome.result_status != "completed" or notes_ref.size_bytes != notes_size:
                raise RuntimeError(f"ours did not complete with the notes stored: {outcome}")

            naive_bytes = thread_bytes(naive_db, CHECKPOINT_TABLES, naive_thread)
            ours_bytes = thread_bytes(ours_db, CHECKPOINT_TABLES, ours_thread)
            ledger_bytes = thread_bytes(ours_db, (LEDGER_TABLE,), ours_thread)
            row = Row(
                bench="P2",
                case=f"notes {size(notes_size)}",
                unit="bytes",
                baseline_name="naive",
                baseline=Measure.exact(naive_bytes),
                candidate_name="ours",
                candidate=Measure.exact(ours_bytes),
                target=f"ours < {size(LIMIT)}",
                passed=ours_bytes < LIMIT,
            )
            rows.append(row)
            table.append(
                [
                    size(notes_size),
                    size(naive_bytes),
                    f"{naive_bytes / notes_size:.1f}",
                    size(ours_bytes),
                    size(ledger_bytes),
                    size(notes_ref.size_bytes),
                    f"{naive_bytes / ours_bytes:.1f}x",
                    row.target_text,
                    row.verdict,
                ]
            )
    print_table(
        "P2 checkpoint bytes per thread (checkpoints + writes tables), one run per size",
        [
            "notes",
            "naive",
            "naive/notes",
            "ours",
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
    print(f"ours, {checkpoints} checkpoints per thread; final state by channel: {channels}")
    flat = rows[-1].candidate.median / rows[0].candidate.median
    growth = rows[-1].baseline.median / rows[0].baseline.median
    print(
        f"from {rows[0].case[6:]} to {rows[-1].case[6:]} of notes: ours x{flat:.2f}, "
        f"naive x{growth:.0f}"
    )
    return rows


if __name__ == "__main__":
    main()
