"""Where sentences end: not at e.g. or a decimal, at full-width stops, not inside example.com."""

from __future__ import annotations

from app.text.documents import read_document
from tests.app.text.documents.sample import assert_exact, plains, texts


def test_a_sentence_is_not_split_at_e_g_or_dr_or_a_decimal() -> None:
    cases = [
        ["Many scripts, e.g. demotic and hieratic, were written with a brush.", "They were fast."],
        ["The middle text, i.e. the demotic one, was the longest.", "It was read first."],
        ["Dr. Young compared the three texts.", "Mr. Bankes brought the obelisk."],
        ["A copy reached St. Petersburg in 1823.", "It arrived in spring."],
        ["The slab is 3.5 feet wide, and the catalogue is v1.2.3 now.", "It is broken."],
        ["The stone toured the U.S. and Canada in 1972.", "Crowds came."],
        ["Papyri, ostraca, stelae, etc. were all studied.", "Many survive."],
        ["He hesitated... then read the name aloud.", "It was Ptolemy."],
        ['He wrote, "The key is Coptic."', "Nobody believed him."],
    ]
    for sentences in cases:
        assert texts(read_document(" ".join(sentences))) == sentences


def test_chinese_sentences_split_at_full_width_stops() -> None:
    sentences = [
        "罗塞塔石碑是一块刻有三种文字的石碑。",
        "它于一七九九年在埃及被法国士兵发现！",
        "碑文用「圣书体」、「世俗体」和古希腊文写成。",
        "为什么古希腊文如此重要？",
        "学者们争论了二十年……直到商博良出现。",
        "杨格写道：「这些符号代表声音。」",
        "后来的研究证实了这一点",
    ]
    text = "# 罗塞塔石碑\n\n" + "".join(sentences[:3]) + "\n" + "".join(sentences[3:]) + "\n"
    document = read_document(text)

    assert texts(document) == sentences
    assert plains(document) == sentences
    assert document.title == "罗塞塔石碑"
    assert_exact(document)


def test_a_full_width_stop_ends_a_sentence_before_a_digit_or_a_latin_word() -> None:
    sentences = [
        "宣纸因当地唐代属于宣州而得名。",
        "2009年，宣纸传统制作技艺被列入名录。",
        "CSS 样式表也能这样写！",
        "「这是引文。」",
        "它后面是 3.5 厘米的纸。",
    ]
    document = read_document("# 宣纸\n\n" + "".join(sentences) + "\n")

    assert texts(document) == sentences
    assert_exact(document)


def test_a_stop_with_no_space_after_it_ends_no_sentence() -> None:
    text = "# T\n\nA task that raises `ferrule.Reject` fails at once. See example.com for more.\n"
    assert [s.text for s in read_document(text).sentences] == [
        "A task that raises `ferrule.Reject` fails at once.",
        "See example.com for more.",
    ]
