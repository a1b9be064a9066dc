"""The Reviewer's checks of what an article cites: each citation walked back to its source.

Every sentence outside the apparatus cites a fact, says no more than its facts, and names
what its pronouns point back to; every quote is its source snapshot's text, from prose;
a fact's code example is shown right after the sentence citing it, and is the code block
that sentence introduces in its source; every cited source is in the Sources list. Each
problem is a required change with its code.
"""

from __future__ import annotations

import re

from app.agents.article_layout import Layout
from app.agents.passages import code_example
from app.text.antecedents import leans_on_earlier
from app.text.documents import MARKDOWN, Document, ProseSentence, read_document
from app.text.documents.examples import shown_code
from app.text.primitives import CITATION, strip_citations, terms
from app.text.publishable import without_controls
from contracts import ErrorCode, Fact, RequiredChange, ResearchBundle
from graphs import ArtifactStore
from graphs.citations import quote_problem
from graphs.errors import ArtifactError
from graphs.markdown import SOURCES_HEADING

SUPPORT_OVERLAP = 0.5
"""Share of a sentence's content terms that must appear in the facts it cites."""


def required(
    code: ErrorCode, reason: str, *, section: str | None = None, claim_id: str | None = None
) -> RequiredChange:
    """A required change; a section title is cut to what the contract holds."""
    short = section[:200] if section is not None else None
    return RequiredChange(code=code, reason=reason, section=short, claim_id=claim_id)


def check_sentences(
    article: Document, layout: Layout, bundle: ResearchBundle, changes: list[RequiredChange]
) -> tuple[list[str], dict[str | None, list[list[str]]]]:
    """Each prose sentence cites, is supported, and leans only on what came before it.

    Returns the claims cited (first citation first) and the citations of each sentence by
    section, for the checks of the task.
    """
    cited_ids: list[str] = []
    cited_by_section: dict[str | None, list[list[str]]] = {}
    cited_in_paragraph: dict[int, list[str]] = {}
    for sentence in article.sentences:
        if layout.in_apparatus(sentence.start):
            continue
        heading = layout.section_at(sentence.start)
        ids = CITATION.findall(sentence.text)
        if not ids:
            reason = f"sentence has no claim citation: {sentence.plain[:160]!r}"
            changes.append(required(ErrorCode.UNCITED_SENTENCE, reason, section=heading))
            continue
        cited_ids += [claim_id for claim_id in ids if claim_id not in cited_ids]
        cited_by_section.setdefault(heading, []).append(ids)
        earlier = cited_in_paragraph.setdefault(sentence.block, [])
        known = [bundle.fact(claim_id) for claim_id in ids]
        _check_support(sentence.text, ids, known, changes)
        _check_referent(sentence, ids, known, earlier, changes)
        earlier += ids
    return cited_ids, cited_by_section


def check_blocks(
    article: Document, layout: Layout, bundle: ResearchBundle, changes: list[RequiredChange]
) -> None:
    """An article is prose: no code, table, HTML or image outside the apparatus.

    The one exception is a cited fact's code example, shown where it belongs (``check_examples``).
    """
    examples = check_examples(article, layout, bundle, changes)
    for number, block in enumerate(article.blocks):
        if number in examples:
            continue
        if not block.prose and block.kind != "heading" and not layout.in_apparatus(block.start):
            reason = (
                f"the article holds a {block.kind} block (lines "
                f"{block.first_line}-{block.last_line}); an article is prose: "
                "code, tables, HTML and images are not sentences"
            )
            section = layout.section_at(block.start)
            changes.append(required(ErrorCode.NON_PROSE_QUOTED, reason, section=section))


def check_examples(
    article: Document, layout: Layout, bundle: ResearchBundle, changes: list[RequiredChange]
) -> set[int]:
    """Each sentence citing a fact with a code example is followed by it, its code the source's.

    The sentence ends its paragraph, and the code blocks right after it show each of its
    facts' examples, naming the claim in the info string (``app/agents/article_text.py``).
    An example missing there leaves the sentence introducing nothing: a dangling reference.
    Returns the blocks that show an example where it belongs.
    """
    shown: set[int] = set()
    for sentence in article.sentences:
        if layout.in_apparatus(sentence.start):
            continue
        cited = map(bundle.fact, dict.fromkeys(CITATION.findall(sentence.text)))
        examples = [(fact, fact.example) for fact in cited if fact and fact.example]
        following = _examples_after(article, sentence) if examples else {}
        for fact, example in examples:
            if fact.id not in following:
                reason = (
                    f"{fact.id} introduces a code example the article does not show right "
                    f"after its sentence: {sentence.plain[:160]!r}"
                )
                changes.append(required(ErrorCode.DANGLING_REFERENCE, reason, claim_id=fact.id))
                continue
            shown.add(following[fact.id])
            block = article.blocks[following[fact.id]]
            if shown_code(article.text, block.start, block.end, MARKDOWN) != without_controls(
                example.shown
            ):
                reason = (
                    f"the example shown for {fact.id} (lines {block.first_line}-"
                    f"{block.last_line}) is not the code of {fact.source_id} at "
                    f"{example.span.start}-{example.span.end}"
                )
                changes.append(required(ErrorCode.QUOTE_NOT_FOUND, reason, claim_id=fact.id))
    return shown


def _examples_after(article: Document, sentence: ProseSentence) -> dict[str, int]:
    """The claims the code blocks right after the sentence name (their first), by block.

    Nothing when the sentence does not end its block: an example then does not follow it.
    """
    after = sentence.index + 1
    if after < len(article.sentences) and article.sentences[after].block == sentence.block:
        return {}
    found: dict[str, int] = {}
    number = sentence.block + 1
    while number < len(article.blocks) and article.blocks[number].kind == "code":
        block = article.blocks[number]
        opening = article.text[block.start : block.end].split("\n", 1)[0]
        for claim_id in CITATION.findall(opening):
            found.setdefault(claim_id, number)
        number += 1
    return found


def _check_support(
    text: str, ids: list[str], known: list[Fact | None], changes: list[RequiredChange]
) -> None:
    support = set().union(*(terms(fact.quote) for fact in known if fact))
    words = set(terms(strip_citations(text)))
    if support and words and len(words & support) / len(words) < SUPPORT_OVERLAP:
        reason = f"sentence says more than its cited facts: {text[:160]!r}"
        changes.append(required(ErrorCode.UNSUPPORTED_SENTENCE, reason, claim_id=ids[0]))


def _check_referent(
    sentence: ProseSentence,
    ids: list[str],
    known: list[Fact | None],
    earlier: list[str],
    changes: list[RequiredChange],
) -> None:
    """A sentence whose pronoun points back must follow what it points back to."""
    missing = [
        fact.leans_on
        for fact in known
        if fact is not None
        and fact.leans_on is not None
        and fact.leans_on not in earlier
        and fact.leans_on not in ids
    ]
    opens_leaning = sentence.position == 0 and leans_on_earlier(strip_citations(sentence.plain))
    if missing or opens_leaning:
        needs = f"; cite {', '.join(dict.fromkeys(missing))} before it" if missing else ""
        reason = (
            "sentence refers back to something its paragraph never names"
            f"{needs}: {sentence.plain[:160]!r}"
        )
        changes.append(required(ErrorCode.DANGLING_REFERENCE, reason, claim_id=ids[0]))


def verify_claims(
    cited_ids: list[str],
    bundle: ResearchBundle,
    store: ArtifactStore,
    changes: list[RequiredChange],
) -> tuple[list[str], list[str], list[str]]:
    """Each cited claim's quote found verbatim, in prose, in its source's snapshot.

    A claim's code example must be the block its sentence introduces there
    (``example_problem``); a claim whose sentence introduces one it lacks is rejected too.

    Returns the claims accepted, those rejected, and the sources whose snapshots were read.
    """
    accepted: list[str] = []
    rejected: list[str] = []
    checked: list[str] = []
    snapshots: dict[str, str] = {}
    documents: dict[str, Document] = {}
    for claim_id in cited_ids:
        fact = bundle.fact(claim_id)
        if fact is None:
            rejected.append(claim_id)
            reason = f"{claim_id} is not a fact in the research bundle"
            changes.append(required(ErrorCode.UNKNOWN_CLAIM, reason, claim_id=claim_id))
            continue
        source = bundle.source(fact.source_id)
        problem: str | None = None
        if source is None:
            problem = f"{claim_id} cites {fact.source_id}, which research did not read"
        else:
            if source.id not in snapshots:
                try:
                    snapshots[source.id] = store.get(source.snapshot).decode("utf-8")
                except (ArtifactError, UnicodeDecodeError) as error:
                    snapshots[source.id] = ""
                    problem = f"snapshot of {source.id} cannot be verified: {error}"
                if source.id not in checked:
                    checked.append(source.id)
            text = snapshots[source.id]
            if problem is None:
                problem = quote_problem(fact, source, text)
            if problem is None:
                if source.id not in documents:
                    documents[source.id] = read_document(text, source.snapshot.media_type)
                document = documents[source.id]
                block = document.block_at(fact.span.start, fact.span.end)
                if block is None or not block.prose:
                    kind = block.kind if block else "text across blocks"
                    rejected.append(claim_id)
                    reason = f"{claim_id} quotes {kind} of {source.id}, not prose"
                    changes.append(required(ErrorCode.NON_PROSE_QUOTED, reason, claim_id=claim_id))
                    continue
                wrong = example_problem(fact, document, source.snapshot.media_type)
                if wrong is not None:
                    rejected.append(claim_id)
                    changes.append(required(wrong[0], wrong[1], claim_id=claim_id))
                    continue
        if problem is None:
            accepted.append(claim_id)
        else:
            rejected.append(claim_id)
            changes.append(required(ErrorCode.QUOTE_NOT_FOUND, problem, claim_id=claim_id))
    return accepted, rejected, checked


def example_problem(
    fact: Fact, document: Document, media_type: str
) -> tuple[ErrorCode, str] | None:
    """Why the fact's code example is not the one its sentence introduces in the source.

    The example is found again from the source (``app/text/documents/examples.py``) after
    the sentence holding the quote: the same span, verbatim text and code, or none when the
    sentence introduces none. A fact whose sentence introduces an example it does not carry
    would be cited without it.
    """
    sentence = next(
        (s for s in document.sentences if s.start <= fact.span.start and fact.span.end <= s.end),
        None,
    )
    expected = code_example(document, sentence, media_type) if sentence else None
    example = fact.example
    if example == expected:
        return None
    if example is not None:
        reason = (
            f"the example of {fact.id} is not the code block its sentence introduces in "
            f"{fact.source_id} (recorded at {example.span.start}-{example.span.end})"
        )
        return ErrorCode.QUOTE_NOT_FOUND, reason
    if expected is None:
        return None
    reason = (
        f"{fact.id} quotes a sentence that introduces a code example (lines "
        f"{expected.lines.first}-{expected.lines.last} of {fact.source_id}) "
        "but carries no example: it says nothing without it"
    )
    return ErrorCode.DANGLING_REFERENCE, reason


def check_sources_listed(
    bundle: ResearchBundle, cited_ids: list[str], layout: Layout, changes: list[RequiredChange]
) -> None:
    """A reader can follow every citation: its source is in the Sources list."""
    listed = layout.text_of(SOURCES_HEADING)
    missing: dict[str, list[str]] = {}
    for claim_id in cited_ids:
        fact = bundle.fact(claim_id)
        if fact is not None and not re.search(rf"\b{fact.source_id}\b", listed):
            missing.setdefault(fact.source_id, []).append(claim_id)
    for source_id, claims in missing.items():
        reason = (
            f"{', '.join(claims)} cite {source_id}, which the article's "
            f"{SOURCES_HEADING!r} list does not name"
        )
        changes.append(required(ErrorCode.SOURCE_NOT_LISTED, reason, claim_id=claims[0]))
