"""The OpenTelemetry trace of a run, configured from the SDK's own ``OTEL_*`` variables.

Imported only when ``app/tracing.py`` finds an exporter configured. One trace per run: the
run's span (``Workflow`` drives the graph inside it), a child per node attempt, and under
an attempt a span per tool call and per chat model call. Model calls follow the
OpenTelemetry GenAI semantic conventions (``gen_ai.*``); the workflow's own attributes are
``handoff.*``, and every span names its thread (``handoff.thread_id``), so the spans of
one thread are found together whichever process (CLI, server, A2A, worker) made them.

The provider is this module's own (not the global one), so tracing a run never changes
what another library in the process exports.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk._configuration import _get_exporter_names, _import_exporters
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from app.version import package_version
from contracts import NodeRun, ToolReceipt
from graphs.ports import StepInfo
from graphs.trace import TRACED_ATTEMPT

THREAD = "handoff.thread_id"
"""The attribute every span of a thread carries: how one thread's spans are found."""
DEFAULT_SERVICE = "handoff"
"""The service name when ``OTEL_SERVICE_NAME`` (or the resource attributes) set none."""


@functools.cache
def tracer_provider() -> TracerProvider:
    """The process's provider: exporters named by ``OTEL_TRACES_EXPORTER``, batched.

    The SDK reads the variables itself (its own configurator's helpers choose and load the
    exporters, by entry point; ``Resource.create`` reads the service name and resource
    attributes; the exporters and batch processor read theirs). The provider flushes and
    shuts down when the process exits.
    """
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE}))
    provider = TracerProvider(resource=resource)
    exporters, _, _ = _import_exporters(_get_exporter_names("traces"), [], [])
    for exporter in exporters.values():
        provider.add_span_processor(BatchSpanProcessor(exporter()))
    return provider


class OtelRunTrace:
    """``graphs.trace.RunTrace`` as OpenTelemetry spans."""

    def __init__(self, provider: trace.TracerProvider) -> None:
        self.tracer = provider.get_tracer("handoff", package_version())
        self.runs: dict[str, Span] = {}
        """The open run span of each thread this trace drives: its attempts' parent, even
        when a node runs in a thread the run's context did not reach."""

    @contextlib.contextmanager
    def run(self, thread_id: str) -> Iterator[object]:
        """The run's span, current while the caller drives the graph."""
        span = self.tracer.start_span("handoff run", attributes={THREAD: thread_id})
        self.runs[thread_id] = span
        try:
            with trace.use_span(span, end_on_exit=True):
                yield span
        finally:
            self.runs.pop(thread_id, None)

    def attempt(self, step: StepInfo, record: NodeRun) -> OtelAttempt:
        """A node attempt's span, under its run's (else the current span)."""
        run = self.runs.get(step.thread_id)
        parent = trace.set_span_in_context(run) if run is not None else None
        attributes: dict[str, str | int] = {
            THREAD: step.thread_id,
            "handoff.task_version": record.task_version,
            "handoff.node": record.node_id,
            "handoff.attempt": record.attempt,
            "handoff.input_hash": record.input_hash,
        }
        if step.branch is not None:
            attributes["handoff.branch"] = step.branch
        if record.agent is not None:
            attributes["handoff.agent"] = record.agent
        span = self.tracer.start_span(f"node {step.node}", context=parent, attributes=attributes)
        return OtelAttempt(self.tracer, span, step)


class OtelAttempt:
    """One attempt's span, current (for OpenTelemetry and for the tool boundary) until it ends."""

    def __init__(self, tracer: Tracer, span: Span, step: StepInfo) -> None:
        self.tracer = tracer
        self.span = span
        self.step = step
        self.context = trace.set_span_in_context(span)
        self._otel_token = otel_context.attach(self.context)
        self._token = TRACED_ATTEMPT.set(self)

    def tool(self, receipt: ToolReceipt, kind: str | None) -> None:
        """The call's span, timed by its receipt (it ended just now)."""
        ended = time.time_ns()
        began = ended - int((receipt.duration_ms or 0) * 1_000_000)
        outcome = receipt.error.code if receipt.error else "ok"
        span = self.tracer.start_span(
            f"execute_tool {receipt.tool}",
            context=self.context,
            kind=SpanKind.INTERNAL,
            start_time=began,
            attributes={
                THREAD: self.step.thread_id,
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": receipt.tool,
                "gen_ai.tool.call.id": receipt.call_id,
                "handoff.tool.kind": kind or "undeclared",
                "handoff.tool.outcome": outcome,
                "handoff.tool.cost": receipt.cost,
            },
        )
        if receipt.error is not None:
            span.set_status(Status(StatusCode.ERROR, receipt.error.code))
        span.end(end_time=ended)

    def model(self, model: str) -> OtelModelCall:
        """A chat model call's span (GenAI conventions: operation, model, token usage)."""
        span = self.tracer.start_span(
            f"chat {model}",
            context=self.context,
            kind=SpanKind.CLIENT,
            attributes={
                THREAD: self.step.thread_id,
                "handoff.node": self.step.node,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
            },
        )
        return OtelModelCall(span)

    def ended(self, record: NodeRun) -> None:
        """The attempt's outcome on its span, which ends; the context is as before it."""
        self.span.set_attribute("handoff.status", record.status)
        self.span.set_attribute("handoff.reused", record.reused)
        self.span.set_attribute("handoff.tokens", record.usage.tokens)
        self.span.set_attribute("handoff.tool_calls", record.usage.tool_calls)
        if record.error is not None:
            self.span.set_attribute("handoff.error.kind", record.error.kind)
            self.span.set_status(Status(StatusCode.ERROR, record.error.detail[:200]))
        self.span.end()
        TRACED_ATTEMPT.reset(self._token)
        otel_context.detach(self._otel_token)


class OtelModelCall:
    """A model call's span, ended by the reply or the error."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def answered(self, input_tokens: int | None, output_tokens: int | None) -> None:
        """The reply's token usage, as the GenAI conventions name it."""
        if input_tokens is not None:
            self.span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        if output_tokens is not None:
            self.span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
        self.span.end()

    def failed(self, error: BaseException) -> None:
        """The call raised: its type, as the conventions' ``error.type``."""
        self.span.record_exception(error)
        self.span.set_attribute("error.type", type(error).__qualname__)
        self.span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
        self.span.end()
