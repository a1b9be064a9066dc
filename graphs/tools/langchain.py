"""A LangChain tool (``BaseTool``, ``@tool``) as a declared tool, without rewriting it.

Its name and argument schema become the declaration's; what it returns becomes the
``output`` contract given, or ``ToolText``. The bounds (kind, timeout, rate, trimming,
sensitive fields, error meanings) are the declaration's, as for any tool.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel

from contracts import ToolText
from graphs.tools.declare import ToolEnv, ToolSpec


def from_langchain(
    tool: BaseTool, *, output: type[BaseModel] | None = None, **bounds: Any
) -> ToolSpec:
    """The declaration of ``tool``; ``bounds`` are ToolSpec's (kind, timeout_seconds, …)."""
    schema = tool.get_input_schema()
    if not issubclass(schema, BaseModel):  # a pydantic.v1 schema: no v2 validation to run
        raise TypeError(f"tool {tool.name!r}: its argument schema is not a pydantic v2 model")

    def run(args: BaseModel, env: ToolEnv) -> BaseModel:
        value = tool.invoke(args.model_dump())
        if output is not None:
            return output.model_validate(value)
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return ToolText(content=text)

    return ToolSpec(name=tool.name, input=schema, output=output or ToolText, run=run, **bounds)
