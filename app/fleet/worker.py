"""Running jobs until stopped, re-queueing those of workers that died, pruning as set."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from app.durations import describe_duration
from app.error_lines import error_line
from app.fleet.bodies import WORKFLOWS
from app.fleet.fleet import Fleet
from app.fleet.guard import fleet_workflow
from app.fleet.jobs import (
    QUEUE,
)
from app.fleet.logs import JOBS, report_task_error
from app.fleet.outage import (
    OutageWatch,
    lost,
    reachable,
)
from app.project_graphs import project_graphs
from app.settings import Settings
from app.storage.postgres import redact
from app.workflow import PruneReport, Workflow
from graphs.errors import HandoffError

if TYPE_CHECKING:
    from procrastinate.jobs import Job
    from procrastinate.manager import JobManager

_T = TypeVar("_T")
log = logging.getLogger(__name__)
RETENTION_SECONDS = 3600.0
"""How often a worker applies HANDOFF_RETENTION_* (the first time as it starts)."""


def work(fleet: Fleet, concurrency: int, *, burst: bool = False) -> None:
    """Run jobs until stopped (SIGINT/SIGTERM finish the jobs in hand first).

    ``burst`` stops once no job is left instead of waiting for more (batch runs, CI).
    A database that cannot be reached when the worker starts is reported at once as
    the project's error (exit code 9, password masked): a wrong URL is not an outage.
    Once running, the worker waits out a lost database (see ``OutageWatch``).
    """
    with reachable(fleet.url):
        fleet.ensure_schema()
        asyncio.run(_work(fleet, concurrency, burst))


async def _work(fleet: Fleet, concurrency: int, burst: bool) -> None:
    from procrastinate.worker import Worker

    heartbeat = fleet.settings.worker_heartbeat_seconds
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(report_task_error)
    watch = OutageWatch(fleet.url, fleet.settings.worker_outage_seconds)
    async with fleet.app.open_async():
        worker = Worker(
            app=fleet.app,
            queues=[QUEUE],
            concurrency=concurrency,
            wait=not burst,
            install_signal_handlers=False,  # ours: they also end a wait for the database
            update_heartbeat_interval=heartbeat,
            stalled_worker_timeout=3 * heartbeat,
        )

        def stop() -> None:
            for number in (signal.SIGINT, signal.SIGTERM):  # a second signal: default
                loop.remove_signal_handler(number)
            watch.stopping.set()
            worker.stop()  # type: ignore[no-untyped-call]

        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop)
        fleet.watching.watch = watch
        recovery = asyncio.create_task(
            _recover_stalled(fleet, heartbeat, watch, lambda: worker.worker_id)
        )
        pruning = asyncio.create_task(prune_every(fleet.settings, RETENTION_SECONDS))
        sweeping = asyncio.create_task(sweep_every(fleet.settings, watch))
        await asyncio.sleep(0)  # the first prune is under way, even for a burst with no job
        try:
            await worker.run()  # type: ignore[no-untyped-call]
        finally:
            fleet.watching.watch = None
            for number in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(number)
            for side in (recovery, pruning, sweeping):
                side.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await side
            WORKFLOWS.close_all()


async def _recover_stalled(
    fleet: Fleet, heartbeat: float, watch: OutageWatch, own: Callable[[], int | None]
) -> None:
    """Put back in the queue the jobs of workers that stopped sending heartbeats.

    A worker killed mid-job leaves its job ``doing``; once its heartbeat is three
    intervals old, any live worker re-queues the job, and the thread resumes from its
    last checkpoint on whichever worker takes it. Right after an outage every worker's
    heartbeat is old, so none is judged until three intervals after it ended, and a
    worker never judges its own jobs (``own``: its id): it is alive, whatever its
    heartbeat's age says while it recovers from an outage.
    """
    manager = fleet.app.job_manager
    while True:
        await asyncio.sleep(heartbeat)
        if not watch.settled(3 * heartbeat):
            continue
        stalled = await manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=3 * heartbeat)
        for job in stalled:
            if job.worker_id is None or job.worker_id != own():
                await requeue(manager, job)


async def prune_every(settings: Settings, seconds: float) -> None:
    """Apply the settings' retention now and every ``seconds``; nothing when it is unset.

    Several workers may prune at once: each thread is removed under its lock, so one of
    them removes it and the others find it busy or gone. A worker told to stop leaves a
    prune under way to finish (in its thread) and report.
    """
    while settings.retention_older_than is not None:
        await asyncio.to_thread(prune, settings)
        await asyncio.sleep(seconds)


async def sweep_every(settings: Settings, watch: OutageWatch) -> None:
    """Answer the expired requests now and every ``settings.sweep_seconds``.

    Several workers may sweep at once: each thread is resumed under its lock, so one of
    them records its default and the others find it busy or answered. No sweep starts
    while the database is away: the worker's watch reports that outage, in one line.
    """
    while True:
        if watch.settled(0):
            await asyncio.to_thread(sweep, settings)
        await asyncio.sleep(settings.sweep_seconds)


def every_graph(settings: Settings) -> Iterator[Workflow]:
    """The fleet's Workflow of each graph langgraph.json declares, each closed after.

    ``app.opening.each_graph`` as the fleet opens it: each sweeps and prunes its own threads.
    """
    for graph_id in project_graphs(settings.graphs_config):
        with fleet_workflow(settings, graph=graph_id) as workflow:
            yield workflow


def sweep(settings: Settings) -> int | None:
    """One sweep (``Workflow.sweep``); how many requests it answered, None if it failed.

    Each answered request is one line of the worker's log; a failed sweep is one line
    (the database away) or its traceback (a bug), and the next one comes as planned.
    """
    try:
        swept = [answered for workflow in every_graph(settings) for answered in workflow.sweep()]
    except Exception as error:
        if lost(error):  # the watch reports an outage, once, when the jobs meet it
            return None
        if not isinstance(error, HandoffError):
            log.exception("sweep: failed")
            return None
        line = redact(error_line(error), settings.resolved_database_url())
        log.warning("sweep: stopped: %s", line)
        return None
    for thread_id, outcome in swept:
        JOBS.info("sweep: thread %s expired unanswered: %s", thread_id, outcome.state.value)
    return len(swept)


def prune(settings: Settings) -> PruneReport | None:
    """Prune as HANDOFF_RETENTION_* say, leaving the threads the queue holds to it.

    The outcome is one line of the worker's log; a prune that failed (the database away:
    one line; a bug: its traceback) returns None, and the next one comes as planned.
    """
    assert settings.retention_older_than is not None
    try:
        older_than, keep_last = settings.retention_older_than, settings.retention_keep_last
        report = PruneReport.added(
            workflow.prune(older_than, keep_last=keep_last) for workflow in every_graph(settings)
        )
    except HandoffError as error:
        line = redact(error_line(error), settings.resolved_database_url())
        log.warning("retention: pruning stopped: %s", line)
        return None
    except Exception:
        log.exception("retention: pruning failed")
        return None
    JOBS.info(
        "prune: %d threads older than %s, %d bytes; %d held ones kept",
        len(report.pruned),
        describe_duration(settings.retention_older_than),
        report.total_bytes,
        len(report.kept),
    )
    return report


MOVED_ON = "Job was not found or has an invalid status to retry"
"""What Procrastinate's retry_job raises for a job no longer ``doing``."""


async def requeue(manager: JobManager, job: Job) -> bool:
    """Put a stalled job back in the queue; False if it left ``doing`` in the meantime.

    Between finding a job stalled and re-queueing it, its own worker may have finished
    it or retried it (right after an outage both happen), or another worker re-queued
    it. That job is where it should be: the race is reported and recovery goes on,
    where it used to end the recovery and, at shutdown, the worker with exit code 1.
    """
    from procrastinate.exceptions import ConnectorException

    log.warning("re-queueing job %s of thread %s: its worker stopped", job.id, job.lock)
    try:
        await manager.retry_job(job)
    except ConnectorException as error:
        if MOVED_ON not in str(error.__cause__):
            raise
        log.warning(
            "job %s of thread %s was not re-queued: it left `doing` since it was found "
            "stalled (finished, retried or re-queued elsewhere)",
            job.id,
            job.lock,
        )
        return False
    return True
