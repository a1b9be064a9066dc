"""How a tool call is bounded and described: its timeout, its errors, its receipt's summary.

The toolbox (``graphs.tools.toolbox``) decides whether a call may run; these say how long
it may run, how a refusal reads (no input values in it), and what of its input a receipt
may show (never a field the tool declares sensitive).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from contracts import ToolError, ToolErrorCode
from graphs.tools.declare import ToolEnv, ToolFn, ToolSpec

TOOL_WORKERS = 64
"""Threads bounded tool calls share: a call past its timeout keeps its thread until it
returns, and the others run on the rest (a thread per call cost more than the call)."""


@functools.cache
def tool_threads() -> concurrent.futures.ThreadPoolExecutor:
    """The threads bounded tool calls run on, made at the first such call."""
    return concurrent.futures.ThreadPoolExecutor(TOOL_WORKERS, thread_name_prefix="tool")


def within(spec: ToolSpec, code: ToolFn, valid: BaseModel, env: ToolEnv) -> BaseModel:
    """The code's output; past the timeout, TimeoutError (the late result is dropped)."""
    if spec.timeout_seconds is None:
        return code(valid, env)
    context = contextvars.copy_context()  # fault injection knows the node by these
    call = tool_threads().submit(context.run, code, valid, env)
    try:
        return call.result(timeout=spec.timeout_seconds)
    finally:
        call.cancel()  # a call still queued when its time is up never starts


def tool_error(code: ToolErrorCode, message: str, problem_field: str | None = None) -> ToolError:
    """The error a caller gets: retryable exactly when its code says so."""
    return ToolError(
        code=code, message=message[:2000], retryable=code == "retryable", field=problem_field
    )


def first_problem(error: ValidationError) -> tuple[str, str]:
    """The message (every problem, no input values) and the field of the first problem."""
    problems = error.errors(include_input=False, include_url=False)
    where = [".".join(str(part) for part in problem["loc"]) or "(input)" for problem in problems]
    pairs = zip(where, problems, strict=True)
    message = "; ".join(f"{at}: {problem['msg']}" for at, problem in pairs)
    return f"invalid arguments: {message}", where[0][:200]


def summary_of(spec: ToolSpec, args: BaseModel | Mapping[str, Any]) -> str:
    """The receipt's input summary; sensitive fields never appear in it."""
    if isinstance(args, BaseModel) and spec.summary is not None:
        return spec.summary(args)
    values = args.model_dump(mode="json") if isinstance(args, BaseModel) else dict(args)
    kept = {key: value for key, value in values.items() if key not in spec.sensitive}
    return json.dumps(kept, sort_keys=True, default=str)[:500]
