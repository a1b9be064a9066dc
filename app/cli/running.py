"""Commands that move threads: run, resume, submit, worker, cancel and edit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from app.cli import base
from app.cli.base import cli, err, out
from app.cli.decision_file import short
from app.cli.decision_hints import render_request, request_hints
from app.cli.decision_prompt import prompt_decision
from app.cli.decisions import decision_for
from app.cli.input_files import read_input_file
from app.cli.invocation import command
from app.cli.options import (
    DECISION_OPTIONS,
    TASK_OPTIONS,
    GraphOpt,
    InterruptAfterOpt,
    InterruptBeforeOpt,
    JsonOpt,
    Objective,
    ThreadArg,
    decision_flags,
    taking,
    task_of,
)
from app.cli.output import print_outcome, progress
from app.cli.terminal import visible
from app.errors import RequestExpired, SubmitUsage, ThreadFinished
from app.exit_codes import ExitCode, for_outcome
from app.opening import each_graph
from app.settings import Settings
from app.storage.postgres import describe_url
from contracts import RunOutcome, TaskState


@cli.command()
@taking(TASK_OPTIONS)
def run(
    objective: Objective,
    as_json: JsonOpt = False,
    show_article: Annotated[
        bool, typer.Option("--show", help="Print the article first (when one was written).")
    ] = False,
    graph: GraphOpt = None,
    interrupt_before: InterruptBeforeOpt = None,
    interrupt_after: InterruptAfterOpt = None,
    **options: Any,
) -> None:
    """Run a new task on a new thread and print where the article is.

    At a breakpoint (--interrupt-before/--interrupt-after) it stops with exit 3, as a
    thread that waits does; `handoff resume ID` goes on.
    """
    with base.open_workflow(graph=graph) as workflow:
        task = task_of(workflow, objective, options)
        progressing = None if as_json else progress
        outcome = workflow.run(
            task,
            options["thread"],
            on_progress=progressing,
            interrupt_before=interrupt_before or (),
            interrupt_after=interrupt_after or (),
        )
        if show_article and not as_json and outcome.article is not None:
            article = workflow.context.store.get(outcome.article)
            sys.stdout.write(visible(article.decode("utf-8", errors="replace")) + "\n")
        print_outcome(outcome, workflow.settings, as_json)
    stopped_at_breakpoint(outcome, interrupt_before or interrupt_after, as_json)


def stopped_at_breakpoint(outcome: RunOutcome, breakpoints: object, as_json: bool) -> NoReturn:
    """Exit with the outcome's code, or 3 with how to go on when a breakpoint stopped it."""
    stopped = bool(breakpoints) and outcome.state == TaskState.WORKING
    if stopped and not as_json:
        out.print(f"stopped at a breakpoint; go on: {command()} resume {outcome.thread_id}")
    raise typer.Exit(int(ExitCode.WAITING_FOR_HUMAN if stopped else for_outcome(outcome)))


@cli.command()
@taking(DECISION_OPTIONS)
def resume(
    thread_id: ThreadArg,
    as_json: JsonOpt = False,
    graph: GraphOpt = None,
    interrupt_before: InterruptBeforeOpt = None,
    interrupt_after: InterruptAfterOpt = None,
    **options: Any,
) -> None:
    """Continue a thread: after a crash, or with a decision when it waits for a human.

    The decision options are checked before the thread is opened, then against the
    request the thread waits on; a refused decision changes nothing and exits 2. At a
    breakpoint (--interrupt-before/--interrupt-after) it stops with exit 3, as `run` does.
    """
    raw = decision_flags(options).raw()
    from_file = options["decision_file"] is not None
    try:
        with base.open_workflow(graph=graph, thread=thread_id) as workflow:
            workflow.refuse_if_held(thread_id, "nothing was resumed")  # before any prompt
            request = workflow.pending(thread_id) if workflow.threads_has(thread_id) else None
            decision: Any = raw  # not waiting: resume refuses it (finished, unknown, not waiting)
            if request is not None:
                decision = decision_for(request, raw, from_file=from_file)
                asks = decision is None and sys.stdin.isatty() and err.is_terminal and not as_json
                if asks:  # a person at a terminal: ask (docs/human-decisions.md)
                    decision = prompt_decision(request, thread_id, err, workflow.pauses)
                elif decision is None:
                    render_request(request, thread_id, err, workflow.pauses)
            outcome = workflow.resume(
                thread_id,
                decision,
                on_progress=None if as_json else progress,
                interrupt_before=interrupt_before or (),
                interrupt_after=interrupt_after or (),
            )
            print_outcome(outcome, workflow.settings, as_json)
    except (ThreadFinished, RequestExpired) as ended:  # how it ended, then exit with its code
        print_outcome(ended.outcome, Settings(), as_json)
        raise
    stopped_at_breakpoint(outcome, interrupt_before or interrupt_after, as_json)


@cli.command()
@taking(TASK_OPTIONS, DECISION_OPTIONS)
def submit(
    objective: Annotated[
        str | None, typer.Argument(help="What the article must explain (not with --resume).")
    ] = None,
    resume_id: Annotated[
        str | None, typer.Option("--resume", help="Queue a decision for this waiting thread.")
    ] = None,
    **options: Any,
) -> None:
    """Queue a task (or, with --resume, a decision) for the worker fleet; prints the thread id.

    Needs PostgreSQL and the queue extra; `handoff worker` processes run the jobs. The task
    or decision is checked now, as `run` and `resume` check it, and nothing is queued when
    it is refused: a thread with an unfinished job (exit 7), or a decision other than the
    one already queued or applied for the request (exit 2); the same decision again is not
    queued twice.
    """
    raw = decision_flags(options).raw()
    if (objective is None) == (resume_id is None):
        raise SubmitUsage("give an OBJECTIVE to queue a new thread, or --resume ID, not both")
    from app.fleet import DECIDE, Queue, queued_refusal

    with base.open_workflow() as workflow:
        queue = Queue(workflow)
        if resume_id is not None:
            job = queue.job(resume_id)
            if job is not None and job.unfinished and job.task != DECIDE:
                raise queued_refusal(resume_id, job, "no decision was queued")
            request = workflow.pending(resume_id)
            decision = (  # not waiting: the flags as given, compared with queued decisions
                raw
                if request is None
                else decision_for(request, raw, from_file=options["decision_file"] is not None)
            )
            if request is not None and decision is None:
                hints = request_hints(request, workflow.pauses)
                raise SubmitUsage(
                    f"--resume needs a decision for {request.interrupt_id!r}: "
                    f"{', '.join(hints)} or --decision-file"
                )
            queued = queue.submit_decision(resume_id, decision)
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
        task = task_of(workflow, objective, options)
        thread_id = queue.submit(task, options["thread"])
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
    from app.fleet import Fleet, configure_worker_logging, work

    settings = Settings()
    fleet = Fleet(settings)
    configure_worker_logging()
    err.print(
        f"worker: {concurrency} at once on {describe_url(settings.resolved_database_url())}",
        markup=False,
    )
    work(fleet, concurrency, burst=burst)


@cli.command()
def sweep() -> None:
    """Answer every request past its task's decision_timeout with its pause's default (deny).

    A worker does this every HANDOFF_SWEEP_SECONDS; this is the same once. One line per
    thread answered, with how it went on (docs/human-decisions.md, "Expiring approvals").
    """
    swept = [answered for workflow in each_graph() for answered in workflow.sweep()]
    for thread_id, outcome in swept:
        out.print(visible(f"expired {thread_id}: {outcome.state.value}"), markup=False)
    out.print(f"total: {len(swept)} expired requests answered", markup=False)


@cli.command()
def cancel(
    thread_id: ThreadArg,
    reason: Annotated[str, typer.Option("--reason", help="Why the thread ends (required).")],
    by: Annotated[str, typer.Option("--by", help="Who cancels it.")] = "human",
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
    graph: GraphOpt = None,
) -> None:
    """End a waiting, stuck or refused thread deliberately; what it stored is kept."""
    with base.open_workflow(graph=graph, thread=thread_id) as workflow:
        outcome = workflow.cancel(thread_id, reason, decided_by=by)
        print_outcome(outcome, workflow.settings, as_json)


@cli.command()
def edit(
    thread_id: ThreadArg,
    name: Annotated[str, typer.Argument(help="Artifact to revise: draft.")],
    file: Annotated[Path, typer.Option("--file", help="The new content.")],
) -> None:
    """Store a new revision of a thread's artifact; the thread notices it on resume."""
    content = read_input_file(file, f"--file {short(str(file), 200)}")
    with base.open_workflow(thread=thread_id) as workflow:
        ref = workflow.put_artifact(thread_id, name, content)
    out.print(f"{ref.uri} revision {ref.revision} (sha256 {ref.sha256[:12]}…)", markup=False)
