"""A corpus holding unsafe links and escape sequences: the published article holds neither.

The facts still quote the source byte for byte (escapes included), the citations still
verify against the snapshot, and the CLI writes no escape byte while showing the article.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from app.workflow import Workflow
from contracts import ResearchBundle, TaskState
from graphs.citations import quote_problem
from graphs.markdown import cited_claims
from tests.backends import sqlite_settings
from tests.cli import handoff
from tests.conftest import write_corpus
from tests.safe_text import CONTROLS, destinations

HOSTILE_CORPUS = {
    "stone.md": (
        "# The Rosetta Stone \x1b[2J[stone](javascript:alert(1))\n\n"
        "French soldiers found the Rosetta Stone at Rashid in 1799, as "
        "[this page](javascript:alert(document.cookie)) tells.\n"
        "Champollion deciphered the hieroglyphs of the Rosetta Stone in 1822 "
        "\x1b]8;;http://evil\x07click\x1b]8;;\x07 here.\n"
    )
}
OBJECTIVE = "Explain how the Rosetta Stone was found and deciphered \x1b]0;pwned\x07 \x1b[2J"


def assert_safe(article: bytes) -> None:
    """No control character but newline and tab, and no link a reader may not follow."""
    text = article.decode("utf-8")
    assert not [char for char in text if char in CONTROLS], text
    assert all(url.startswith("https:") for url in destinations(text)), destinations(text)
    assert "javascript:" not in text and "evil" not in text, text


def test_a_workflow_publishes_hostile_corpus_sentences_safe_and_still_cited(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path / "corpus", HOSTILE_CORPUS)
    settings = sqlite_settings(tmp_path / "data").with_overrides(model="offline", fault=None)
    with Workflow(settings) as workflow:
        outcome = workflow.run(workflow.task(OBJECTIVE, corpus=[str(corpus)]), "t-hostile")
        assert outcome.state == TaskState.COMPLETED and outcome.result_status == "completed"
        article = workflow.artifact("t-hostile", "article")
        assert_safe(article)
        text = article.decode()
        assert "as this page tells [claim-" in text and "in 1822 click here [claim-" in text
        bundle: ResearchBundle = workflow.state("t-hostile")["research"]
        cited = cited_claims(text)
        assert len(cited) == 2
        for claim_id in cited:
            fact = bundle.fact(claim_id)
            assert fact is not None
            source = bundle.source(fact.source_id)
            assert source is not None
            snapshot = workflow.context.store.get(source.snapshot).decode()
            assert quote_problem(fact, source, snapshot) is None, "the citation verifies"
        quotes = " ".join(bundle.fact(claim_id).quote for claim_id in cited)  # type: ignore[union-attr]
        assert "(javascript:alert(document.cookie))" in quotes and "\x1b]8;;" in quotes, (
            "facts quote the source as it is"
        )


@pytest.mark.e2e
def test_run_show_prints_the_safe_article_and_no_escape_byte(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", HOSTILE_CORPUS)
    result = handoff(
        "run", OBJECTIVE, "--corpus", str(corpus), "--thread", "t-show", "--show",
        data_dir=tmp_path / "data",
        env={"HANDOFF_CORPUS_ROOTS": f'["{tmp_path}"]'},
    )  # fmt: skip
    assert result.returncode == ExitCode.COMPLETED, result.stderr
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout, result.stdout
    assert "\x1b" not in result.stderr, result.stderr
    assert "as this page tells [claim-" in result.stdout
    shown = handoff("show", "t-show", data_dir=tmp_path / "data")
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout.encode())
