"""OpenTelemetry traces of a run: one trace, a span per run, node attempt, tool and model call.

Spans go to the SDK's in-memory exporter (the provider ``app/otel.py`` would build from the
``OTEL_*`` environment is swapped for one that keeps them); with no exporter configured,
nothing is traced and the tracing module (with the SDK's exporters) is never imported.
(langsmith, under langchain-core, imports the SDK's tracer itself when it is installed.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.language_models import BaseChatModel
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import app.otel
from app.services import build_context
from app.tracing import TracingConfigError, run_trace, tracing_configured
from app.workflow import Workflow
from contracts import TaskState
from graphs.errors import ExitCode
from graphs.trace import UNTRACED
from tests.app.agents.scripted import APPROVE, GROUNDED, claims, draft, reply, scripted
from tests.cli import handoff
from tests.conftest import OBJECTIVE

SECTIONS = {"required_sections": ["The Stone", "Decipherment"]}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Tracing on (as ``OTEL_TRACES_EXPORTER`` turns it on), every span kept in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setattr(app.otel, "tracer_provider", lambda: provider)
    yield exporter
    provider.shutdown()


def named(finished: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [span for span in finished if span.name.startswith(prefix)]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_of(span: ReadableSpan) -> int | None:
    return int(span.parent.span_id) if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def test_a_run_is_one_trace_of_its_run_its_node_attempts_and_research_s_tool_calls(
    spans: InMemorySpanExporter, workflow: Workflow
) -> None:
    outcome = workflow.run(OBJECTIVE, "t-traced")
    assert outcome.state == TaskState.COMPLETED
    finished = spans.get_finished_spans()
    assert len({span.context.trace_id for span in finished if span.context}) == 1, "one trace"
    [run] = named(finished, "handoff run")
    assert run.parent is None and attributes(run)["handoff.thread_id"] == "t-traced"
    attempts = named(finished, "node ")
    nodes = {spec.name for spec, _ in workflow.wiring}
    rows = [row for row in workflow.history("t-traced") if row.node_id in nodes]
    assert sorted(
        (
            a["handoff.node"],
            a["handoff.attempt"],
            a["handoff.task_version"],
            a["handoff.status"],
            a["handoff.input_hash"],
            a["handoff.reused"],
            a["handoff.thread_id"],
        )
        for a in map(attributes, attempts)
    ) == sorted(
        (row.node_id, row.attempt, 1, row.status, row.input_hash, False, "t-traced") for row in rows
    ), "a span per audited attempt (parallel tasks end in any order), saying what its row says"
    assert {parent_of(span) for span in attempts} == {span_id(run)}
    tools = named(finished, "execute_tool ")
    research = {span_id(span) for span in attempts if span.name == "node research"}
    assert tools and {parent_of(span) for span in tools} <= research, "under research"
    assert {attributes(span)["gen_ai.tool.name"] for span in tools} >= {"read_source"}
    for tool in map(attributes, tools):
        assert tool["handoff.tool.kind"] == "read" and tool["handoff.tool.outcome"] == "ok"
        assert tool["gen_ai.operation.name"] == "execute_tool"
        assert tool["handoff.thread_id"] == "t-traced"


def test_a_revision_s_trace_says_which_attempts_reused_their_result(
    spans: InMemorySpanExporter, workflow: Workflow
) -> None:
    workflow.run(workflow.task(OBJECTIVE, constraints={"max_words": 400}), "t-traced-rev")
    spans.clear()
    workflow.revise("t-traced-rev", {"max_words": 120, "reason": "a shorter piece"})
    finished = spans.get_finished_spans()
    assert len(named(finished, "handoff run")) == 1, "the revision's run is one trace"
    reused = {
        attributes(span)["handoff.node"]: attributes(span)["handoff.reused"]
        for span in named(finished, "node ")
        if attributes(span)["handoff.task_version"] == 2
    }
    assert reused["research"] is True, "research's inputs are unchanged: its result reused"
    assert reused["writer"] is False and reused["reviewer"] is False, "they worked again"
    assert not named(finished, "execute_tool "), "a reused attempt calls no tool"


def test_model_calls_are_genai_spans_under_their_node_s_attempt(
    spans: InMemorySpanExporter, workflow: Workflow
) -> None:
    research, _ = scripted(reply(claims(*GROUNDED), tokens=900))
    writer, _ = scripted(reply(draft(), tokens=700))
    reviewer, _ = scripted(reply(APPROVE, tokens=400))
    models = cast(
        dict[Any, BaseChatModel], {"research": research, "writer": writer, "reviewer": reviewer}
    )
    context = build_context(workflow.settings, workflow.ledger, models=models)
    with Workflow(workflow.settings, context=context) as llm:
        outcome = llm.run(llm.task(OBJECTIVE, constraints=SECTIONS), "t-traced-llm")
    assert outcome.state == TaskState.COMPLETED
    finished = spans.get_finished_spans()
    node_of = {span_id(span): attributes(span)["handoff.node"] for span in named(finished, "node ")}
    calls = named(finished, "chat ")
    assert sorted(node_of[parent_of(span) or 0] for span in calls) == [
        "research",
        "reviewer",
        "writer",
    ], "each model call sits under the attempt that made it"
    usage = {
        node_of[parent_of(span) or 0]: (
            attributes(span)["gen_ai.operation.name"],
            attributes(span)["gen_ai.request.model"],
            attributes(span)["gen_ai.usage.input_tokens"],
            attributes(span)["gen_ai.usage.output_tokens"],
        )
        for span in calls
    }
    model = "FakeMessagesListChatModel"
    assert usage == {
        "research": ("chat", model, 675, 225),
        "writer": ("chat", model, 525, 175),
        "reviewer": ("chat", model, 300, 100),
    }


def test_tracing_is_on_only_when_an_exporter_is_configured() -> None:
    assert not tracing_configured({})
    assert not tracing_configured({"OTEL_TRACES_EXPORTER": "none"})
    assert not tracing_configured({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"})
    assert tracing_configured({"OTEL_TRACES_EXPORTER": "otlp"})
    assert tracing_configured({"OTEL_TRACES_EXPORTER": "console,otlp"})


def test_an_exporter_that_cannot_be_set_up_is_a_usage_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin_json")
    with pytest.raises(TracingConfigError) as raised:
        run_trace()
    assert raised.value.exit_code == ExitCode.USAGE
    assert raised.value.message.startswith("OTEL_TRACES_EXPORTER=zipkin_json: ")
    assert "zipkin_json" in raised.value.message.split(": ", 1)[1], "the SDK's reason, kept"


UNTRACED_RUN = """
import json, sys
from app.settings import Settings
from app.workflow import Workflow
from graphs.errors import ExitCode
from graphs.trace import UNTRACED
with Workflow(Settings(_env_file=None, data_dir=sys.argv[1], model="offline")) as workflow:
    outcome = workflow.run("Explain how the Rosetta Stone led to the decipherment", "t-off")
    print(json.dumps({
        "state": outcome.state.value,
        "untraced": workflow.context.trace is UNTRACED,
        "traced": [
            name for name in ("app.otel", "opentelemetry.sdk.trace.export") if name in sys.modules
        ],
    }))
"""


@pytest.mark.e2e
def test_with_no_exporter_configured_a_run_loads_no_tracing_and_makes_no_span(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OTEL_")}
    env = {k: v for k, v in env.items() if not k.startswith("HANDOFF_")}
    ran = subprocess.run(
        [sys.executable, "-c", UNTRACED_RUN, str(tmp_path / "data")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout.splitlines()[-1])
    assert seen == {"state": TaskState.COMPLETED.value, "untraced": True, "traced": []}


def test_with_no_exporter_configured_the_run_context_keeps_the_no_op_trace(
    workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    assert workflow.context.trace is UNTRACED


@pytest.mark.e2e
def test_the_console_exporter_prints_the_run_s_spans(tmp_path: Path) -> None:
    ran = handoff(
        "run",
        OBJECTIVE,
        "--thread",
        "t-console",
        data_dir=tmp_path / "data",
        env={"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "handoff-test"},
    )
    assert ran.returncode == 0, ran.stderr
    printed = printed_spans(ran.stdout)
    names = [span["name"] for span in printed]
    assert names[-1] == "handoff run", "the run's span ends last"
    assert {"node research", "node writer", "node reviewer", "execute_tool read_source"} <= set(
        names
    )
    assert {span["resource"]["attributes"]["service.name"] for span in printed} == {"handoff-test"}
    assert {span["attributes"]["handoff.thread_id"] for span in printed} == {"t-console"}


def printed_spans(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects the console exporter printed among the command's own lines."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = 0
    while (start := stdout.find("\n{", at)) >= 0:
        span, at = decoder.raw_decode(stdout, start + 1)
        found.append(span)
    return found
