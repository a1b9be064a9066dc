"""``handoff prune``: remove ended threads past an age, with what they stored."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from app.cli.base import cli, out
from app.cli.options import ListJsonOpt
from app.cli.terminal import visible
from app.durations import describe_duration, parse_duration
from app.opening import each_graph
from app.workflow import PruneReport


@cli.command()
def prune(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Prune the threads that ended longer ago than this: 30d, 12h, 90m or 45s.",
        ),
    ],
    keep_last: Annotated[
        int,
        typer.Option("--keep-last", min=0, help="Keep the N most recently ended, however old."),
    ] = 0,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="List what would go, with its bytes; change nothing."),
    ] = False,
    as_json: ListJsonOpt = False,
) -> None:
    """Remove ended threads: their checkpoints, audit rows and artifacts (docs/operations.md).

    A thread waiting for a person, queued for the worker fleet or running stays, and so
    does an artifact's blob that another thread's artifact names too.
    """
    age = parse_duration(older_than, "--older-than")
    report = PruneReport.added(
        workflow.prune(age, keep_last=keep_last, dry_run=dry_run)
        for workflow in each_graph(read_only=dry_run)
    )
    if as_json:
        out.print_json(json.dumps(as_dict(report)))
        return
    verb = "would prune" if dry_run else "pruned"
    for thread in report.pruned:
        line = (
            f"{verb} {thread.thread_id}  age {describe_duration(thread.age)}  {thread.bytes} bytes"
        )
        out.print(line, markup=False)
    for thread_id, reason in report.kept:
        out.print(visible(f"kept {thread_id}: {reason}"), markup=False)
    if report.unused_files:
        out.print(
            f"{verb} {report.unused_files} parsed documents and indexes research has not read "
            f"for {describe_duration(age)}, {report.unused_bytes} bytes",
            markup=False,
        )
    note = " (dry run: nothing was changed)" if dry_run else ""
    out.print(
        f"total: {len(report.pruned)} threads, {report.total_bytes} bytes{note}", markup=False
    )


def as_dict(report: PruneReport) -> dict[str, object]:
    """The report as ``--json`` prints it: ages in seconds."""
    return {
        "dry_run": report.dry_run,
        "pruned": [
            {"thread_id": t.thread_id, "age_seconds": t.age.total_seconds(), "bytes": t.bytes}
            for t in report.pruned
        ],
        "kept": [{"thread_id": thread_id, "reason": why} for thread_id, why in report.kept],
        "total_bytes": report.total_bytes,
        "unused_cache": {"files": report.unused_files, "bytes": report.unused_bytes},
    }
