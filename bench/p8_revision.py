"""P8 revision cost: tightening a finished thread's word limit vs a fresh run of the result.

A revision re-runs only the nodes whose input the change touched; the point of
``Workflow.revise`` over starting again is that research, the costly part, is reused. Both
sides run on the embedded default (one SQLite file and artifacts in a temp folder, the
offline agents, the bundled corpus), in one Workflow, alternating run by run, each repeat
on new threads:

- fresh run (baseline): ``Workflow.run`` of the revised task (the objective, two
  sub-questions, max_words=150) on a new thread.
- revision (candidate): a new thread runs the task with max_words=400 to its end
  (untimed), then ``Workflow.revise(thread, {"max_words": 150, ...})`` is timed: the
  revision becomes task version 2, and the run keeps research when every branch would
  reuse its result.

Printed besides: the node attempts each timed call recorded (``Workflow.history``), split
into work done and results reused (``NodeRun.reused``), which is why the ratio is what it is;
and in how many pairs the revision's article is byte for byte the fresh run's (both serve
the same task, so a difference would mean the two sides did not do the same job).
"""

from __future__ import annotations

import gc
import statistics
from collections import Counter
from collections.abc import Sequence

from bench._common import (
    OBJECTIVE,
    QUESTIONS,
    Row,
    interleaved,
    ms,
    parse_args,
    print_rows,
    print_table,
    scratch_workflow,
    timed,
)
from contracts import Constraints, NodeRun, RunOutcome, TaskRevision, TaskSpec

TARGET = 0.5
"""A word-limit revision costs at most half a fresh run of the revised task."""
FIRST_WORDS = 400
REVISED_WORDS = 150
REVISION = TaskRevision(
    max_words=REVISED_WORDS, reason="The editor wants a shorter piece on the same questions."
)
FRESH = "fresh run"
REVISED = "revision"

Attempts = tuple[tuple[str, bool, int], ...]
"""Node attempts of one timed call: (node, reused, how many), in the order first run."""


def attempts(runs: Sequence[NodeRun]) -> Attempts:
    """The attempts counted per node and whether their result was reused, oldest first."""
    counted = Counter((run.node_id, run.reused) for run in runs)
    return tuple((node, reused, n) for (node, reused), n in counted.items())


def completed(outcome: RunOutcome | None, what: str) -> str:
    """The article's sha256; refuses a run that did not complete (it took another path)."""
    if outcome is None or outcome.result_status != "completed" or outcome.article is None:
        raise RuntimeError(f"{what} did not complete: {outcome}")
    return outcome.article.sha256


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P8; returns the rows."""
    args = parse_args(argv, "P8 revision cost", repeats=20, quick_repeats=2)
    warmup = 0 if args.quick else 1
    first = TaskSpec(
        task_id="p8",
        objective=OBJECTIVE,
        questions=list(QUESTIONS),
        constraints=Constraints(max_words=FIRST_WORDS),
    )
    revised = REVISION.applied_to(first).model_copy(update={"task_version": 1})
    seen: dict[str, list[list[NodeRun]]] = {FRESH: [], REVISED: []}
    articles: dict[str, dict[int, str]] = {FRESH: {}, REVISED: {}}

    with scratch_workflow("p8") as workflow:

        def run_fresh(i: int) -> float:
            thread_id = f"fresh-{i}"
            outcome = None

            def run() -> None:
                nonlocal outcome
                outcome = workflow.run(revised, thread_id=thread_id)

            seconds = timed(run)
            articles[FRESH][i] = completed(outcome, f"fresh run {thread_id}")
            seen[FRESH].append(workflow.history(thread_id))
            return seconds

        def run_revision(i: int) -> float:
            thread_id = f"revised-{i}"
            completed(workflow.run(first, thread_id=thread_id), f"first run {thread_id}")
            before = len(workflow.history(thread_id))
            gc.collect()  # the untimed first run's garbage is not the revision's
            outcome = None

            def revise() -> None:
                nonlocal outcome
                outcome = workflow.revise(thread_id, REVISION)

            seconds = timed(revise)
            articles[REVISED][i] = completed(outcome, f"revision of {thread_id}")
            task = workflow.state(thread_id)["task"]
            if task.task_version != 2 or task.constraints.max_words != REVISED_WORDS:
                raise RuntimeError(f"{thread_id} is not on the revised task: {task}")
            seen[REVISED].append(workflow.history(thread_id)[before:])
            return seconds

        samples = interleaved(
            {FRESH: run_fresh, REVISED: run_revision}, repeats=args.repeats, warmup=warmup
        )
        checkpoints = {
            FRESH: workflow.checkpoint_count("fresh-0"),
            REVISED: workflow.checkpoint_count("revised-0"),
        }

    rows = [
        Row.of(
            "P8",
            f"max_words {FIRST_WORDS} -> {REVISED_WORDS}",
            (FRESH, samples[FRESH]),
            (REVISED, samples[REVISED]),
            max_ratio=TARGET,
        )
    ]
    print_rows(
        f"P8 word-limit revision vs a fresh run of the revised task: {args.repeats} "
        "interleaved samples per side, median and IQR",
        rows,
    )
    print_attempts({side: calls[warmup:] for side, calls in seen.items()}, checkpoints)
    same = sum(articles[REVISED][i] == sha for i, sha in articles[FRESH].items())
    print(f"revised article byte for byte the fresh run's: {same} of {len(articles[FRESH])} pairs")
    return rows


def print_attempts(seen: dict[str, list[list[NodeRun]]], checkpoints: dict[str, int]) -> None:
    """Each side's node attempts per timed call: how many worked, how many were reused.

    The node times are the median over calls of the attempts' own durations, summed: the
    research branches run at once, so their sum can exceed the call's wall time.
    """
    table = []
    for side, calls in seen.items():
        shapes = [attempts(runs) for runs in calls]
        for shape in dict.fromkeys(shapes):  # one line per distinct shape, in order seen
            worked = [(node, n) for node, reused, n in shape if not reused]
            reused = [(node, n) for node, was_reused, n in shape if was_reused]
            alike = [runs for runs, other in zip(calls, shapes, strict=True) if other == shape]
            table.append(
                [
                    side,
                    f"{len(alike)}/{len(calls)}",
                    str(sum(n for _, n in worked)),
                    ms(node_time(alike, reused=False)),
                    named(worked),
                    str(sum(n for _, n in reused)),
                    ms(node_time(alike, reused=True)),
                    named(reused),
                ]
            )
    print_table(
        "P8 node attempts per timed call (Workflow.history), node time: median of their sums",
        ["side", "calls", "worked", "node time", "nodes that worked", "reused", "node time"]
        + ["nodes reused"],
        table,
    )
    print(
        f"checkpoints per thread: fresh {checkpoints[FRESH]}, "
        f"revised (both versions) {checkpoints[REVISED]}"
    )


def node_time(calls: Sequence[Sequence[NodeRun]], *, reused: bool) -> float:
    """Median over calls of the summed durations of the attempts that were (not) reused."""
    return statistics.median(
        sum(run.duration_ms or 0.0 for run in runs if run.reused == reused) / 1000 for runs in calls
    )


def named(counts: Sequence[tuple[str, int]]) -> str:
    """Nodes with their attempt counts, ``research x3, writer``; '-' for none."""
    return ", ".join(node if n == 1 else f"{node} x{n}" for node, n in counts) or "-"


if __name__ == "__main__":
    main()
