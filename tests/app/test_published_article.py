"""A corpus holding unsafe links and escape sequences: the published article holds neither.

The facts still quote the source byte for byte (escapes included), the citations still
verify against the snapshot, and the CLI writes no escape byte while showing the article.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from app.settings import BUNDLED_CORPUS
from app.workflow import Workflow
from contracts import ResearchBundle, TaskState
from graphs.citations import quote_problem
from graphs.markdown import cited_claims
from tests.app.test_handoff_routes import stop_before
from tests.backends import sqlite_settings
from tests.cli import handoff
from tests.conftest import passes, write_corpus
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


def test_a_persons_edited_draft_is_reviewed_and_published_safe_with_its_citations(
    workflow: Workflow,
) -> None:
    stop_before(workflow, "t-edit", "finalize", BUNDLED_CORPUS, "reevaluate")
    lines = workflow.artifact("t-edit", "draft").decode().split("\n")
    cited = next(n for n, line in enumerate(lines) if "[claim-" in line and line[0] != "#")
    first, second, *rest = lines[cited].split(" ")
    lines[cited] = " ".join(
        [first, f"[{second}](javascript:alert(1))\x1b]0;pwned\x07\x1b[2J\x9b31m", "<b>x</b>", *rest]
    )
    stored = workflow.put_artifact("t-edit", "draft", "\n".join(lines).encode())
    outcome = workflow.resume("t-edit")
    assert outcome.state == TaskState.COMPLETED and outcome.result_status == "completed"
    nodes = [run.node_id for run in workflow.history("t-edit") if run.status == "succeeded"]
    path = ("edit:draft by human", "finalize", "reviewer", "finalize")
    assert passes(nodes[nodes.index(path[0]) :], *path) == [*path], (
        "the Reviewer approved the edit as stored, and finalize proved that approval"
    )
    article = workflow.artifact("t-edit", "article")
    assert article == workflow.context.store.get(stored), "what was reviewed is published"
    assert_safe(article)
    assert f"{first} {second} \\<b>x\\</b> " in article.decode(), "raw HTML shows as text"
    assert cited_claims(article.decode()) == workflow.state("t-edit")["draft"].cited_claim_ids


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
