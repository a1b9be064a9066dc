"""The worker fleet: Procrastinate jobs on the project's PostgreSQL run and resume threads.

Why Procrastinate: it needs nothing beyond the PostgreSQL a scale-out deployment already
has, and its job model maps onto the thread model directly. Every job of a thread carries
the thread id as its ``lock``, so the queue itself hands a thread to one worker at a time
and in order (a decision queued behind a run waits for it).

The fleet uses the Workflow; the Workflow knows nothing of the fleet. The queue is one of
the ways into a thread, so it is guarded like the others:

* A thread with an unfinished job (queued, or running on a worker) is not run, resumed,
  cancelled or submitted again by anyone else: ``ThreadQueued`` (exit code 7) names the
  job. A Workflow opened with the queue's guard (``guard.fleet_workflow``; every Workflow
  the CLI opens on PostgreSQL) checks this while it holds the thread's lock, and
  submitting takes the same lock, so a check and the write it guards cannot be split.
* Submissions of one thread are serialized by a second advisory lock (the thread's *queue
  lock*, waited for, held for milliseconds): of two racing decisions the second sees the
  first's job (``submission``).
* The per-thread lock of ``app.storage.locks`` still guards every write, so a worker,
  ``handoff resume`` and the dev server never write one thread at once.

A job is a step towards a thread's end, not a unit of work to redo (``bodies``). A worker
outlives a database outage (``outage``). Procrastinate is imported only inside this
package, and only when a queue is used: the single-machine default never imports it, nor
this package.
"""

from app.fleet.bodies import WORKFLOWS, decide_thread, recorded_decisions, run_thread
from app.fleet.fleet import Fleet
from app.fleet.guard import QueueGuard, fleet_workflow
from app.fleet.jobs import DECIDE, QUEUE, RUN, JobState, queued_refusal
from app.fleet.logs import configure_worker_logging
from app.fleet.outage import OutageWatch, lost
from app.fleet.queue import Queue
from app.fleet.submission import QueuedDecision
from app.fleet.worker import work

__all__ = [
    "DECIDE",
    "QUEUE",
    "RUN",
    "WORKFLOWS",
    "Fleet",
    "JobState",
    "OutageWatch",
    "Queue",
    "QueueGuard",
    "QueuedDecision",
    "configure_worker_logging",
    "decide_thread",
    "fleet_workflow",
    "lost",
    "queued_refusal",
    "recorded_decisions",
    "run_thread",
    "work",
]
