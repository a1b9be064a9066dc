"""Tools behind a boundary: declared once, declared per node, checked on every call."""

from graphs.tools.corpus import READ_SOURCE, SEARCH_CORPUS
from graphs.tools.declare import ToolEnv, ToolFn, ToolKind, ToolProvider, ToolSpec
from graphs.tools.toolbox import Toolbox, ToolResult

__all__ = [
    "READ_SOURCE",
    "SEARCH_CORPUS",
    "ToolEnv",
    "ToolFn",
    "ToolKind",
    "ToolProvider",
    "ToolResult",
    "ToolSpec",
    "Toolbox",
]
