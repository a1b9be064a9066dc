"""The writer shows a fact's code example right after its sentence, answers "what is" with
the sentence that says what its subject is, gives each sub-question its section, and orders
paragraphs so each follows from the last."""

from __future__ import annotations

from pathlib import Path

from app.agents.article_text import with_examples
from app.workflow import Workflow
from graphs.markdown import word_count
from tests.app.agents.howto import CODE, research_and_write
from tests.conftest import OBJECTIVE, write_corpus


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
    title, body = written.body.split("\n\n", 1)
    assert title.startswith("# ") and body.startswith(f"{sentence}\n\n{fence}\n\n"), "it opens"
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


def test_without_required_sections_each_sub_question_has_a_section_titled_by_it(
    workflow: Workflow,
) -> None:
    question = "What is the Rosetta Stone made of?"
    outcome = workflow.run(workflow.task(OBJECTIVE, questions=[question]), "t-parts")
    assert outcome.result_status == "completed"
    body = workflow.artifact("t-parts", "article").decode().split("\n## Sources")[0]
    headings = [line.removeprefix("## ") for line in body.splitlines() if line.startswith("## ")]
    assert headings == [question], "one section per sub-question, none per source"
    opening = body.split("\n## ")[0]
    assert "[claim-" in opening, "the objective's answer opens the article"


KESTREL = {
    "a-bucket.md": "# Buckets\n\nA kestrel bucket limits requests by holding tokens that each "
    "request spends.\n",
    "b-metrics.md": "# Metrics\n\nKestrel exports the bucket level and the rejected requests as "
    "gauges that dashboards plot over time.\n",
    "c-refill.md": "# Refill\n\nA kestrel bucket refills its tokens at a steady rate, so later "
    "requests can spend them again.\n",
}


def test_each_paragraph_follows_the_one_saying_most_in_common_with_it(
    tmp_path: Path, workflow: Workflow
) -> None:
    """The refill (tokens, spending) follows the opening's tokens spent, ahead of the
    metrics, which come earlier in reading order but share only the objective's terms."""
    corpus = write_corpus(tmp_path / "kestrel", KESTREL)
    task = workflow.task("Explain kestrel buckets", corpus=[str(corpus)])
    assert workflow.run(task, "t-order").result_status == "completed"
    body = workflow.artifact("t-order", "article").decode().split("\n## Sources")[0]
    paragraphs = [part for part in body.split("\n\n")[1:] if part.strip()]
    assert [part.split()[1] for part in paragraphs] == ["kestrel", "kestrel", "exports"]
    assert "limits requests" in paragraphs[0] and "refills" in paragraphs[1]


QUERN = {
    "quern.md": "# quern\n\nquern is a small log shipper that reads log files and sends their "
    "lines to a collector.\nquern reads its settings from quern.toml in the working "
    "directory.\n",
    "collector.md": "# Collectors\n\nA quern collector stores the log lines it is sent and "
    "reads no settings of its own.\n",
}


def test_what_the_objective_asks_its_subject_is_opens_the_article_not_a_sub_question(
    tmp_path: Path, workflow: Workflow
) -> None:
    """The definition names what the sub-question asks about too (quern reads), and would
    answer it as directly; it stays with the objective, which asked what quern is."""
    corpus = write_corpus(tmp_path / "quern", QUERN)
    question = "Where does quern read its settings from?"
    task = workflow.task("Summarise what quern is for", questions=[question], corpus=[str(corpus)])
    assert workflow.run(task, "t-defined").result_status == "completed"
    body = workflow.artifact("t-defined", "article").decode().split("\n## Sources")[0]
    opening, _, section = body.split("\n\n", 1)[1].partition(f"## {question}")
    assert opening.startswith("quern is a small log shipper"), body
    assert "quern.toml" in section, body


def test_a_sub_question_over_two_lines_is_titled_on_one(workflow: Workflow) -> None:
    question = "What is the Rosetta Stone\n   made of?"
    outcome = workflow.run(workflow.task(OBJECTIVE, questions=[question]), "t-lines")
    assert outcome.result_status == "completed" and outcome.review_rounds == 1
    body = workflow.artifact("t-lines", "article").decode()
    assert "\n## What is the Rosetta Stone made of?\n" in body
