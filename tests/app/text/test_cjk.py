"""Chinese and Japanese corpora: citations before full-width stops, limits counted per character."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.agents.apparatus import without_apparatus
from app.text.documents import read_document
from app.text.primitives import cite, join_sentences, strip_citations, terms, word_count
from app.workflow import Workflow
from contracts import TaskState
from graphs.markdown import CITATION
from tests.conftest import write_corpus

CHINESE = {
    "长城.md": "# 长城\n\n"
    "长城是中国古代修建的军事防御工程。长城的修建始于春秋战国时期，秦始皇统一六国后把各段城墙连接起来。"
    "明朝重修了长城的大部分城墙，今天看到的砖石城墙多建于明朝！\n\n"
    "长城在一九八七年被列入世界遗产名录。"
    "很多人问：长城真的能从月球上看见吗？事实上，肉眼无法从月球上看见长城。\n",
    "丝绸之路.md": "# 丝绸之路\n\n"
    "丝绸之路是连接中国与地中海世界的古代商路。"
    "张骞出使西域以后，丝绸之路上的贸易逐渐繁荣。\n"
    "商人沿着丝绸之路运送丝绸、瓷器和香料。\n",
}
JAPANESE = {
    "富士山.md": "# 富士山\n\n"
    "富士山は日本で最も高い山で、標高は三七七六メートルです。"
    "富士山は活火山であり、最後の噴火は一七〇七年の宝永噴火でした。"
    "富士山は二〇一三年に世界文化遺産に登録されました！\n\n"
    "多くの登山者が夏に富士山の山頂を目指します。\n",
    "京都.md": "# 京都\n\n"
    "京都は千年以上にわたって日本の都でした。"
    "京都には多くの寺院と神社があり、清水寺はその代表です。\n",
}
FULL_STOP = re.compile(r"[。！？]")


def run_article(
    workflow: Workflow, folder: Path, objective: str, thread_id: str, **extra: object
) -> str:
    task = workflow.task(objective, corpus=[str(folder)], **extra)
    outcome = workflow.run(task, thread_id)
    assert outcome.state == TaskState.COMPLETED, outcome
    return workflow.artifact(thread_id, "article").decode()


def body_of(article: str) -> str:
    """The article's text: no headings, no Sources list."""
    text = without_apparatus(article)
    return "\n".join(line for line in text.splitlines() if not line.startswith("#"))


@pytest.mark.parametrize(
    ("documents", "objective", "expected"),
    [
        (CHINESE, "长城是什么时候修建的？", "长城"),
        (JAPANESE, "富士山について説明してください", "富士山"),
    ],
    ids=["chinese", "japanese"],
)
def test_a_cjk_article_cites_before_full_width_stops_and_every_sentence_cites(
    workflow: Workflow, tmp_path: Path, documents: dict[str, str], objective: str, expected: str
) -> None:
    folder = write_corpus(tmp_path / "corpus", documents)
    article = run_article(workflow, folder, objective, "t-cjk")
    assert article.startswith(f"# {objective.rstrip('？')}\n"), "the title drops the stop"
    body = body_of(article)
    assert expected in body, "a CJK objective retrieves the facts written in its language"
    assert CITATION.search(body)
    for marker in ("。.", "！.", "？.", ". [claim", "。 [claim", " [claim"):
        assert marker not in body, f"{marker!r} in {body!r}"
    for found in CITATION.finditer(body):
        after = body[found.end() : found.end() + 1]
        assert after == "" or FULL_STOP.fullmatch(after) or after == "[", body
    for sentence in read_document(body).sentences:
        assert CITATION.search(sentence.text), f"uncited sentence {sentence.text!r}"
        assert FULL_STOP.search(sentence.text[-1]), sentence.text


def test_the_word_limit_counts_cjk_characters_and_is_honoured(
    workflow: Workflow, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "corpus", CHINESE)
    unlimited = body_of(run_article(workflow, folder, "长城和丝绸之路的历史", "t-all"))
    limit = 40
    assert word_count(unlimited) > limit, "the limit must actually cut the article"
    limited = body_of(
        run_article(
            workflow, folder, "长城和丝绸之路的历史", "t-short", constraints={"max_words": limit}
        )
    )
    assert 0 < word_count(limited) <= limit
    assert CITATION.search(limited)


def sentences(text: str) -> list[str]:
    return [sentence.text for sentence in read_document(text).sentences]


def test_full_width_stops_end_sentences_without_a_following_space() -> None:
    found = sentences("长城很长。它在中国！真的吗？是的")
    assert found == ["长城很长。", "它在中国！", "真的吗？", "是的"]
    quoted = sentences("彼は「はい。」と言った。次の文。")
    assert quoted == ["彼は「はい。」", "と言った。", "次の文。"]


def test_english_sentences_split_as_before() -> None:
    found = sentences("It is 3.5 km long. Then it rained! Done")
    assert found == ["It is 3.5 km long.", "Then it rained!", "Done"]


def test_a_citation_sits_before_the_full_width_stop_and_after_the_latin_one() -> None:
    assert cite("长城很长。", "claim-1") == "长城很长[claim-1]。"
    assert cite("本当ですか？", "claim-2") == "本当ですか[claim-2]？"
    assert cite("长城很长", "claim-3") == "长城很长[claim-3]。"
    assert cite("It rained.", "claim-4") == "It rained [claim-4]."
    assert cite("It rained", "claim-5") == "It rained [claim-5]."
    assert cite('He said "yes."', "claim-6") == 'He said "yes." [claim-6].'


def test_cjk_sentences_join_without_spaces_and_line_breaks_vanish() -> None:
    assert join_sentences(["甲[claim-1]。", "乙[claim-2]。"]) == "甲[claim-1]。乙[claim-2]。"
    assert join_sentences(["A [claim-1].", "B [claim-2]."]) == "A [claim-1]. B [claim-2]."
    assert strip_citations("长城\n很长[claim-1]。") == "长城很长。"
    assert strip_citations("It [claim-1] rained [claim-2].") == "It rained."


def test_cjk_words_are_characters_and_terms_are_character_pairs() -> None:
    assert word_count("长城很长。It is long.") == 4 + 3
    assert word_count("富士山です") == 5
    assert terms("长城很长") == ["长城", "城很", "很长"]
    assert "长城" in terms("长城是中国古代修建的军事防御工程")
    assert terms("The Great Wall 长城") == ["great", "wall", "长城"]
