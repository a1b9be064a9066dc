"""Whether a run is traced, decided by the OpenTelemetry SDK's own environment variables.

Tracing is on when ``OTEL_TRACES_EXPORTER`` names an exporter (``console``, ``otlp``…) and
``OTEL_SDK_DISABLED`` is not true; everything else (service name, endpoint, sampler, batch
sizes) the SDK reads itself (``app/otel.py``). Off, the SDK is never imported and the run
context keeps the shared no-op trace, so an untraced run pays one attribute read per hook.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from graphs.errors import UsageError
from graphs.trace import TRACED_ATTEMPT, UNTRACED, RunTrace

INSTALL = 'pip install -e ".[otel]"'
"""The extra that brings the SDK and the OTLP exporter (docs/operations.md)."""


class TracingConfigError(UsageError):
    """``OTEL_TRACES_EXPORTER`` names an exporter that cannot be set up: nothing is run."""


def tracing_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for trace export (the SDK's default is none here)."""
    env = os.environ if environ is None else environ
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    disabled = env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    return bool(exporters) and exporters != "none" and not disabled


def run_trace() -> RunTrace:
    """The trace a run context gets: OpenTelemetry's if configured, else the no-op one."""
    if not tracing_configured():
        return UNTRACED
    asked = os.environ["OTEL_TRACES_EXPORTER"]
    try:
        from app.otel import OtelRunTrace, tracer_provider  # the SDK only when tracing is on
    except ImportError as error:
        raise TracingConfigError(
            f"OTEL_TRACES_EXPORTER={asked} needs the OpenTelemetry SDK ({error.name} is not "
            f"installed): {INSTALL}"
        ) from error
    try:
        provider = tracer_provider()
    except (RuntimeError, ImportError) as error:  # how the SDK says an exporter is missing
        raise TracingConfigError(
            f"OTEL_TRACES_EXPORTER={asked}: {error}; the otel extra ({INSTALL}) brings "
            "console and otlp_proto_http (otlp with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)"
        ) from error
    return OtelRunTrace(provider)


class ModelCall(Protocol):
    """The span of one chat model call: closed with the reply, or the error."""

    def answered(self, input_tokens: int | None, output_tokens: int | None) -> None:
        """The model replied, with the tokens its usage metadata reports (None: not given)."""
        ...

    def failed(self, error: BaseException) -> None:
        """The call raised."""
        ...


@runtime_checkable
class ModelTraced(Protocol):
    """An attempt trace that also records model calls (the OpenTelemetry one)."""

    def model(self, model: str) -> ModelCall:
        """A chat model call began."""
        ...


def model_call(model: str) -> ModelCall | None:
    """The span of a model call about to start, under the attempt traced; None if untraced."""
    attempt = TRACED_ATTEMPT.get()
    if attempt is None or not isinstance(attempt, ModelTraced):
        return None
    return attempt.model(model)
