"""P1 control-plane overhead: the full offline workflow vs the same agents as bare LangGraph.

Both sides run research → writer → reviewer → finalize on the bundled corpus with the
same agent objects, compiled with the same SQLite saver factory, ``durability="sync"``,
one fresh thread per run, in the same process, alternating run by run.

- bare graph: plain dict state, artifacts in a dict, no validation, envelope or ledger.
- ours graph.invoke: the project's graph with its RunContext (contract validation on every
  read and write, handoff envelopes, filesystem artifact store, run ledger in SQLite).
- ours Workflow.run: the Python API on top (thread-id check, existence check, outcome read).
- agents only: the three agents called directly on a dict store, no graph, no saver;
  shown for scale (how much of a run is the agents' own work).
- ours, ledger in memory / ours, ledger + store in memory: the project's graph with the
  run ledger (and the artifact store) swapped for in-memory ones; shown to split the
  overhead into durable I/O (SQLite ledger commits, fsynced artifact files) and the rest
  (validation, envelopes, hashing).
- ours graph, traced: the project's graph with OpenTelemetry tracing on (the SDK's batch
  processor, into its in-memory exporter), against the same graph untraced: what tracing
  costs when it is on. The rows above run untraced, as every run does by default.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.otel import OtelRunTrace
from app.storage.backends import ledger_for_url, open_checkpointer
from app.workflow import Workflow
from bench._bare import NO_HANDOFF, BareAgents, MemoryStore, build_bare_graph
from bench._common import (
    OBJECTIVE,
    Measure,
    Row,
    interleaved,
    parse_args,
    print_rows,
    scratch_dir,
    timed,
    workflow_settings,
)
from contracts import TaskSpec
from graphs import (
    ResearchRequest,
    ReviewRequest,
    RunContext,
    StepInfo,
    WriteRequest,
)

TARGET = 1.5


def agents_only(agents: BareAgents, task: TaskSpec, thread_id: str) -> str:
    """The agents' own work for one approved run, without any graph or saver."""
    store = MemoryStore()

    def step(node: str) -> StepInfo:
        return StepInfo(thread_id=thread_id, node=node, step=1, task_version=1)

    bundle = agents.research.run(ResearchRequest(task, store, step("research"))).result
    draft = agents.writer.run(
        WriteRequest(task, NO_HANDOFF, bundle, None, None, store, step("writer"))
    )
    review = agents.reviewer.run(
        ReviewRequest(task, NO_HANDOFF, bundle, draft.result, store, step("reviewer"))
    ).result
    if review.verdict != "approved":
        raise RuntimeError(f"agents-only run was not approved: {review.verdict}")
    return store.get(draft.result.body).decode()


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P1; returns the rows."""
    args = parse_args(argv, "P1 control-plane overhead", repeats=30, quick_repeats=2)
    warmup = 0 if args.quick else 3
    task = TaskSpec(task_id="p1", objective=OBJECTIVE)
    with (
        scratch_dir("p1") as root,
        Workflow(workflow_settings(root)) as workflow,
        open_checkpointer(f"sqlite:///{root / 'bare' / 'bare.db'}") as bare_saver,
    ):
        context = workflow.context
        agents = BareAgents(
            context.agents["research"], context.agents["writer"], context.agents["reviewer"]
        )
        bare = build_bare_graph(agents, MemoryStore()).compile(checkpointer=bare_saver)
        ours = workflow.graph
        memory_ledger = replace(context, ledger=ledger_for_url("memory://"))
        memory_io = replace(context, ledger=ledger_for_url("memory://"), store=MemoryStore())
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
        traced = replace(context, trace=OtelRunTrace(provider))

        def run_bare(i: int) -> float:
            config = workflow.config(f"bare-{i}")
            seconds = timed(lambda: bare.invoke({"task": task}, config, durability="sync"))
            if "article" not in bare.get_state(config).values:
                raise RuntimeError("bare run did not reach finalize")
            return seconds

        def graph_case(prefix: str, run_context: RunContext) -> Callable[[int], float]:
            def run_graph(i: int) -> float:
                config = workflow.config(f"{prefix}-{i}")
                seconds = timed(
                    lambda: ours.invoke(
                        {"task": task}, config, context=run_context, durability="sync"
                    )
                )
                outcome = ours.get_state(config).values.get("outcome")
                if outcome is None or outcome.result_status != "completed":
                    raise RuntimeError(f"graph run did not complete: {outcome}")
                return seconds

            return run_graph

        def run_workflow(i: int) -> float:
            outcome = None

            def run() -> None:
                nonlocal outcome
                outcome = workflow.run(task, thread_id=f"run-{i}")

            seconds = timed(run)
            if outcome is None or outcome.result_status != "completed":
                raise RuntimeError(f"Workflow.run did not complete: {outcome}")
            return seconds

        def run_agents(i: int) -> float:
            return timed(lambda: agents_only(agents, task, f"agents-{i}"))

        cases: dict[str, Callable[[int], float]] = {
            "agents only": run_agents,
            "bare graph": run_bare,
            "ours graph": graph_case("graph", context),
            "ours Workflow.run": run_workflow,
            "ours, ledger in memory": graph_case("memledger", memory_ledger),
            "ours, ledger + store in memory": graph_case("memio", memory_io),
            "ours graph, traced": graph_case("traced", traced),
        }
        samples = interleaved(cases, repeats=args.repeats, warmup=warmup)
        bare_checkpoints = sum(1 for _ in bare_saver.list(workflow.config("bare-0")))
        ours_checkpoints = workflow.checkpoint_count("graph-0")

    measures = {name: Measure.of(values) for name, values in samples.items()}

    def side(name: str) -> tuple[str, Measure]:
        return name, measures[name]

    rows = [
        Row.of(
            "P1",
            "offline run, graph.invoke",
            side("bare graph"),
            side("ours graph"),
            max_ratio=TARGET,
        ),
        Row.of(
            "P1",
            "offline run, Workflow.run",
            side("bare graph"),
            side("ours Workflow.run"),
            max_ratio=TARGET,
        ),
        Row.of(
            "P1",
            "graph + saver cost (info)",
            side("agents only"),
            side("bare graph"),
        ),
        Row.of(
            "P1",
            "without SQLite ledger (info)",
            side("bare graph"),
            side("ours, ledger in memory"),
        ),
        Row.of(
            "P1",
            "without durable I/O (info)",
            side("bare graph"),
            side("ours, ledger + store in memory"),
        ),
        Row.of(
            "P1",
            "tracing on (info)",
            side("ours graph"),
            side("ours graph, traced"),
        ),
    ]
    print_rows(
        f"P1 control-plane overhead: {args.repeats} interleaved runs per side, median and IQR", rows
    )
    extra = measures["ours graph"].median - measures["bare graph"].median
    print(
        f"checkpoints per run: bare {bare_checkpoints}, ours {ours_checkpoints}; "
        f"control plane adds {extra * 1000:.2f} ms per run (graph.invoke medians)"
    )
    return rows


if __name__ == "__main__":
    main()
