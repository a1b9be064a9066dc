"""The graph as ``langgraph dev`` loads it: compiled without a checkpointer.

The server owns persistence, and it cannot pass Python services as run context, so the
services come from settings through the graph's default context factory.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from app.services import build_context
from app.settings import Settings
from graphs import RunContext, build_graph


@cache
def _default_context() -> RunContext:
    return build_context(Settings())


def make_graph(config: RunnableConfig) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Graph factory named in langgraph.json; nothing is opened until a node runs."""
    return build_graph(default_context=_default_context).compile(name="handoff")
