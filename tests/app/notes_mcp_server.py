"""A small MCP server, written with the ``mcp`` SDK, for the MCP tool tests.

Over stdio by default; ``http PORT`` serves streamable HTTP on 127.0.0.1:PORT (``/mcp``).

``lookup`` answers a term, ``long_note`` answers more than the boundary keeps inline,
``refuse`` answers an error, ``vanish`` ends the server's process in the middle of the
call, as a crash would.
"""

from __future__ import annotations

import os
import sys

from mcp.server.fastmcp import FastMCP

HTTP = len(sys.argv) == 3 and sys.argv[1] == "http"
server = FastMCP("notes", host="127.0.0.1", port=int(sys.argv[2]) if HTTP else 8000)


@server.tool()
def lookup(term: str, limit: int = 3) -> str:
    """What the notes say about a term."""
    return f"notes on {term}: the decree is written three times (limit {limit})"


@server.tool()
def long_note(words: int) -> str:
    """A note of ``words`` words."""
    return " ".join(["papyrus"] * words)


@server.tool()
def refuse(term: str) -> str:
    """Always fails, as a tool that cannot answer does."""
    raise ValueError(f"no notes about {term}")


@server.tool()
def vanish() -> str:
    """The server's process ends before it answers."""
    os._exit(3)


if __name__ == "__main__":
    server.run("streamable-http" if HTTP else "stdio")
