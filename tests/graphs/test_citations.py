"""The one rule that proves a cited claim before review and before publishing."""

from __future__ import annotations

from pathlib import Path

from graphs.citations import quote_problem
from tests.app.agents.howto import research_and_write


def test_a_code_example_changed_from_the_source_is_refused_as_the_quote_is(
    tmp_path: Path,
) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    source = written.bundle.source(fact.source_id)
    assert source is not None and fact.example is not None
    snapshot = written.store.get(source.snapshot).decode()
    assert quote_problem(fact, source, snapshot) is None, "research's own example verifies"

    edited = fact.example.text.replace("thumbnails", "everything")
    forged = fact.model_copy(update={"example": fact.example.model_copy(update={"text": edited})})
    problem = quote_problem(forged, source, snapshot)
    assert problem is not None and f"code example of {fact.id}" in problem
