"""P4 resume cost vs history: resume a thread after 3 vs ~200 checkpoints.

Both threads wait before the same Writer step with identical state values; only their
history differs. Each timed resume is ``graph.get_state`` plus ``graph.invoke(None, ...)``
on the project's graph (compiled with ``interrupt_before=["writer", "reviewer"]``, so the
resume runs exactly the Writer node and stops before the Reviewer), with the workflow's
RunContext, SQLite saver and ``durability="sync"``.

- long thread: the real workflow, with a Writer that always leaves one change, runs
  research and 49 Writer/Reviewer rounds (so its run ledger holds ~100 attempts and its
  draft artifact 49 revisions); then ``update_state`` (as the Reviewer, same review) adds
  checkpoints up to the target history length.
- short thread: a fresh thread given the long thread's final values by ``update_state``
  (as the Reviewer), three times: 3 checkpoints, an empty ledger, one draft revision. The
  artifacts those values name are copied to the short thread's own ids first (a consumer
  refuses another thread's artifact), byte for byte.

A fresh pair of threads is built (untimed) for every repeat: a resume consumes its thread.
A second row times ``Workflow.status`` (all ``handoff status`` reads of a thread) on the
same pairs before the resume, held to the same target: it reads the latest checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench._common import (
    OBJECTIVE,
    Row,
    interleaved,
    parse_args,
    print_rows,
    scratch_workflow,
    timed,
)
from bench._variants import StubbornWriter
from contracts import ArtifactRef, Budget, DraftArticle, ResearchBundle, ReviewResult, TaskSpec
from graphs import ArtifactStore, build_graph

TARGET = 1.2
SHORT = 3
LONG = 200
LONG_ROUNDS = 49
QUICK_LONG = 20
QUICK_ROUNDS = 3
RESUME = "get_state + resume one step"
STATUS = "Workflow.status"


@dataclass(frozen=True)
class Pair:
    """Two threads waiting before the same Writer step, with short and long histories."""

    short: str
    long: str
    revision: int
    short_checkpoints: int
    long_checkpoints: int
    long_audit_rows: int


def owned_copy(values: dict[str, Any], store: ArtifactStore, thread_id: str) -> dict[str, Any]:
    """The values with the research, draft and review artifacts copied to ``thread_id``'s ids."""

    def copy(ref: ArtifactRef, name: str) -> ArtifactRef:
        return store.put(f"{thread_id}-{name}", ref.kind, store.get(ref), ref.media_type)

    bundle: ResearchBundle = values["research"]
    draft: DraftArticle = values["draft"]
    sources = [
        source.model_copy(update={"snapshot": copy(source.snapshot, source.id)})
        for source in bundle.sources
    ]
    refs = [copy(ref, ref.kind) for ref in bundle.artifact_refs]
    research = bundle.model_copy(update={"sources": sources, "artifact_refs": refs})
    body = copy(draft.body, draft.body.kind)
    copied = {**values, "research": research, "draft": draft.model_copy(update={"body": body})}
    review: ReviewResult | None = values.get("review")
    if review is not None and review.report is not None:  # read by the writer: its own too
        report = copy(review.report, review.report.kind)
        copied["review"] = review.model_copy(update={"report": report})
    return copied


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P4; returns the rows."""
    args = parse_args(argv, "P4 resume cost vs history", repeats=10, quick_repeats=2)
    warmup = 0 if args.quick else 1
    long_length = QUICK_LONG if args.quick else LONG
    rounds = QUICK_ROUNDS if args.quick else LONG_ROUNDS
    task = TaskSpec(task_id="p4", objective=OBJECTIVE, budget=Budget(max_review_rounds=rounds + 1))
    with scratch_workflow("p4") as workflow:
        context = workflow.context.with_agent(
            "writer", StubbornWriter(workflow.context.agents["writer"])
        )
        graph = build_graph().compile(
            checkpointer=workflow.saver, interrupt_before=["writer", "reviewer"]
        )
        pairs: dict[int, Pair] = {}

        def step(thread_id: str) -> None:
            graph.invoke(None, workflow.config(thread_id), context=context, durability="sync")

        def pad(thread_id: str, values: dict[str, Any], length: int) -> None:
            config = workflow.config(thread_id)
            for _ in range(length - workflow.checkpoint_count(thread_id)):
                graph.update_state(config, values, as_node="reviewer")

        def prepare(i: int) -> Pair:
            if i in pairs:
                return pairs[i]
            long_id, short_id = f"long-{i}", f"short-{i}"
            graph.invoke(
                {"task": task}, workflow.config(long_id), context=context, durability="sync"
            )
            for _ in range(rounds):
                step(long_id)  # writer
                step(long_id)  # reviewer
            snapshot = graph.get_state(workflow.config(long_id))
            values = dict(snapshot.values)
            pad(long_id, {"review": values["review"]}, long_length)
            pad(short_id, owned_copy(values, workflow.context.store, short_id), SHORT)
            for thread_id in (short_id, long_id):
                if graph.get_state(workflow.config(thread_id)).next != ("writer",):
                    raise RuntimeError(f"{thread_id} is not waiting before the writer")
            pairs[i] = Pair(
                short=short_id,
                long=long_id,
                revision=values["draft"].revision,
                short_checkpoints=workflow.checkpoint_count(short_id),
                long_checkpoints=workflow.checkpoint_count(long_id),
                long_audit_rows=len(workflow.history(long_id)),
            )
            return pairs[i]

        def resume(pick: Callable[[Pair], str]) -> Callable[[int], float]:
            def run(i: int) -> float:
                pair = prepare(i)
                thread_id = pick(pair)
                config = workflow.config(thread_id)

                def once() -> None:
                    graph.get_state(config)
                    step(thread_id)

                seconds = timed(once)
                after = graph.get_state(config)
                if after.next != ("reviewer",) or after.values["draft"].revision != (
                    pair.revision + 1
                ):
                    raise RuntimeError(f"{thread_id} did not resume into exactly one writer step")
                return seconds

            return run

        def status(pick: Callable[[Pair], str]) -> Callable[[int], float]:
            def run(i: int) -> float:
                thread_id = pick(prepare(i))
                return timed(lambda: workflow.status(thread_id))

            return run

        samples = {  # status first: a resume consumes the pair both read
            case: interleaved(
                {"short": probe(lambda pair: pair.short), "long": probe(lambda pair: pair.long)},
                repeats=args.repeats,
                warmup=warmup,
            )
            for case, probe in ((STATUS, status), (RESUME, resume))
        }
        example = pairs[max(pairs)]

    rows = [
        Row.of(
            "P4",
            case,
            (f"{example.short_checkpoints} checkpoints", samples[case]["short"]),
            (f"{example.long_checkpoints} checkpoints", samples[case]["long"]),
            max_ratio=TARGET,
        )
        for case in (RESUME, STATUS)
    ]
    print_rows(
        f"P4 resume and status cost vs history: {args.repeats} interleaved samples per side, "
        "median and IQR",
        rows,
    )
    print(
        f"history before the resume: short {example.short_checkpoints} checkpoints, "
        f"no audit rows, no draft revisions; long {example.long_checkpoints} checkpoints, "
        f"{example.long_audit_rows} audit rows, {example.revision} draft revisions"
    )
    return rows


if __name__ == "__main__":
    main()
