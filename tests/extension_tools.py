"""A small graph whose first node calls tools: what the tool boundary does with each call.

``probe`` declares four tools and makes the calls its thread's plan lists (``PLANS``, by
thread id), recording what each call answered; a retryable error on its first attempt
makes it raise ``TransientError``, so the runner tries it again. ``inspect`` declares a
tool and what its work must meet, so the handoff ``probe`` makes names both.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.tools import tool
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from contracts import TaskSpec, VersionedContract
from graphs import NodeCall, NodeResult, Wiring, node
from graphs.errors import TransientError
from graphs.routing import STOP
from graphs.tools import ToolEnv, ToolSpec
from graphs.tools.langchain import from_langchain

PLANS: dict[str, list[tuple[str, dict[str, Any]]]] = {}
"""The calls ``probe`` makes in each thread (a test sets its thread's before the run)."""
SECRET = "hunter2-do-not-copy"


class EchoInput(BaseModel):
    """What ``echo`` repeats."""

    text: str = Field(max_length=50)
    times: int = Field(default=1, ge=1, le=10)


class EchoOutput(BaseModel):
    """The text, repeated."""

    text: str


def _echo(args: EchoInput, env: ToolEnv) -> EchoOutput:
    return EchoOutput(text=args.text * args.times)


def _slow_on_first_attempt(args: EchoInput, env: ToolEnv) -> EchoOutput:
    if env.step.attempt == 1:
        time.sleep(0.5)
    return EchoOutput(text=args.text)


ECHO = ToolSpec("echo", EchoInput, EchoOutput, run=_echo, trim_bytes=200)
SLOW = ToolSpec("slow", EchoInput, EchoOutput, run=_slow_on_first_attempt, timeout_seconds=0.1)
LIMITED = ToolSpec("limited", EchoInput, EchoOutput, run=_echo, max_calls=2)


@tool
def lookup(query: str, api_key: str) -> str:
    """Look a query up (the key authorises it)."""
    return f"found {query}"


LOOKUP = from_langchain(lookup, sensitive=("api_key",))


class ToolProbe(VersionedContract):
    """What each of a node's tool calls answered: ok, or the error's code."""

    kind: Literal["tool_probe"] = Field(default="tool_probe", description="Discriminator.")
    answers: list[str] = Field(description="Per call: 'ok' or the tool error's code.")
    fields: list[str | None] = Field(description="Per call: the field an error names.")

    EXAMPLES = [{"answers": ["ok", "fix_arguments"], "fields": [None, "text"]}]


class ProbeInput(TypedDict):
    """The task."""

    task: TaskSpec


class ProbeOutput(TypedDict, total=False):
    """What the calls answered."""

    tool_probe: ToolProbe | None


@node("probe", reads=ProbeInput, writes=ProbeOutput, tools=(ECHO, SLOW, LIMITED, LOOKUP))
def probe(call: NodeCall) -> NodeResult:
    """Make the thread's planned calls; a retryable error makes the attempt transient."""
    answers: list[str] = []
    fields: list[str | None] = []
    for name, args in PLANS[call.step.thread_id]:
        answer = call.tools.call(name, args)
        if answer.error is not None and answer.error.retryable and call.step.attempt == 1:
            raise TransientError(answer.error.message)
        answers.append(answer.error.code if answer.error else "ok")
        fields.append(answer.error.field if answer.error else None)
    return NodeResult({"tool_probe": ToolProbe(answers=answers, fields=fields)})


class InspectInput(ProbeInput):
    """The task, and what the probe's calls answered."""

    tool_probe: ToolProbe | None


@node(
    "inspect",
    reads=InspectInput,
    writes=ProbeOutput,
    tools=(ECHO,),
    done_when=("Every answer of the probe is accounted for.",),
)
def inspect(call: NodeCall) -> NodeResult:
    """Nothing to do: it is here to be handed over to."""
    return NodeResult({})


def route_after_probe(state: Mapping[str, Any]) -> Literal["inspect", "__end__"]:
    """On to ``inspect`` unless the run stopped."""
    return STOP if state.get("outcome") is not None else "inspect"


def route_after_inspect(state: Mapping[str, Any]) -> Literal["__end__"]:
    """The end."""
    return STOP


WIRING_WITH_TOOLS: Wiring = ((probe, route_after_probe), (inspect, route_after_inspect))
