"""The answerability rule: when a sentence, alone or with others, addresses a question."""

from __future__ import annotations

from pathlib import Path

from app.storage.artifacts import FilesystemArtifactStore
from app.text.key_terms import keys, query_keys
from app.text.relevance import Rarity, on_topic, unrelated
from contracts import Fact, Provenance, ResearchBundle, Span
from tests.conftest import stored_source

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


def test_terms_that_always_occur_together_count_once() -> None:
    wife = query_keys("What was the name of von Frisch's wife?")
    assert wife == keys("von Frisch wife"), "'name' asks for an answer, it is not a term"
    assert frozenset(keys("von Frisch")) in RARITY.units(wife)
    assert not any(RARITY.addresses(wife, sentence) for sentence in SENTENCES)


def test_the_rarest_units_are_the_question_s_most_specific_terms_the_corpus_uses() -> None:
    prize = query_keys("When did von Frisch win the Nobel Prize?")
    assert RARITY.rarest(prize) == [frozenset(keys("Nobel Prize"))], "win: not in the corpus"
    assert RARITY.rarest(query_keys("When did the moon rise?")) == []


def test_what_every_document_names_need_not_be_repeated_by_a_sentence_of_one_of_them() -> None:
    bees = [keys("Bees dance"), keys("A waggle run lasts one second"), keys("Bees sleep")]
    documents = [bees[0] | bees[1], bees[2]]
    everywhere = Rarity.of(bees, documents, [keys("Bees"), keys("Bees at night")])
    duration = query_keys("How long does a bee waggle run last?")
    assert not everywhere.addresses(duration, bees[1]), "the anchor, bees, is not named"
    assert everywhere.addresses(duration, bees[1], documents[0]), "its document names it"
    assert not RARITY.addresses(
        query_keys("What colour are drones?"), SENTENCES[3], DOCUMENTS[0]
    ), "drones are one document's subject, not every document's"


def _fact(claim: str, quote: str, leans_on: str | None = None, said: str | None = None) -> Fact:
    return Fact(
        id=claim,
        claim=said,
        source_id="src-1",
        quote=quote,
        span=Span(start=0, end=len(quote)),
        confidence="low",
        leans_on=leans_on,
        provenance=Provenance(producer="research", node="research"),
    )


def test_a_fact_is_unrelated_when_it_shares_no_term_with_any_question_or_its_section(
    tmp_path: Path,
) -> None:
    source = stored_source(FilesystemArtifactStore(tmp_path), "notes.md", "Notes", "notes")
    facts = [
        _fact("claim-1", "Drones mate with a queen in flight."),
        _fact("claim-2", "They die soon after that.", leans_on="claim-1"),
        _fact("claim-3", "The ferry leaves the north pier every hour."),
        _fact("claim-4", "Varroa mites weaken a colony over winter."),
        _fact("claim-5", "Drones die in autumn.", said="Males are expelled before the cold."),
    ]
    bundle = ResearchBundle(task_id="t", result_status="completed", facts=facts, sources=[source])
    claims = [fact.id for fact in facts]
    questions = ["What do drones do?"]
    assert unrelated(claims, bundle, questions, {}) == ["claim-3", "claim-4"], (
        "claim-2 leans on an answer and is read with it; claim-5's quote names drones"
    )
    under_mites: dict[str, str | None] = {"claim-4": "Mites"}
    assert unrelated(claims, bundle, questions, under_mites) == ["claim-3"], "on its section"
