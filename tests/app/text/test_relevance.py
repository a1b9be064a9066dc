"""The answerability rule: what a question's key terms are, and when a sentence addresses it."""

from __future__ import annotations

from app.text.relevance import Rarity, keys, on_topic, query_keys


def test_stems_meet_across_word_forms() -> None:
    assert keys("decipherment") == keys("deciphering") == keys("deciphered")
    assert keys("honeybees") == keys("honeybee")


def test_an_opening_imperative_and_an_aspect_word_are_not_key_terms() -> None:
    assert query_keys("Document how ferrule handles tasks that fail") == keys(
        "ferrule handles tasks fail"
    )
    assert query_keys("Describe the life of Champollion") == keys("Champollion")
    assert query_keys("Describe the history") == keys("history"), "nothing else to keep"


def test_chinese_and_japanese_questions_keep_the_pairs_inside_their_words() -> None:
    assert query_keys("蔡伦出生于哪一年？") >= {"蔡伦"}
    assert "伦出" not in query_keys("蔡伦出生于哪一年？"), "a pair straddling two words"
    assert query_keys("富士山について説明してください") == {"富士", "士山"}


def test_terminal_escapes_are_not_words_of_a_question() -> None:
    assert query_keys("Explain the Rosetta Stone \x1b]0;pwned\x07 \x1b[2J \x9b31m") == keys(
        "Rosetta Stone"
    )


SENTENCES = [
    keys("Karl von Frisch trained honeybees to visit sugar water"),
    keys("Von Frisch won the Nobel Prize"),
    keys("Drones are the male bees of the colony"),
    keys("Von Frisch showed that bees see colour"),
    keys("Drones die when winter comes"),
    keys("Drones mate with a queen in flight"),
]
DOCUMENTS = [SENTENCES[0] | SENTENCES[1] | SENTENCES[3], SENTENCES[2] | SENTENCES[4] | SENTENCES[5]]
RARITY = Rarity.of(SENTENCES, DOCUMENTS, [keys("Karl von Frisch"), keys("Drones")])


def test_a_sentence_naming_the_subject_but_not_what_is_asked_does_not_address_it() -> None:
    lunch = query_keys("What did von Frisch eat for lunch?")
    assert not any(RARITY.addresses(lunch, sentence) for sentence in SENTENCES)
    prize = query_keys("When did von Frisch win the Nobel Prize?")
    assert RARITY.addresses(prize, SENTENCES[1])


def test_a_sentence_must_name_what_the_question_is_about() -> None:
    colour = query_keys("What colour are drones?")
    assert RARITY.anchors(colour) == keys("drones")
    assert not RARITY.addresses(colour, SENTENCES[3]), "colour, but of nothing about drones"
    assert not RARITY.addresses(colour, SENTENCES[2]), "drones, but no colour"


def test_the_objective_may_be_addressed_by_sentences_of_one_document_together() -> None:
    objective = query_keys("Explain the sugar water, the Nobel Prize and the colour vision")
    assert not any(RARITY.addresses(objective, sentence) for sentence in SENTENCES)
    assert sorted(RARITY.together(objective, SENTENCES[:4])) == [0, 1, 3]
    assert RARITY.together(objective, [SENTENCES[0], SENTENCES[2]]) == [], "one part is missing"


def test_a_section_is_on_topic_when_its_title_terms_are_in_the_sentence_or_headings() -> None:
    assert on_topic("Direction", keys("the angle gives the direction of the food"))
    assert not on_topic("Direction", keys("drones do not forage"))


def test_threads_stem_alike_each_with_its_own_stemmer() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from app.text.relevance import stem

    words = [
        f"{root}{ending}"
        for root in ("decipher", "nest", "colon", "work", "danc")
        for ending in ("ing", "ed", "ment", "es", "ers", "ation", "s", "")
    ]
    serial = [stem.__wrapped__(word) for word in words]
    with ThreadPoolExecutor(max_workers=8) as pool:
        rounds = list(pool.map(lambda _: [stem.__wrapped__(w) for w in words], range(64)))
    assert all(found == serial for found in rounds)


def test_the_quantity_word_of_a_how_question_is_not_a_key_term() -> None:
    assert query_keys("How far do foragers fly?") == keys("foragers fly")
    assert query_keys("How many eggs can a queen lay?") == keys("eggs queen lay")


def test_terms_that_always_occur_together_count_once() -> None:
    wife = query_keys("What was the name of von Frisch's wife?")
    assert wife == keys("von Frisch wife"), "'name' asks for an answer, it is not a term"
    assert frozenset(keys("von Frisch")) in RARITY.units(wife)
    assert not any(RARITY.addresses(wife, sentence) for sentence in SENTENCES)
