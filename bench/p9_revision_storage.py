"""P9 revision storage: the bytes each word-limit revision adds to one thread, over 40.

One thread runs the task of P8 (the objective, its two sub-questions, max_words=400) to its
end on the embedded default: one SQLite file and the folder artifact store in a temp data
folder, the offline agents, the bundled corpus. Then ``Workflow.revise`` changes its word
limit 40 times, 150 and 400 in turn, each revision with a reason of its own (as an editor
would write them). After the first run and after every revision the write-ahead log is
checkpointed into the database file (``wal_checkpoint(TRUNCATE)``) and every file under
the data folder is counted: the database (file and log), the artifact folder, and the rest
(SQLite's shared-memory index, research's parsed documents).

Printed: the bytes each revision added (the first and last five, the mean, and whether the
second half adds more than the first); where they went, table by table (SQLite's
``dbstat``: pages and the payload in them, each index counted with its table), the ledger's
records and stored results apart, and the checkpoint values by the channel that refers to
them. The target: a revision adds at most 20 KiB on average, and the second half of the
revisions adds at most 1.1x what the first half did (flat, not rising with the thread's
length). Byte counts are exact: one run (``--repeats`` is accepted and ignored), 4
revisions with ``--quick``.

On PostgreSQL (``HANDOFF_BENCH_POSTGRES_URL``, else ``HANDOFF_TEST_POSTGRES_URL``, else
the local ``test`` database) the same thread runs in a schema of its own, artifacts in the
database, and the schema's tables are counted with ``pg_total_relation_size`` (heap, TOAST
and indexes); informational, no target. When the server is unreachable that row is left
out and the reason printed.
"""

from __future__ import annotations

import sqlite3
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path

import psycopg

from app.storage.backends import sqlite_path
from app.workflow import Workflow
from bench._common import (
    OBJECTIVE,
    QUESTIONS,
    Measure,
    Row,
    parse_args,
    print_table,
    scratch_dir,
    size,
    workflow_settings,
)
from bench._postgres import fresh_schema, postgres_problem, postgres_url, schema_settings
from bench.p2_checkpoint_bytes import KIB, value_bytes
from contracts import Constraints, TaskRevision, TaskSpec

REVISIONS = 40
QUICK_REVISIONS = 4
TARGET = 20 * KIB
"""A word-limit revision adds at most this many bytes on disk, on average."""
RISE = 1.1
"""The second half of the revisions adds at most this times what the first half added."""
WORDS = (150, 400)
THREAD = "p9"
LEDGER_COLUMNS = ("record", "result")

Sizes = dict[str, int]
"""Bytes by part (of the data folder, or tables of a database)."""


def revision(number: int) -> TaskRevision:
    """The ``number``-th revision (from 1): 150 words, then 400, and so on, each explained."""
    words = WORDS[(number - 1) % len(WORDS)]
    return TaskRevision(
        max_words=words,
        reason=f"Revision {number}: the editor wants the piece at {words} words for its slot.",
    )


def revised_thread(workflow: Workflow, revisions: int, measure: Callable[[], Sizes]) -> list[Sizes]:
    """Run the thread, then revise it ``revisions`` times; sizes after each (first run first)."""
    task = TaskSpec(
        task_id=THREAD,
        objective=OBJECTIVE,
        questions=list(QUESTIONS),
        constraints=Constraints(max_words=WORDS[-1]),
    )
    outcomes = [workflow.run(task, thread_id=THREAD)]
    sizes = [measure()]
    for number in range(1, revisions + 1):
        outcomes.append(workflow.revise(THREAD, revision(number)))
        sizes.append(measure())
    failed = [outcome for outcome in outcomes if outcome.result_status != "completed"]
    if failed:
        raise RuntimeError(f"a run of the thread did not complete: {failed[0]}")
    task = workflow.state(THREAD)["task"]
    if task.task_version != revisions + 1:
        raise RuntimeError(f"the thread is on task v{task.task_version}, not v{revisions + 1}")
    return sizes


def folder_sizes(data: Path, database: Path, artifacts: Path) -> Sizes:
    """Every file under ``data``, by part: the database and its log, artifacts, the rest.

    The log is checkpointed into the file first, so what a revision added is counted once.
    """
    with closing(sqlite3.connect(database)) as conn:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise RuntimeError(f"the write-ahead log of {database} could not be checkpointed")
    found = Counter({"database": 0, "artifacts": 0, "other": 0})
    logs = {database, Path(f"{database}-wal")}
    for path in data.rglob("*"):
        if path.is_file():
            part = "database" if path in logs else "other"
            found["artifacts" if artifacts in path.parents else part] += path.stat().st_size
    return dict(found)


def table_sizes(database: Path) -> dict[str, tuple[int, int]]:
    """(bytes of pages, bytes of payload) of each table, its indexes counted with it."""
    with closing(sqlite3.connect(database)) as conn:
        rows = conn.execute(
            "SELECT coalesce(m.tbl_name, s.name), sum(s.pgsize), sum(s.payload) "
            "FROM dbstat AS s LEFT JOIN sqlite_master AS m ON m.name = s.name "
            "GROUP BY 1 ORDER BY 2 DESC"
        ).fetchall()
    return {name: (int(pages), int(payload)) for name, pages, payload in rows}


def ledger_columns(database: Path) -> Sizes:
    """The thread's ledger bytes in each of ``LEDGER_COLUMNS``."""
    sums = ", ".join(f"sum(length(CAST({column} AS BLOB)))" for column in LEDGER_COLUMNS)
    with closing(sqlite3.connect(database)) as conn:
        row = conn.execute(
            f"SELECT {sums} FROM handoff_node_runs WHERE thread_id = ?", (THREAD,)
        ).fetchone()
    return {column: int(total or 0) for column, total in zip(LEDGER_COLUMNS, row, strict=True)}


def schema_sizes(url: str) -> Sizes:
    """``pg_total_relation_size`` (heap, TOAST, indexes) of the schema's tables, by part.

    The parts: the saver's tables (``checkpoint*``), the artifact store's
    (``handoff_artifact*``), and the ledger's (the rest).
    """
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class AS c "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchall()
    found = Counter({"checkpoints": 0, "ledger": 0, "artifacts": 0})
    for name, total in rows:
        part = "artifacts" if name.startswith("handoff_artifact") else "ledger"
        found["checkpoints" if name.startswith("checkpoint") else part] += int(total)
    return dict(found)


def growth(sizes: Sequence[Sizes]) -> list[int]:
    """Bytes each revision added: the total after it less the total before it."""
    totals = [sum(parts.values()) for parts in sizes]
    return [after - before for before, after in zip(totals, totals[1:], strict=False)]


def verdict_row(case: str, sizes: Sequence[Sizes], target: bool) -> Row:
    """The thread's bytes after its first run and after every revision, as one row.

    The target, when held to it: the mean revision adds at most ``TARGET``, and the second
    half of the revisions adds at most ``RISE`` times the first half.
    """
    added = growth(sizes)
    half = len(added) // 2
    first, second = statistics.fmean(added[:half]), statistics.fmean(added[half:])
    return Row(
        bench="P9",
        case=case,
        unit="bytes",
        baseline_name="first run",
        baseline=Measure.exact(sum(sizes[0].values())),
        candidate_name=f"after {len(added)} revisions",
        candidate=Measure.exact(sum(sizes[-1].values())),
        target=f"<= {size(TARGET)} a revision, 2nd half <= {RISE:g}x 1st" if target else "",
        passed=(statistics.fmean(added) <= TARGET and second <= RISE * first) if target else None,
    )


def print_growth(title: str, sizes: Sequence[Sizes]) -> None:
    """Each revision's bytes by part: the first and last five, then the mean and the halves."""
    added = growth(sizes)
    parts = list(sizes[0])
    numbered = list(enumerate(added, start=1))
    shown = numbered if len(numbered) <= 10 else numbered[:5] + numbered[-5:]
    table = [
        [str(number), size(total), *(size(sizes[number][p] - sizes[number - 1][p]) for p in parts)]
        for number, total in shown
    ]
    half = len(added) // 2
    first, second = statistics.fmean(added[:half]), statistics.fmean(added[half:])
    table.append(["mean", size(statistics.fmean(added)), *("" for _ in parts)])
    print_table(title, ["revision", "added", *parts], table)
    print(
        f"first run {size(sum(sizes[0].values()))}, after {len(added)} revisions "
        f"{size(sum(sizes[-1].values()))}; first half {size(first)} a revision, second half "
        f"{size(second)} ({second / first:.2f}x): {'rises' if second > RISE * first else 'flat'}"
    )


def print_breakdown(
    revisions: int,
    tables: tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]],
    ledger: tuple[Sizes, Sizes],
    values: tuple[dict[str, Counter[str]], dict[str, Counter[str]]],
) -> None:
    """Where the revisions' bytes went: by table, the ledger's columns, values by channel."""
    before, after = tables
    rows = []
    for name in after:
        pages = after[name][0] - before.get(name, (0, 0))[0]
        payload = after[name][1] - before.get(name, (0, 0))[1]
        rows.append((pages, [name, size(pages / revisions), size(payload / revisions)]))
    rows.sort(key=lambda row: -row[0])
    print_table(
        f"P9 SQLite file by table (indexes with their table), added per revision (mean of "
        f"{revisions})",
        ["table", "pages", "payload"],
        [cells for _, cells in rows],
    )
    print(
        "ledger (handoff_node_runs) per revision: "
        + ", ".join(
            f"{column} {size((ledger[1][column] - ledger[0][column]) / revisions)}"
            for column in LEDGER_COLUMNS
        )
    )
    for table, totals in values[1].items():
        added = totals - values[0].get(table, Counter())
        print(
            f"values in {table} per revision, by channel: "
            + ", ".join(f"{channel} {size(n / revisions)}" for channel, n in added.most_common())
        )


def sqlite_side(revisions: int) -> Row:
    """The thread on the embedded default; prints its growth and breakdown."""
    with scratch_dir("p9") as root:
        settings = workflow_settings(root)
        database = sqlite_path(settings.resolved_database_url())
        artifacts = settings.resolved_artifact_dir()
        marks: list[tuple[dict[str, tuple[int, int]], Sizes, dict[str, Counter[str]]]] = []

        def measure() -> Sizes:
            found = folder_sizes(settings.data_dir, database, artifacts)
            if not marks:  # after the first run: where the breakdown starts from
                marks.append(snapshot(database))
            return found

        with Workflow(settings) as workflow:
            sizes = revised_thread(workflow, revisions, measure)
        marks.append(snapshot(database))
    print_growth(
        f"P9 bytes on disk each word-limit revision added (SQLite file and log, artifact "
        f"folder, rest of the data folder), {revisions} revisions of one thread",
        sizes,
    )
    (tables_0, ledger_0, values_0), (tables_1, ledger_1, values_1) = marks
    print_breakdown(revisions, (tables_0, tables_1), (ledger_0, ledger_1), (values_0, values_1))
    return verdict_row(f"SQLite and artifact folder, {revisions} word-limit revisions", sizes, True)


def snapshot(database: Path) -> tuple[dict[str, tuple[int, int]], Sizes, dict[str, Counter[str]]]:
    """The file's tables, the thread's ledger columns and its values by channel, now."""
    return table_sizes(database), ledger_columns(database), value_bytes(database, THREAD)


def postgres_side(revisions: int, url: str) -> Row:
    """The same thread in a PostgreSQL schema of its own; prints its growth by table."""
    with scratch_dir("p9-pg") as root, fresh_schema(url, prefix="p9") as schema_url:
        with Workflow(schema_settings(schema_url, root)) as workflow:
            sizes = revised_thread(workflow, revisions, lambda: schema_sizes(schema_url))
    print_growth(
        f"P9 on PostgreSQL: pg_total_relation_size of the schema's tables each revision "
        f"added (the saver's, the ledger's, the artifact store's), {revisions} revisions",
        sizes,
    )
    return verdict_row(f"PostgreSQL, {revisions} word-limit revisions", sizes, False)


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P9; returns the rows (PostgreSQL's only when it is reachable)."""
    args = parse_args(argv, "P9 revision storage", repeats=1, quick_repeats=1)
    revisions = QUICK_REVISIONS if args.quick else REVISIONS
    rows = [sqlite_side(revisions)]
    url = postgres_url()
    problem = postgres_problem(url)
    if problem is None:
        rows.append(postgres_side(revisions, url))
    else:
        print(f"\nP9 on PostgreSQL left out: the server is unreachable ({problem})")
    print_table(
        "P9 bytes of one thread after its first run and after its revisions",
        ["case", "first run", "after", "growth", "target", "verdict"],
        [
            [
                row.case,
                size(row.baseline.median),
                size(row.candidate.median),
                f"{row.ratio:.2f}x",
                row.target_text,
                row.verdict,
            ]
            for row in rows
        ],
    )
    return rows


if __name__ == "__main__":
    main()
