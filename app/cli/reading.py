"""Commands that read threads: status, history, show, sources and threads."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer
from rich.table import Column, Table

from app.cli import base
from app.cli.base import cli, err, out, wide
from app.cli.decision_hints import render_request
from app.cli.invocation import command
from app.cli.options import GraphOpt, ListJsonOpt, ThreadArg
from app.cli.output import job_json, job_line, print_queued, source_lines, state_line
from app.cli.terminal import visible
from app.corpus.citations import SourceEntry
from app.errors import ThreadNotFound, WrongGraph
from app.workflow import ARTIFACT_NAMES, ThreadSummary, Workflow
from contracts import NodeRun
from graphs.errors import UsageError

T = TypeVar("T")


@cli.command()
def status(thread_id: ThreadArg, as_json: ListJsonOpt = False, graph: GraphOpt = None) -> None:
    """Show a thread's current step, what comes next, and its outcome (and its fleet job)."""
    with base.open_workflow(read_only=True, graph=graph, thread=thread_id) as workflow:
        queue = base.open_queue(workflow)
        job = None if queue is None else queue.job(thread_id)
        try:
            info = workflow.status(thread_id)
        except ThreadNotFound:
            if job is None:
                raise
            print_queued(thread_id, job, as_json)
            return
    outcome = info.current
    if as_json:
        payload = {
            "thread_id": info.thread_id,
            "next": list(info.next_nodes),
            "checkpoints": info.checkpoints,
            "step": info.step,
            "draft_revision": info.draft_revision,
            "verdict": info.verdict,
            "fact_count": info.fact_count,
            "task_version": info.task_version,
            "outcome": json.loads(outcome.model_dump_json()),
            "freshness": json.loads(info.freshness.model_dump_json()) if info.freshness else None,
            "job": None if job is None else job_json(job),
        }
        out.print_json(json.dumps(payload))
        return
    out.print(f"thread: {info.thread_id}", markup=False)
    out.print(state_line(outcome), markup=False)
    out.print(f"step: {info.step}  checkpoints: {info.checkpoints}", markup=False)
    if info.task_version is not None:
        out.print(f"task version: {info.task_version}", markup=False)
    if job is not None:
        out.print(f"job: {job_line(job)}", markup=False)
    out.print(f"next: {', '.join(info.next_nodes) or '(nothing: thread has ended)'}", markup=False)
    if info.fact_count is not None:
        out.print(f"facts: {info.fact_count}", markup=False)
    if info.draft_revision is not None:
        out.print(f"draft revision: {info.draft_revision}  verdict: {info.verdict}", markup=False)
    for problem in outcome.errors:
        out.print(f"  {problem.code.value}: {problem.detail}", markup=False)
    if info.freshness is not None:
        out.print(
            f"inputs checked by {info.freshness.node}: {info.freshness.checked}, "
            f"{info.freshness.verdict}",
            markup=False,
        )
        for check in info.freshness.checks:
            out.print(f"  {check.name}: {check.status}", markup=False)
    if outcome.human_request is not None:
        render_request(outcome.human_request, thread_id, out)


@cli.command()
def history(thread_id: ThreadArg, as_json: ListJsonOpt = False) -> None:
    """Print the thread's audit log: one row per node attempt."""
    runs = _listing(
        as_json, thread_id, lambda workflow: workflow.history(thread_id), _as_json_value
    )
    if runs is None:
        return
    table = Table(
        "node",
        "attempt",
        "status",
        "agent",
        "input",
        "ms",
        "tools",
        "tokens",
        Column("artifacts", overflow="fold"),
        Column("note", overflow="fold"),
        caption=f"artifact ids are shown without the thread's prefix {thread_id}-",
    )
    for item in runs:
        table.add_row(
            item.node_id,
            str(item.attempt),
            item.status,
            item.agent or "",
            item.input_hash[:10],
            f"{item.duration_ms:.1f}" if item.duration_ms is not None else "",
            str(item.usage.tool_calls),
            str(item.usage.tokens)
            + (f" (over by {item.overrun.tokens})" if item.overrun and item.overrun.tokens else ""),
            " ".join(name.removeprefix(f"{thread_id}-") for name in item.artifact_ids),
            item.note or "",
        )
    wide.print(table)


def _listing(
    as_json: bool,
    thread_id: str,
    read: Callable[[Workflow], list[T]],
    as_dict: Callable[[T], object],
) -> list[T] | None:
    """What ``read`` lists in a read-only Workflow of the thread's graph.

    None once printed, as JSON, for ``--json``.
    """
    with base.open_workflow(read_only=True, thread=thread_id) as workflow:
        items = read(workflow)
    if as_json:
        out.print_json(json.dumps([as_dict(item) for item in items]))
        return None
    return items


def _summary(workflow: Workflow, thread_id: str) -> ThreadSummary:
    """The thread's row, read with the graph that made it (opened for it, when another)."""
    try:
        return workflow.summary(thread_id)
    except WrongGraph:
        with base.open_workflow(read_only=True, thread=thread_id) as own:
            return own.summary(thread_id)


def _as_json_value(run: NodeRun) -> object:
    return json.loads(run.model_dump_json())


def _as_dict(entry: SourceEntry) -> object:
    return entry.as_dict()


class ShowUsage(UsageError):
    """``handoff show`` given both an artifact name and a source id."""


@cli.command()
def show(
    thread_id: ThreadArg,
    artifact: Annotated[
        str | None,
        typer.Option(
            "--artifact",
            help=f"One of: {', '.join(ARTIFACT_NAMES)} (default: article); the kind of an "
            "artifact a project's node stores (e.g. outline); or a source id (src-N) for its "
            "snapshot as stored.",
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--source",
            help="A source id (src-N, see `handoff sources`): its snapshot with each span "
            "the draft cites marked as ⟦claim-N …⟧.",
        ),
    ] = None,
    graph: GraphOpt = None,
) -> None:
    """Print an artifact of a thread, or a source it read (verified against its sha256)."""
    if artifact is not None and source is not None:
        raise ShowUsage("give --artifact NAME or --source ID, not both")
    with base.open_workflow(read_only=True, graph=graph, thread=thread_id) as workflow:
        if source is not None:
            text = workflow.source_text(thread_id, source)
        else:
            text = workflow.artifact(thread_id, artifact or "article").decode(
                "utf-8", errors="replace"
            )
    sys.stdout.write(visible(text))
    sys.stdout.flush()


@cli.command()
def sources(thread_id: ThreadArg, as_json: ListJsonOpt = False) -> None:
    """List the sources research read for a thread and the draft's claims citing each."""
    entries = _listing(as_json, thread_id, lambda workflow: workflow.sources(thread_id), _as_dict)
    if entries is None:
        return
    if not entries:
        err.print(f"thread {thread_id} has no sources yet: research has read none", markup=False)
        return
    for line in source_lines(entries):
        out.print(line, markup=False)


@cli.command()
def threads(
    as_json: ListJsonOpt = False,
) -> None:
    """List every thread: its state, result, step, what runs next and when it last changed."""
    with base.open_workflow(read_only=True) as workflow:  # one read of small channels per thread
        rows = [_summary(workflow, thread_id) for thread_id in workflow.threads()]
        started = {row.thread_id for row in rows}
        queue = base.open_queue(workflow)
        queued = {} if queue is None else queue.queued()
        waiting = [job for key, job in sorted(queued.items()) if key not in started]
    if as_json:
        out.print_json(
            json.dumps(
                [
                    {
                        "thread_id": row.thread_id,
                        "state": row.outcome.state.value,
                        "result": row.outcome.result_status,
                        "step": row.step,
                        "next": list(row.next_nodes),
                        "updated_at": row.updated_at,
                    }
                    for row in rows
                ]
                + [
                    {"thread_id": job.thread_id, "state": job.label.upper(), "job": job_json(job)}
                    for job in waiting
                ]
            )
        )
        return
    if not rows and not waiting:
        err.print(f"no threads yet; start one: {command()} run OBJECTIVE", markup=False)
        return
    table = Table("thread", "state", "result", "step", "next", "updated")
    for row in rows:
        table.add_row(
            row.thread_id,
            row.outcome.state.value.removeprefix("TASK_STATE_"),
            row.outcome.result_status or "",
            "" if row.step is None else str(row.step),
            ", ".join(row.next_nodes),
            (row.updated_at or "")[:19].replace("T", " "),
        )
    for job in waiting:  # submitted to the fleet, no step saved yet
        table.add_row(job.thread_id, job.label.upper(), "", "", "", "")
    wide.print(table)
