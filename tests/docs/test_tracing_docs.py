"""What tracing costs without network is said where people look for it, with the way out."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_docs_say_what_tracing_costs_offline_and_how_to_keep_it_off() -> None:
    text = " ".join((ROOT / "docs" / "server.md").read_text(encoding="utf-8").split())
    assert re.search(r"waits at exit for its traces to upload", text)
    assert "about 10 s" in text
    assert "leave `LANGSMITH_TRACING` unset or `false`" in text
    dotenv = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert "# LANGSMITH_TRACING=false" in dotenv, "the example keeps tracing off"
