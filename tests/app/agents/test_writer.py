"""The writer shows a fact's code example right after its sentence, and answers "what is"
with the sentence that says what its subject is."""

from __future__ import annotations

from pathlib import Path

from app.agents.article_text import with_examples
from graphs.markdown import word_count
from tests.app.agents.howto import CODE, research_and_write


def test_the_example_follows_its_sentence_as_a_fenced_block_naming_its_claim(
    tmp_path: Path,
) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    sentence = (
        "To start a kiln job on a folder of photos, run the kiln start command with the "
        f"recipe name [{fact.id}]:"
    )
    fence = f"```sh [{fact.id}]\n{CODE}\n```"
    assert f"{sentence}\n\n{fence}\n\n## Running kiln jobs" in written.body, "the answer opens it"
    assert written.draft.cited_claim_ids.count(fact.id) == 1


def test_a_sentence_is_never_written_without_the_example_its_words_must_leave_room_for(
    tmp_path: Path,
) -> None:
    roomy = research_and_write(tmp_path / "roomy", max_words=60)
    assert roomy.introducing.id in roomy.draft.cited_claim_ids
    assert word_count(roomy.body) <= 60
    tight = research_and_write(tmp_path / "tight", max_words=20)  # the sentence alone fits
    assert tight.draft.cited_claim_ids
    assert tight.introducing.id not in tight.draft.cited_claim_ids
    assert "```" not in tight.body


def test_a_questions_answer_shown_with_its_example_goes_before_shorter_prose(
    tmp_path: Path,
) -> None:
    written = research_and_write(tmp_path, max_words=30)  # one answer fits, of three
    assert {fact.confidence for fact in written.bundle.facts} == {"medium"}
    assert written.draft.cited_claim_ids == [written.introducing.id]


def test_a_models_sentence_gets_its_example_after_it_and_the_rest_of_its_paragraph_after_that(
    tmp_path: Path,
) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    text = (
        f"# Kiln\n\nRun the start command [{fact.id}]: it works [claim-1003]. "
        "The end [claim-1001].\n"
    )
    shown = with_examples(text, written.bundle)
    assert shown == (
        f"# Kiln\n\nRun the start command [{fact.id}]: it works [claim-1003].\n\n"
        f"```sh [{fact.id}]\n{CODE}\n```\n\nThe end [claim-1001].\n"
    )
    assert with_examples(shown, written.bundle) == shown


FERRULE = """\
# ferrule

The command ferrule worker starts a worker that keeps running until it is stopped.
A ferrule worker is a long-running process that claims one task at a time from the queue.
"""


def _cited(written_text: str, sentence_start: str, tmp_path: Path, question: str) -> None:
    written = research_and_write(tmp_path, max_words=20, text=written_text, question=question)
    [cited] = written.draft.cited_claim_ids  # one sentence fits
    answers = [fact for fact in written.bundle.facts if fact.id == cited]
    assert len(written.bundle.facts) == 2, "both sentences address the question"
    assert answers[0].statement.startswith(sentence_start), written.body


def test_asked_what_a_thing_does_the_writer_gives_the_sentence_that_says_what_it_is(
    tmp_path: Path,
) -> None:
    _cited(FERRULE, "A ferrule worker is", tmp_path, "Describe what a ferrule worker does")


def test_a_document_without_a_title_lends_no_file_name_as_a_heading(tmp_path: Path) -> None:
    untitled = (
        "A ferrule worker is a long-running process that claims one task at a time.\n\n"
        "## Leases\n\nA worker renews the lease of its task every ten seconds.\n"
    )
    written = research_and_write(
        tmp_path, text=untitled, question="Describe what a ferrule worker does and its leases"
    )
    headings = [line for line in written.body.splitlines() if line.startswith("## ")]
    assert "## kiln" not in headings, "kiln.md's file name is no topic"
    assert written.body.split("\n## ")[0].count("[claim-") >= 1, "the untitled text opens it"
