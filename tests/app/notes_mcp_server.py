"""A small MCP server, written with the ``mcp`` SDK, for the MCP tool tests.

Over stdio by default; ``http PORT`` serves streamable HTTP on 127.0.0.1:PORT (``/mcp``).

``lookup`` answers a term, ``long_note`` answers more than the boundary keeps inline,
``save_article`` writes (a line in the file ``NOTES_LOG`` names), ``slow`` takes its time,
``refuse`` answers an error, ``vanish`` ends the server's process in the middle of the
call, as a crash would.
"""

from __future__ import annotations

import os
import sys
import time

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
def save_article(file_name: str, markdown: str, key: str) -> str:
    """Keep an article once per ``key``: a line in the file NOTES_LOG names (a write to count).

    A call sent again with a key already kept (after a crash between the write and its
    record) is answered without writing, as an idempotent API answers a repeated request.
    """
    path = os.environ["NOTES_LOG"]
    kept = open(path, encoding="utf-8").read().split() if os.path.exists(path) else []
    if key not in kept:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{file_name} {key} {len(markdown)}\n")
    return f"saved {file_name}"


@server.tool()
def slow(seconds: float) -> str:
    """Answers after ``seconds``."""
    time.sleep(seconds)
    return "late"


@server.tool()
def vanish() -> str:
    """The server's process ends before it answers."""
    os._exit(3)


if __name__ == "__main__":
    server.run("streamable-http" if HTTP else "stdio")
