"""Where a run starts: the wiring's first node, or the node the run's input asks for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast, get_type_hints

from graphs.declare import NodeSpec
from graphs.errors import WiringError
from graphs.fan_out import side_by_side, together
from graphs.node_runner import Router
from graphs.state import WorkflowInput


def entry_router(wiring: Sequence[tuple[NodeSpec, Router]]) -> Router:
    """Where a run starts: the wiring's first node, or the one its input asks for.

    That is the node whose ``starts_on`` channel the input carries (a revision starts at
    ``revise_task``). A ``starts_on`` channel the workflow input cannot carry would never
    start a run: the build refuses it. A first node that is a branch node starts the other
    branch nodes its join waits for beside it (``fan_out.together``).
    """
    if not wiring:
        raise WiringError("the wiring has no node: a run would have nowhere to start")
    first = wiring[0][0].name
    entries = [(spec.starts_on, spec.name) for spec, _ in wiring if spec.starts_on]
    accepted = get_type_hints(WorkflowInput)
    for channel, name in entries:
        if channel not in accepted:
            raise WiringError(
                f"node {name!r} starts on {channel!r}, which the workflow input "
                f"({sorted(accepted)}) cannot carry: add it to graphs.state.WorkflowInput"
            )

    def start(state: Any) -> str:
        for channel, name in entries:
            if state.get(channel) is not None:
                return name
        return first

    returns = cast(Any, Literal)[(first, *(name for _, name in entries))]
    start.__annotations__ = {"state": Any, "return": returns}
    return together(start, side_by_side(spec for spec, _ in wiring))
