"""Fault injection for crash and retry tests. Inert unless ``HANDOFF_FAULT`` is set.

``HANDOFF_FAULT`` holds comma-separated rules:

* ``kill:<node>:<point>`` — SIGKILL this process when ``<node>`` reaches ``<point>``; a
  branch node's task also by key: ``kill:research[q-2]:before_return`` kills only there.
  Points: ``start`` (before the node does anything), ``after_artifact`` (inside the node,
  once it has written an artifact: the first it writes), ``before_write`` (a confirmed
  write tool call is about to run: it has no record yet), ``after_write`` (it ran, and is
  not recorded yet), ``before_return`` (after its attempt was recorded as done, before
  LangGraph saw the result).
* ``transient:<node>:<count>`` — raise a TransientError at the start of the first
  ``<count>`` attempts of ``<node>`` in this process (to exercise retries with backoff).
* ``wait:<node>:<file>`` — at the start of every attempt of ``<node>``, wait until
  ``<file>`` exists (at most GATE_SECONDS), so a race test can hold a run inside a node
  while a second writer tries the same thread, however slowly either process starts.

This module reads the rules; ``app.faults.points`` wraps a run's services so that they
call the plan at each point, and only a run with rules gets the wrapped services.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from graphs.declare import NodeSpec
from graphs.errors import TransientError, UsageError

GATE_SECONDS = 120.0
"""Longest a ``wait`` rule holds a node: a test that never opens the gate still ends."""
KILL_POINTS = ("start", "after_artifact", "before_write", "after_write", "before_return")
"""Where a kill rule may act; ``attempt`` is where transient faults are raised."""


class InvalidFaultSpec(UsageError):
    """A HANDOFF_FAULT rule that would not parse, or never fire; refusing beats doing nothing."""


@dataclass
class FaultPlan:
    """Parsed rules; called with every point a node reaches (``<node>:<point>``)."""

    kills: set[str] = field(default_factory=set)
    transients: dict[str, int] = field(default_factory=dict)
    gates: dict[str, Path] = field(default_factory=dict)
    seen: Counter[str] = field(default_factory=Counter)
    kill: Callable[[], None] = field(default=lambda: os.kill(os.getpid(), signal.SIGKILL))

    def __call__(self, point: str) -> None:
        """Act on the named point (``<node>:<point>``) if a rule names it."""
        if point in self.kills:
            self.kill()
        node, _, where = point.partition(":")
        if where == "attempt" and node in self.gates:
            deadline = time.monotonic() + GATE_SECONDS
            while not self.gates[node].exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        if where == "attempt" and node in self.transients:
            self.seen[node] += 1
            if self.seen[node] <= self.transients[node]:
                raise TransientError(
                    f"injected transient fault {self.seen[node]} of {self.transients[node]} "
                    f"at {point}"
                )


def parse_faults(spec: str | None, nodes: Iterable[NodeSpec] | None) -> FaultPlan | None:
    """The plan for a HANDOFF_FAULT value; None when unset or empty.

    Each rule is checked against the graph's declared ``nodes`` (None: syntax only): a rule
    naming an unknown node, or a point its node never reaches, would inject nothing, so it
    is refused.
    """
    if not spec or not spec.strip():
        return None
    reachable = None if nodes is None else {node.name: node.fault_points() for node in nodes}
    plan = FaultPlan()
    for rule in (part.strip() for part in spec.split(",") if part.strip()):
        kind, _, rest = rule.partition(":")
        node, _, arg = rest.partition(":")
        if kind == "kill" and node and arg in KILL_POINTS:
            _check_reached(rule, node, arg, reachable)
            plan.kills.add(f"{node}:{arg}")
        elif kind == "transient" and node and arg.isdigit():
            _check_reached(rule, node, "attempt", reachable)
            plan.transients[node] = int(arg)
        elif kind == "wait" and node and arg:
            _check_reached(rule, node, "attempt", reachable)
            plan.gates[node] = Path(arg)
        else:
            raise InvalidFaultSpec(
                f"invalid HANDOFF_FAULT rule {rule!r}; expected kill:<node>:<point> with point "
                f"in {', '.join(KILL_POINTS)}, transient:<node>:<count>, or "
                "wait:<node>:<file>"
            )
    return plan


def _check_reached(
    rule: str, node: str, point: str, reachable: dict[str, tuple[str, ...]] | None
) -> None:
    if reachable is None:
        return
    node = node.partition("[")[0]  # a branch task's key: research[q-2]
    if node not in reachable:
        raise InvalidFaultSpec(
            f"HANDOFF_FAULT rule {rule!r} names no node; nodes: {', '.join(reachable)}"
        )
    if point not in reachable[node]:
        raise InvalidFaultSpec(
            f"HANDOFF_FAULT rule {rule!r}: node {node!r} never reaches {point!r}; "
            f"its points: {', '.join(reachable[node])}"
        )
