"""A tool, declared once: its contracts, whether it writes, and the bounds it runs within.

The declaration is what the runner enforces at the boundary (``graphs.tools.toolbox``) and
what a handoff tells the next agent (``allowed_tools``). The code that does the work is
the declaration's own (``run``, e.g. a LangChain tool's) or comes from the agent of the
node that calls it (``ToolProvider``), the way the app supplies a node's agent: the
corpus read needs the agent's corpus policy, which the graph does not know.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from contracts import ToolErrorCode
from graphs.ports import ArtifactStore, StepInfo

ToolKind = Literal["read", "write"]
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclass(frozen=True)
class ToolEnv:
    """What a tool's code gets besides its arguments: where the call runs, its services."""

    store: ArtifactStore
    step: StepInfo
    clock: Callable[[], datetime]


ToolFn = Callable[[Any, ToolEnv], BaseModel]
"""A tool's code: its validated input contract and the env in, its output contract out."""


@runtime_checkable
class ToolProvider(Protocol):
    """An agent that brings the code of tools its node declares without code of their own."""

    def tool(self, name: str) -> ToolFn | None:
        """The code of the tool ``name``, or None when this agent has none."""
        ...


@dataclass(frozen=True)
class ToolSpec:
    """A tool as declared; everything about a call but its code is decided here."""

    name: str
    input: type[BaseModel]
    output: type[BaseModel]
    kind: ToolKind = "read"
    """A write tool changes something outside the run: it runs only once a person confirmed
    the call, and at most once per call id (``graphs.tools.writes``)."""
    timeout_seconds: float | None = 30.0
    """A call still running after this is answered ``retryable`` and its result dropped
    (the call runs in a worker thread). None: it runs in the node's own thread, so what it
    stores joins the node's one fsync; only for tools bounded otherwise."""
    max_calls: int | None = None
    """Calls allowed per attempt of a node (the rate limit); more are ``budget_exhausted``."""
    trim_bytes: int | None = None
    """An output whose JSON is larger goes to the artifact store; the caller gets its ref."""
    sensitive: tuple[str, ...] = ()
    """Input fields never copied into a receipt (or an error message)."""
    errors: Mapping[type[Exception], ToolErrorCode] = field(default_factory=dict)
    """What the code's exceptions mean to the caller; any other exception is a bug and
    stops the attempt."""
    summary: Callable[[Any], str] | None = None
    """The receipt's input summary from the validated input (default: its JSON without
    the sensitive fields)."""
    digest: Callable[[Any], str] | None = None
    """The receipt's output hash (default: sha256 of the output's JSON)."""
    run: ToolFn | None = None
    """The tool's own code; None: the calling node's agent provides it (ToolProvider)."""

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise TypeError(f"tool {self.name!r}: a name is lower_snake_case, up to 64 chars")
        unknown = [name for name in self.sensitive if name not in self.input.model_fields]
        if unknown:
            raise TypeError(
                f"tool {self.name!r}: sensitive fields {unknown} are not fields of "
                f"{self.input.__name__}; it has {sorted(self.input.model_fields)}"
            )
        if self.kind == "write" and self.timeout_seconds is not None:
            raise TypeError(
                f"tool {self.name!r} writes: give it timeout_seconds=None (it runs in the "
                "node's thread), since a write cut short by a timeout could still land "
                "after its caller was told it failed"
            )
        if self.timeout_seconds is not None and self.timeout_seconds <= 0:
            raise TypeError(f"tool {self.name!r}: timeout_seconds must be positive or None")
        if self.max_calls is not None and self.max_calls < 1:
            raise TypeError(f"tool {self.name!r}: max_calls must be at least 1 or None")
