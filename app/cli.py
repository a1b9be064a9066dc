"""The ``handoff`` command: thin commands over the Python API."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.cells import cell_len
from rich.markup import escape
from rich.table import Column, Table
from typer.core import TyperGroup

from app.cli_decisions import (
    DecisionFlags,
    decision_for,
    prompt_decision,
    render_request,
    request_hints,
)
from app.errors import (
    QueueUnavailable,
    SubmitUsage,
    ThreadFinished,
    ThreadNotFound,
    UnknownContract,
)
from app.exit_codes import EXPECTED_ERRORS, for_error, for_outcome
from app.fleet import DECIDE, JobState, queued_refusal
from app.invocation import command
from app.postgres import describe_url, is_postgres_url, redact
from app.settings import Settings
from app.sources import SourceEntry
from app.terminal import TerminalConsole, visible
from app.workflow import ARTIFACT_NAMES, Workflow
from contracts import Constraints, ErrorCode, RunOutcome, TaskSpec, VersionedContract
from graphs.boundary import describe_validation_error
from graphs.errors import ExitCode, HandoffError

out = TerminalConsole(highlight=False, soft_wrap=True)
wide = TerminalConsole(highlight=False, width=None if out.is_terminal else 200)
err = TerminalConsole(stderr=True, highlight=False, soft_wrap=True)


def _message(error: BaseException) -> str:
    if isinstance(error, ValidationError):
        return f"invalid {error.title}: {describe_validation_error(error)}"
    if isinstance(error, HandoffError):
        return error.message
    return str(error)


class _MappedErrors(TyperGroup):
    """Every command's errors end here: one line on stderr and the error's exit code.

    The line (and the ``--debug`` traceback) has the database passwords masked, since a
    driver's error may quote the URL, and its control characters made visible.

    ``--debug`` adds the traceback but keeps the exit code, so a script that retries on a
    code behaves the same while someone investigates. Errors that are not expected (see
    ``EXPECTED_ERRORS``) are bugs and propagate with their traceback.
    """

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]  # typer passes its own
        """Run the command, turning an expected error into its exit code."""
        try:
            return super().invoke(ctx)
        except EXPECTED_ERRORS as error:
            if ctx.params.get("debug"):
                _write_traceback(error)
            line = visible(_redacted(_message(error)), lines=False)
            err.print(f"error: {line}", markup=False)
            raise typer.Exit(int(for_error(error))) from None


def _redacted(text: str) -> str:
    """``text`` with the database passwords masked (a driver's error may quote its URL)."""
    try:
        url: str | None = Settings().resolved_database_url()
    except Exception:  # settings that do not load: mask what the patterns find
        url = None
    return redact(text, url)


def _write_traceback(error: BaseException) -> None:
    sys.stderr.write(visible(_redacted("".join(traceback.format_exception(error)))))


cli = typer.Typer(
    cls=_MappedErrors,
    help="Run and inspect handoff workflows (Research → Writer → Reviewer).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@cli.callback()
def _options(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks on errors (the exit code stays).")
    ] = False,
) -> None:
    """Read by the error handler of ``_MappedErrors`` from the context's params."""


def _workflow(*, read_only: bool = False) -> Workflow:
    """The Workflow of the settings; inspecting commands open it read-only (no writes)."""
    return Workflow(Settings(), read_only=read_only)


def _print_outcome(outcome: RunOutcome, settings: Settings, as_json: bool) -> None:
    if as_json:
        out.print_json(outcome.model_dump_json())
        return
    out.print(f"thread: {outcome.thread_id}", markup=False)
    out.print(_state_line(outcome), markup=False)
    if outcome.article is not None:
        out.print(
            f"article: {outcome.article.uri} (revision {outcome.article.revision}, "
            f"sha256 {outcome.article.sha256[:12]}…) in {_artifacts_where(settings)}",
            markup=False,
        )
        out.print(f"read it: {command()} show {outcome.thread_id}", markup=False)
    for error in outcome.errors:
        out.print(f"  {error.code.value}: {error.detail}", markup=False)
    if outcome.human_request is not None:
        render_request(outcome.human_request, outcome.thread_id, out)
    elif outcome.reason:
        out.print(f"reason: {outcome.reason}", markup=False)


def _state_line(outcome: RunOutcome) -> str:
    """The A2A state, and the business result once there is one."""
    result = f"  result: {outcome.result_status}" if outcome.result_status else ""
    return f"state: {outcome.state.value}{result}"


def _artifacts_where(settings: Settings) -> str:
    """Where the artifact store keeps its bytes: a folder, or the database."""
    if settings.resolved_artifact_store() == "database":
        return f"the database {describe_url(settings.resolved_database_url())}"
    return str(settings.resolved_artifact_dir())


def _progress(node: str, values: dict[str, Any]) -> None:
    """One line per finished node: the summaries of the contracts it wrote."""
    if node == "__interrupt__":
        node, summary = "paused", "waiting for a human decision"
    else:
        summary = " · ".join(
            text
            for channel, value in values.items()
            if channel != "handoff" and isinstance(value, VersionedContract)
            for text in [value.summary()]
            if text
        )
    mark = "[green]✓[/green] " if err.is_terminal else ""
    line = visible(f"{node}: {summary}".rstrip(": "), lines=False)
    err.print(f"{mark}{escape(line) if err.is_terminal else line}", markup=err.is_terminal)


# Options `run` and `submit` share (a task), and `resume` and `submit --resume` (a decision).
Objective = Annotated[str, typer.Argument(help="What the article must explain.")]
CorpusOpt = Annotated[
    list[Path] | None, typer.Option("--corpus", help="Folder or file to research.")
]
ThreadOpt = Annotated[str | None, typer.Option("--thread", help="Thread id to use.")]
MaxWordsOpt = Annotated[int | None, typer.Option("--max-words", help="Word limit.")]
SectionOpt = Annotated[
    list[str] | None, typer.Option("--section", help="Required section (repeatable).")
]
MaxRoundsOpt = Annotated[int | None, typer.Option("--max-rounds", help="Review rounds.")]
QuestionOpt = Annotated[
    list[str] | None,
    typer.Option("--question", help="Sub-question to research besides the objective (repeatable)."),
]
ApprovalOpt = Annotated[
    bool, typer.Option("--require-approval", help="Pause for approval after research.")
]
AskOnReviewOpt = Annotated[
    bool, typer.Option("--ask-on-review", help="Ask a human when review cannot approve in budget.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")]
ApproveOpt = Annotated[bool, typer.Option("--approve", help="Approve the request.")]
RejectOpt = Annotated[bool, typer.Option("--reject", help="Reject (needs --reason).")]
AcceptPartialOpt = Annotated[
    bool, typer.Option("--accept-partial", help="Accept the draft as partial.")
]
GrantRoundOpt = Annotated[bool, typer.Option("--grant-round", help="Grant another review round.")]
AbortOpt = Annotated[bool, typer.Option("--abort", help="Abort (needs --reason).")]
ActionOpt = Annotated[
    str | None,
    typer.Option(
        "--action", help="Any action the request allows, by name (e.g. accept_new_revision)."
    ),
]
ReasonOpt = Annotated[str | None, typer.Option("--reason", help="Why.")]
AnswerOpt = Annotated[
    list[str] | None, typer.Option("--answer", help="QID=TEXT answer (repeatable).")
]
ConstraintOpt = Annotated[
    list[str] | None, typer.Option("--constraint", help="Constraint to add (repeatable).")
]
DetailOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--detail",
        help="NAME=VALUE: a field of the pause's own decision (VALUE as JSON, or text; "
        "repeatable).",
    ),
]
DecisionFileOpt = Annotated[
    Path | None, typer.Option("--decision-file", help="HumanDecision as JSON.")
]


def _decision_options(params: dict[str, Any]) -> DecisionFlags:
    """The decision options of a command (``resume``, ``submit``), from its parameters."""
    return DecisionFlags(
        approve=params["approve"],
        reject=params["reject"],
        accept_partial=params["accept_partial"],
        grant_round=params["grant_round"],
        abort=params["abort"],
        action=params["action"],
        reason=params["reason"],
        answers=tuple(params["answer"] or ()),
        constraints=tuple(params["constraint"] or ()),
        details=tuple(params["detail"] or ()),
        decision_file=params["decision_file"],
    )


def _task(workflow: Workflow, objective: str, params: dict[str, Any]) -> TaskSpec:
    """The TaskSpec a command's task options (``run``, ``submit``) describe."""
    budget: dict[str, Any] = {}
    if params["max_rounds"] is not None:
        budget["max_review_rounds"] = params["max_rounds"]
    return workflow.task(
        objective,
        corpus=[str(path) for path in params["corpus"] or []],
        constraints=Constraints(
            max_words=params["max_words"], required_sections=params["section"] or []
        ),
        budget=budget,
        questions=params["question"] or [],
        policies={
            "require_approval": params["require_approval"],
            "on_review_exhausted": "ask" if params["ask_on_review"] else "end",
        },
    )


@cli.command()
def run(
    objective: Objective,
    corpus: CorpusOpt = None,
    thread: ThreadOpt = None,
    max_words: MaxWordsOpt = None,
    section: SectionOpt = None,
    max_rounds: MaxRoundsOpt = None,
    question: QuestionOpt = None,
    require_approval: ApprovalOpt = False,
    ask_on_review: AskOnReviewOpt = False,
    as_json: JsonOpt = False,
    show_article: Annotated[
        bool, typer.Option("--show", help="Print the article first (when one was written).")
    ] = False,
) -> None:
    """Run a new task on a new thread and print where the article is."""
    params = locals()  # the task options, by name
    with _workflow() as workflow:
        task = _task(workflow, objective, params)
        outcome = workflow.run(task, thread, on_progress=None if as_json else _progress)
        if show_article and not as_json and outcome.article is not None:
            article = workflow.context.store.get(outcome.article)
            sys.stdout.write(visible(article.decode("utf-8", errors="replace")) + "\n")
        _print_outcome(outcome, workflow.settings, as_json)
    raise typer.Exit(int(for_outcome(outcome)))


@cli.command()
def resume(
    thread_id: Annotated[str, typer.Argument(help="Thread id.")],
    approve: ApproveOpt = False,
    reject: RejectOpt = False,
    accept_partial: AcceptPartialOpt = False,
    grant_round: GrantRoundOpt = False,
    abort: AbortOpt = False,
    action: ActionOpt = None,
    reason: ReasonOpt = None,
    answer: AnswerOpt = None,
    constraint: ConstraintOpt = None,
    detail: DetailOpt = None,
    decision_file: DecisionFileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Continue a thread: after a crash, or with a decision when it waits for a human.

    The decision options are checked before the thread is opened, then against the
    request the thread waits on; a refused decision changes nothing and exits 2.
    """
    raw = _decision_options(locals()).raw()
    try:
        with _workflow() as workflow:
            workflow.refuse_if_queued(thread_id, "nothing was resumed")  # before any prompt
            request = workflow.pending(thread_id) if workflow.threads_has(thread_id) else None
            decision: Any = raw  # not waiting: resume refuses it (finished, unknown, not waiting)
            if request is not None:
                decision = decision_for(request, raw, from_file=decision_file is not None)
                asks = decision is None and sys.stdin.isatty() and err.is_terminal and not as_json
                if asks:  # a person at a terminal: ask (docs/human-decisions.md)
                    decision = prompt_decision(request, thread_id, err, workflow.pauses)
                elif decision is None:
                    render_request(request, thread_id, err, workflow.pauses)
            outcome = workflow.resume(
                thread_id, decision, on_progress=None if as_json else _progress
            )
            _print_outcome(outcome, workflow.settings, as_json)
    except ThreadFinished as finished:  # show how it ended, then exit with its code
        _print_outcome(finished.outcome, Settings(), as_json)
        raise
    raise typer.Exit(int(for_outcome(outcome)))


@cli.command()
def submit(
    objective: Annotated[
        str | None, typer.Argument(help="What the article must explain (not with --resume).")
    ] = None,
    resume_id: Annotated[
        str | None, typer.Option("--resume", help="Queue a decision for this waiting thread.")
    ] = None,
    corpus: CorpusOpt = None,
    thread: ThreadOpt = None,
    max_words: MaxWordsOpt = None,
    section: SectionOpt = None,
    max_rounds: MaxRoundsOpt = None,
    question: QuestionOpt = None,
    require_approval: ApprovalOpt = False,
    ask_on_review: AskOnReviewOpt = False,
    approve: ApproveOpt = False,
    reject: RejectOpt = False,
    accept_partial: AcceptPartialOpt = False,
    grant_round: GrantRoundOpt = False,
    abort: AbortOpt = False,
    action: ActionOpt = None,
    reason: ReasonOpt = None,
    answer: AnswerOpt = None,
    constraint: ConstraintOpt = None,
    detail: DetailOpt = None,
    decision_file: DecisionFileOpt = None,
) -> None:
    """Queue a task (or, with --resume, a decision) for the worker fleet; prints the thread id.

    Needs PostgreSQL and the queue extra; `handoff worker` processes run the jobs. The task
    or decision is checked now, as `run` and `resume` check it, and nothing is queued when
    it is refused: a thread with an unfinished job (exit 7), or a decision other than the
    one already queued or applied for the request (exit 2); the same decision again is not
    queued twice.
    """
    params = locals()  # the task and decision options, by name
    raw = _decision_options(params).raw()
    if (objective is None) == (resume_id is None):
        raise SubmitUsage("give an OBJECTIVE to queue a new thread, or --resume ID, not both")
    with _workflow() as workflow:
        if resume_id is not None:
            job = workflow.job(resume_id)
            if job is not None and job.unfinished and job.task != DECIDE:
                raise queued_refusal(resume_id, job, "no decision was queued")
            request = workflow.pending(resume_id)
            decision = (  # not waiting: the flags as given, compared with queued decisions
                raw
                if request is None
                else decision_for(request, raw, from_file=decision_file is not None)
            )
            if request is not None and decision is None:
                hints = request_hints(request, workflow.pauses)
                raise SubmitUsage(
                    f"--resume needs a decision for {request.interrupt_id!r}: "
                    f"{', '.join(hints)} or --decision-file"
                )
            queued = workflow.submit_decision(resume_id, decision)
            action = queued.decision.action
            if queued.duplicate:
                out.print(
                    f"already queued: {action} for thread {resume_id} (job {queued.job_id}); "
                    "not queued again",
                    markup=False,
                )
            else:
                out.print(
                    f"queued: {action} for thread {resume_id} (job {queued.job_id})", markup=False
                )
            out.print(resume_id, markup=False)
            return
        if raw is not None:
            raise SubmitUsage("decision options go with --resume ID")
        assert objective is not None
        task = _task(workflow, objective, params)
        thread_id = workflow.submit(task, thread)
    out.print(thread_id, markup=False)


@cli.command()
def worker(
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=64, help="Jobs this worker runs at once.")
    ] = 1,
    burst: Annotated[
        bool, typer.Option("--burst", help="Stop once the queue is empty instead of waiting.")
    ] = False,
) -> None:
    """Run queued jobs until stopped (Ctrl-C or SIGTERM finish the jobs in hand first).

    A lost database is one line on stderr; the worker waits for it with backoff and carries
    on, exiting 9 only if told to stop meanwhile or after HANDOFF_WORKER_OUTAGE_SECONDS.
    """
    from app.fleet import Fleet, configure_worker_logging

    settings = Settings()
    fleet = Fleet(settings)
    configure_worker_logging()
    err.print(
        f"worker: {concurrency} at once on {describe_url(settings.resolved_database_url())}",
        markup=False,
    )
    fleet.work(concurrency, burst=burst)


@cli.command()
def cancel(
    thread_id: Annotated[str, typer.Argument(help="Thread id.")],
    reason: Annotated[str, typer.Option("--reason", help="Why the thread ends (required).")],
    by: Annotated[str, typer.Option("--by", help="Who cancels it.")] = "human",
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """End a waiting, stuck or refused thread deliberately; what it stored is kept."""
    with _workflow() as workflow:
        outcome = workflow.cancel(thread_id, reason, decided_by=by)
        _print_outcome(outcome, workflow.settings, as_json)


@cli.command()
def status(
    thread_id: Annotated[str, typer.Argument(help="Thread id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Show a thread's current step, what comes next, and its outcome (and its fleet job)."""
    with _workflow(read_only=True) as workflow:
        job = workflow.job(thread_id)
        try:
            info = workflow.status(thread_id)
        except ThreadNotFound:
            if job is None:
                raise
            _print_queued(thread_id, job, as_json)
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
            "outcome": json.loads(outcome.model_dump_json()),
            "freshness": json.loads(info.freshness.model_dump_json()) if info.freshness else None,
            "job": None if job is None else _job_json(job),
        }
        out.print_json(json.dumps(payload))
        return
    out.print(f"thread: {info.thread_id}", markup=False)
    out.print(_state_line(outcome), markup=False)
    out.print(f"step: {info.step}  checkpoints: {info.checkpoints}", markup=False)
    if job is not None:
        out.print(f"job: {_job_line(job)}", markup=False)
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


def _job_json(job: JobState) -> dict[str, Any]:
    return {"id": job.job_id, "task": job.task, "state": job.label, "attempts": job.attempts}


def _job_line(job: JobState) -> str:
    kind = job.task.removeprefix("handoff.")
    return f"{job.label} ({kind} job {job.job_id}, attempts {job.attempts})"


def _print_queued(thread_id: str, job: JobState, as_json: bool) -> None:
    """A submitted thread no worker has started yet: it has a job, not a checkpoint."""
    if as_json:
        out.print_json(json.dumps({"thread_id": thread_id, "job": _job_json(job)}))
        return
    out.print(f"thread: {thread_id}", markup=False)
    out.print(f"job: {_job_line(job)}; no step saved yet", markup=False)


@cli.command()
def history(
    thread_id: Annotated[str, typer.Argument(help="Thread id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Print the thread's audit log: one row per node attempt."""
    with _workflow(read_only=True) as workflow:
        runs = workflow.history(thread_id)
    if as_json:
        out.print_json(json.dumps([json.loads(item.model_dump_json()) for item in runs]))
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
            str(item.usage.tokens),
            " ".join(name.removeprefix(f"{thread_id}-") for name in item.artifact_ids),
        )
    wide.print(table)


class ShowUsage(HandoffError, ValueError):
    """``handoff show`` given both an artifact name and a source id."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


@cli.command()
def show(
    thread_id: Annotated[str, typer.Argument(help="Thread id.")],
    artifact: Annotated[
        str | None,
        typer.Option(
            "--artifact",
            help=f"One of: {', '.join(ARTIFACT_NAMES)} (default: article); "
            "or a source id (src-N) for its snapshot as stored.",
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
) -> None:
    """Print an artifact of a thread, or a source it read (verified against its sha256)."""
    if artifact is not None and source is not None:
        raise ShowUsage("give --artifact NAME or --source ID, not both")
    with _workflow(read_only=True) as workflow:
        if source is not None:
            text = workflow.source_text(thread_id, source)
        else:
            text = workflow.artifact(thread_id, artifact or "article").decode(
                "utf-8", errors="replace"
            )
    sys.stdout.write(visible(text))
    sys.stdout.flush()


@cli.command()
def sources(
    thread_id: Annotated[str, typer.Argument(help="Thread id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the sources research read for a thread and the draft's claims citing each."""
    with _workflow(read_only=True) as workflow:
        entries = workflow.sources(thread_id)
    if as_json:
        out.print_json(json.dumps([entry.as_dict() for entry in entries]))
        return
    if not entries:
        err.print(f"thread {thread_id} has no sources yet: research has read none", markup=False)
        return
    for line in _source_lines(entries):
        out.print(line, markup=False)


def _source_lines(entries: list[SourceEntry]) -> list[str]:
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


@cli.command()
def edit(
    thread_id: Annotated[str, typer.Argument(help="Thread id.")],
    name: Annotated[str, typer.Argument(help="Artifact to revise: draft.")],
    file: Annotated[Path, typer.Option("--file", help="The new content.")],
) -> None:
    """Store a new revision of a thread's artifact; the thread notices it on resume."""
    content = file.read_bytes()
    with _workflow() as workflow:
        ref = workflow.put_artifact(thread_id, name, content)
    out.print(f"{ref.uri} revision {ref.revision} (sha256 {ref.sha256[:12]}…)", markup=False)


@cli.command()
def threads(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List every thread: its state, result, step, what runs next and when it last changed."""
    with _workflow(read_only=True) as workflow:  # one read of small channels per thread
        rows = [workflow.summary(thread_id) for thread_id in workflow.threads()]
        started = {row.thread_id for row in rows}
        waiting = [job for key, job in sorted(workflow.queued().items()) if key not in started]
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
                    {"thread_id": job.thread_id, "state": job.label.upper(), "job": _job_json(job)}
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


@cli.command()
def serve(
    port: Annotated[
        int | None, typer.Option("--port", help="Port (default 2024, or a free one if taken).")
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    config: Annotated[
        Path | None,
        typer.Option("--config", help="langgraph.json (default: ./langgraph.json, else ours)."),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", help="Runs the server executes at once.")] = 4,
    reload: Annotated[bool, typer.Option("--reload", help="Restart when code changes.")] = False,
) -> None:
    """Start the LangGraph dev server (for Studio and langgraph-sdk), offline."""
    from app import server

    plan = server.plan_dev_server(config=config, host=host, port=port, jobs=jobs, reload=reload)
    os.chdir(plan.cwd)  # where the server reads .env and resolves relative data paths
    settings = Settings()
    for line in server.banner(plan, settings):
        out.print(line, markup=False)
    for name in server.dotenv_overrides(plan):
        err.print(f"warning: {name} differs in .env and the environment; the server uses .env")
    sys.stdout.flush()
    sys.stderr.flush()
    server.exec_dev_server(plan)


@cli.command()
def schema(
    name: Annotated[str, typer.Argument(help="Contract name, e.g. TaskSpec.")],
) -> None:
    """Print a contract's JSON Schema."""
    from contracts.registry import by_name, render_schema

    models = by_name()
    if name not in models:
        raise UnknownContract(f"unknown contract {name!r}; expected one of {', '.join(models)}")
    sys.stdout.write(render_schema(models[name]))


@cli.command("eval")
def evaluate(
    cases: Annotated[
        Path | None,
        typer.Option("--cases", help="Cases file (default: the project's evals/cases.json)."),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option("--case", help="Run only this case (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Run the evaluation set on the agents in force; exit 1 on any defect."""
    from app import evaluation

    chosen = evaluation.load_cases(cases or evaluation.DEFAULT_CASES)
    if only:
        unknown = sorted(set(only) - {case.id for case, _ in chosen})
        if unknown:
            raise evaluation.UnknownCase(
                f"unknown case(s) {', '.join(unknown)}; expected one of "
                + ", ".join(case.id for case, _ in chosen)
            )
        chosen = [(case, corpus) for case, corpus in chosen if case.id in only]
    settings = Settings()

    def progress(result: evaluation.CaseResult) -> None:
        if not as_json:
            err.print(
                f"{result.case.id}: {result.final or result.status}, "
                f"{len(result.defects)} defect(s)",
                markup=False,
            )

    results = evaluation.evaluate(chosen, settings, progress=progress)
    if as_json:
        out.print_json(json.dumps([evaluation.as_json(result) for result in results]))
    else:
        sys.stdout.write(evaluation.table(results) + "\n")
    if any(result.defects for result in results):
        raise typer.Exit(ExitCode.FAILED)


db = typer.Typer(help="Set up the database.", no_args_is_help=True)
cli.add_typer(db, name="db")


@db.command("init")
def db_init() -> None:
    """Create every table the configured database needs; safe to run again."""
    from app.backends import init_database
    from app.postgres import describe_url

    settings = Settings()
    found = init_database(settings)
    if is_postgres_url(settings.resolved_database_url()):
        from app.fleet import Fleet

        try:
            created = Fleet(settings).ensure_schema()
            found.append(f"worker queue: {'created' if created else 'present'} (Procrastinate)")
        except QueueUnavailable:
            found.append("worker queue: not set up (install the queue extra to use workers)")
    out.print(f"database ready: {describe_url(settings.resolved_database_url())}", markup=False)
    for line in found:
        out.print(f"  {line}", markup=False)


def main() -> None:
    """Console-script entry point."""
    cli()


if __name__ == "__main__":
    main()
