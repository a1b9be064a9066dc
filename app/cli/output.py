"""What the commands print: outcomes, progress lines, fleet jobs and source lists."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.markup import escape

from app.cli.base import err, out
from app.cli.decision_hints import render_request
from app.cli.invocation import command
from app.cli.terminal import visible
from app.corpus.citations import SourceEntry
from app.settings import Settings
from app.storage.postgres import describe_url
from app.workflow.progress import step_summary
from contracts import RunOutcome

if TYPE_CHECKING:
    from app.fleet.jobs import JobState


def print_outcome(outcome: RunOutcome, settings: Settings, as_json: bool) -> None:
    """The outcome: as JSON, or its state, article, errors and any waiting request."""
    if as_json:
        out.print_json(outcome.model_dump_json())
        return
    out.print(f"thread: {outcome.thread_id}", markup=False)
    out.print(state_line(outcome), markup=False)
    if outcome.article is not None:
        out.print(
            f"article: {outcome.article.uri} (revision {outcome.article.revision}, "
            f"sha256 {outcome.article.sha256[:12]}…) in {artifacts_where(settings)}",
            markup=False,
        )
        out.print(f"read it: {command()} show {outcome.thread_id}", markup=False)
    for error in outcome.errors:
        out.print(f"  {error.code.value}: {error.detail}", markup=False)
    if outcome.human_request is not None:
        render_request(outcome.human_request, outcome.thread_id, out)
    elif outcome.reason:
        out.print(f"reason: {outcome.reason}", markup=False)


def state_line(outcome: RunOutcome) -> str:
    """The A2A state, and the business result once there is one."""
    result = f"  result: {outcome.result_status}" if outcome.result_status else ""
    return f"state: {outcome.state.value}{result}"


def artifacts_where(settings: Settings) -> str:
    """Where the artifact store keeps its bytes: a folder, the database, or this process."""
    store = settings.resolved_artifact_store()
    if store == "database":
        return f"the database {describe_url(settings.resolved_database_url())}"
    if store == "memory":
        return "this process's memory (gone when it exits)"
    return str(settings.resolved_artifact_dir())


def progress(node: str, values: dict[str, Any]) -> None:
    """One line per finished node: the summaries of the contracts it wrote."""
    name, summary = step_summary(node, values)
    mark = "[green]✓[/green] " if err.is_terminal else ""
    line = visible(f"{name}: {summary}".rstrip(": "), lines=False)
    err.print(f"{mark}{escape(line) if err.is_terminal else line}", markup=err.is_terminal)


def job_json(job: JobState) -> dict[str, Any]:
    """A fleet job as ``--json`` prints it."""
    return {"id": job.job_id, "task": job.task, "state": job.label, "attempts": job.attempts}


def job_line(job: JobState) -> str:
    """A fleet job in one line: state, kind, id and attempts."""
    kind = job.task.removeprefix("handoff.")
    return f"{job.label} ({kind} job {job.job_id}, attempts {job.attempts})"


def print_queued(thread_id: str, job: JobState, as_json: bool) -> None:
    """A submitted thread no worker has started yet: it has a job, not a checkpoint."""
    if as_json:
        out.print_json(json.dumps({"thread_id": thread_id, "job": job_json(job)}))
        return
    out.print(f"thread: {thread_id}", markup=False)
    out.print(f"job: {job_line(job)}; no step saved yet", markup=False)


def source_lines(entries: list[SourceEntry]) -> list[str]:
    """One line per source: id, title, file, short sha256 and its citing claims, aligned."""
    rows = [
        [visible(text, lines=False) for text in (entry.id, entry.title, entry.file_name)]
        for entry in entries
    ]
    widths = [max(cell_len(row[column]) for row in rows) for column in range(3)]
    lines = []
    for entry, row in zip(entries, rows, strict=True):
        cells = [
            text + " " * (width - cell_len(text)) for text, width in zip(row, widths, strict=True)
        ]
        cited = ", ".join(
            f"{claim.claim_id} ({claim.line_range}{'' if claim.verbatim else ', quote not there'})"
            for claim in entry.cited_by
        )
        cells.append(f"sha256 {entry.sha256[:8]}…")
        cells.append(f"cited by {cited}" if cited else "not cited")
        lines.append("  ".join(cells))
    return lines
