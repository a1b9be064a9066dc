"""Sources a reader can open: ``Workflow.sources``/``source_text`` and ``handoff sources``.

Real runs on the bundled corpus (and on a hard-wrapped corpus of the test's own), on every
backend. Claim ids, spans and lines are never written down here: the expectations come
from the thread's state (its research bundle and draft) and the snapshot bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from itertools import accumulate
from pathlib import Path

import pytest

from app.corpus.citations import (
    CitedClaim,
    UnknownSource,
    list_sources,
    mark,
    marked_source,
    unmark,
)
from app.errors import ThreadNotFound, UnknownArtifactName
from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from contracts import DraftArticle, ResearchBundle, Span
from graphs.errors import IntegrityError
from tests.app.store_faults import tamper
from tests.app.test_human_in_the_loop import paused
from tests.backends import backend_env
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE, write_corpus

MARKED = re.compile(r"⟦(claim-[0-9]+(?:,claim-[0-9]+)*) (.*?)⟧", re.DOTALL)
"""A marked span as the page documents it: ⟦ids text⟧."""


def finished(
    workflow: Workflow, thread_id: str, **task: object
) -> tuple[ResearchBundle, DraftArticle]:
    """Run the objective on a new thread; its research bundle and current draft."""
    workflow.run(workflow.task(OBJECTIVE, **task), thread_id)
    state = workflow.state(thread_id)
    bundle, draft = state["research"], state["draft"]
    assert isinstance(bundle, ResearchBundle) and isinstance(draft, DraftArticle)
    assert draft.cited_claim_ids, "the run must cite something for these tests to mean anything"
    return bundle, draft


def cited_by_source(bundle: ResearchBundle, draft: DraftArticle) -> dict[str, list[str]]:
    """What the state says: per source, the cited claims quoting it, by position."""
    expected: dict[str, list[str]] = {source.id: [] for source in bundle.sources}
    for fact in sorted(bundle.facts, key=lambda fact: (fact.span.start, fact.span.end)):
        if fact.id in draft.cited_claim_ids:
            expected[fact.source_id].append(fact.id)
    return expected


def snapshot_bytes(workflow: Workflow, bundle: ResearchBundle, source_id: str) -> bytes:
    source = bundle.source(source_id)
    assert source is not None
    return workflow.context.store.get(source.snapshot)


def check_line_ranges(workflow: Workflow, bundle: ResearchBundle, thread_id: str) -> int:
    """Every cited claim's lines hold its quote, counted here on the snapshot itself.

    Returns how many cited claims span more than one line.
    """
    multiline = 0
    for entry in workflow.sources(thread_id):
        text = snapshot_bytes(workflow, bundle, entry.id).decode("utf-8")
        lines = text.split("\n")
        starts = [0, *accumulate(len(line) + 1 for line in lines)]  # offset of each line
        for claim in entry.cited_by:
            fact = bundle.fact(claim.claim_id)
            assert fact is not None and claim.span == fact.span
            first, last = claim.first_line, claim.last_line
            assert starts[first - 1] <= fact.span.start < starts[first], claim
            assert starts[last - 1] <= fact.span.end - 1 < starts[last], claim
            assert fact.quote in "\n".join(lines[first - 1 : last]), claim
            assert claim.verbatim
            multiline += first != last
    return multiline


# -- the list ---------------------------------------------------------------------------


def test_sources_lists_every_source_research_read_with_the_draft_claims_citing_it(
    workflow: Workflow,
) -> None:
    bundle, draft = finished(workflow, "t-list")
    entries = workflow.sources("t-list")
    assert [entry.id for entry in entries] == [source.id for source in bundle.sources]
    expected = cited_by_source(bundle, draft)
    assert {entry.id: list(entry.claim_ids) for entry in entries} == expected
    cited = {claim for entry in entries for claim in entry.claim_ids}
    from_bundle = {fact.id for fact in bundle.facts}
    assert cited == set(draft.cited_claim_ids) & from_bundle, "every cited fact is placed once"
    for entry, source in zip(entries, bundle.sources, strict=True):
        assert (entry.title, entry.uri, entry.sha256) == (source.title, source.uri, source.sha256)
        assert entry.snapshot == source.snapshot
        assert entry.file_name == Path(source.uri.removeprefix("file://")).name
        assert entry.file_name.endswith(".md")


def test_each_cited_claims_line_range_is_where_its_quote_is_in_the_snapshot(
    workflow: Workflow,
) -> None:
    bundle, _ = finished(workflow, "t-lines")
    check_line_ranges(workflow, bundle, "t-lines")


def test_a_quote_wrapped_over_several_lines_gets_its_first_and_last_line(
    workflow: Workflow, tmp_path: Path
) -> None:
    """Hard-wrapped prose: a cited sentence spans lines, and the range covers all of them."""
    words = (
        "The Rosetta Stone is a granodiorite stele inscribed with a decree issued at Memphis "
        "in 196 BC on behalf of King Ptolemy V. The decree appears in three scripts: "
        "Ancient Egyptian hieroglyphs, Demotic script and Ancient Greek. Because the three "
        "texts say the same thing, the stone became the key to the decipherment of Egyptian "
        "hieroglyphs. Champollion announced the decipherment of the hieroglyphs in 1822 "
        "after comparing the royal names in the cartouches with the Greek text."
    ).split()
    wrapped = "\n".join(" ".join(words[index : index + 7]) for index in range(0, len(words), 7))
    corpus = write_corpus(tmp_path / "wrapped", {"stone.md": f"# The Stone\n\n{wrapped}\n"})
    bundle, _ = finished(workflow, "t-wrapped", corpus=[str(corpus)])
    assert check_line_ranges(workflow, bundle, "t-wrapped") >= 1, "no cited quote spans lines"


def test_a_thread_without_a_draft_lists_its_sources_as_not_cited(workflow: Workflow) -> None:
    paused(workflow, "t-no-draft")  # waits for approval after research: no draft yet
    bundle = workflow.state("t-no-draft")["research"]
    entries = workflow.sources("t-no-draft")
    assert [entry.id for entry in entries] == [source.id for source in bundle.sources]
    assert all(entry.cited_by == () for entry in entries)
    first = bundle.sources[0]
    text = workflow.source_text("t-no-draft", first.id)
    assert text.encode() == snapshot_bytes(workflow, bundle, first.id), "nothing marked"


# -- the marked text --------------------------------------------------------------------


def test_the_marked_text_is_the_snapshot_byte_for_byte_and_each_mark_is_the_cited_quote(
    workflow: Workflow,
) -> None:
    bundle, draft = finished(workflow, "t-marked")
    expected = cited_by_source(bundle, draft)
    for source in bundle.sources:
        marked = workflow.source_text("t-marked", source.id)
        snapshot = snapshot_bytes(workflow, bundle, source.id)
        assert hashlib.sha256(snapshot).hexdigest() == source.sha256
        stripped = re.sub(r"⟦claim-[0-9]+(?:,claim-[0-9]+)* |⟧", "", marked)
        assert stripped.encode("utf-8") == snapshot, f"{source.id}: markers must only add"
        assert unmark(marked).encode("utf-8") == snapshot
        marks = MARKED.findall(marked)
        assert [claim for ids, _ in marks for claim in ids.split(",")] == expected[source.id]
        for ids, span_text in marks:
            facts = [bundle.fact(claim) for claim in ids.split(",")]
            quotes = [fact.quote for fact in facts if fact is not None]
            assert len(quotes) == len(facts)
            if len(quotes) == 1:
                assert span_text == quotes[0]
            else:  # overlapping spans share one mark
                assert all(quote in span_text for quote in quotes)


def test_overlapping_spans_share_one_mark_and_a_misplaced_quote_is_not_marked() -> None:
    text = "alpha beta gamma delta"

    def claim(claim_id: str, start: int, end: int, verbatim: bool = True) -> CitedClaim:
        return CitedClaim(claim_id, Span(start=start, end=end), 1, 1, verbatim)

    claims = [claim("claim-2", 6, 16), claim("claim-1", 0, 10), claim("claim-3", 17, 22, False)]
    marked = mark(text, claims)
    assert marked == "⟦claim-1,claim-2 alpha beta gamma⟧ delta"
    assert unmark(marked) == text


# -- what is refused --------------------------------------------------------------------


@pytest.mark.e2e
def test_an_unknown_source_id_is_refused_naming_the_known_ids(
    workflow: Workflow, settings: Settings
) -> None:
    bundle, _ = finished(workflow, "t-unknown-src")
    known = [source.id for source in bundle.sources]
    with pytest.raises(UnknownSource) as refused:
        workflow.source_text("t-unknown-src", "src-999")
    assert "'src-999'" in refused.value.message and "'t-unknown-src'" in refused.value.message
    assert refused.value.message.endswith(f"known: {', '.join(known)}")
    result = handoff("show", "t-unknown-src", "--source", "src-999", env=backend_env(settings))
    assert result.returncode == ExitCode.NOT_FOUND
    assert f"known: {', '.join(known)}" in one_line_error(result)
    assert result.stdout == ""


@pytest.mark.e2e
def test_an_unknown_thread_is_refused_by_sources_and_source_text(
    workflow: Workflow, settings: Settings
) -> None:
    with pytest.raises(ThreadNotFound, match="t-nobody"):
        workflow.sources("t-nobody")
    with pytest.raises(ThreadNotFound, match="t-nobody"):
        workflow.source_text("t-nobody", "src-1")
    for args in (("sources", "t-nobody"), ("show", "t-nobody", "--source", "src-1")):
        result = handoff(*args, env=backend_env(settings))
        assert result.returncode == ExitCode.NOT_FOUND, args
        assert "t-nobody" in one_line_error(result)


@pytest.mark.e2e
def test_a_tampered_snapshot_is_refused_and_none_of_its_text_is_shown(
    own_store_workflow: Workflow,
) -> None:
    workflow = own_store_workflow  # the test damages its stored bytes
    settings = workflow.settings
    bundle, draft = finished(workflow, "t-tampered")
    cited = next(source for source in bundle.sources if cited_by_source(bundle, draft)[source.id])
    tamper(workflow.context.store, cited.snapshot)
    with pytest.raises(IntegrityError, match=cited.snapshot.uri):
        workflow.source_text("t-tampered", cited.id)
    with pytest.raises(IntegrityError, match=cited.snapshot.uri):
        workflow.sources("t-tampered")  # its lines cannot be placed in other bytes
    for option in ("--source", "--artifact"):
        result = handoff("show", "t-tampered", option, cited.id, env=backend_env(settings))
        assert result.returncode == ExitCode.INTEGRITY, (option, result.stderr)
        assert cited.snapshot.uri in one_line_error(result)
        assert result.stdout == ""


def test_a_snapshot_pinning_other_bytes_than_research_read_is_refused(
    workflow: Workflow,
) -> None:
    """A source whose snapshot ref names bytes with another hash than ``Source.sha256``."""
    bundle, draft = finished(workflow, "t-other-bytes")
    first = bundle.sources[0]
    forged = bundle.model_copy(
        update={"sources": [first.model_copy(update={"sha256": "0" * 64}), *bundle.sources[1:]]}
    )
    store = workflow.context.store
    with pytest.raises(IntegrityError, match="refusing to show"):
        marked_source(forged, draft, first.id, store, "t-other-bytes")
    if cited_by_source(bundle, draft)[first.id]:
        with pytest.raises(IntegrityError, match="refusing to show"):
            list_sources(forged, draft, store)


# -- the command ------------------------------------------------------------------------


@pytest.mark.e2e
def test_handoff_sources_prints_one_line_per_source_with_file_hash_and_citing_lines(
    workflow: Workflow, settings: Settings
) -> None:
    bundle, draft = finished(workflow, "t-cli-lines")
    result = handoff("sources", "t-cli-lines", env=backend_env(settings))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(bundle.sources)
    for line, entry in zip(lines, workflow.sources("t-cli-lines"), strict=True):
        assert line.split()[0] == entry.id
        assert entry.title in line and f"  {entry.file_name}  " in line
        assert f"sha256 {entry.sha256[:8]}…" in line
        if entry.cited_by:
            claims = line.split("cited by ", 1)[1].split(", ")
            assert [part.split(" ")[0] for part in claims] == list(entry.claim_ids)
            for part, claim in zip(claims, entry.cited_by, strict=True):
                assert f"({claim.line_range})" in part
        else:
            assert line.endswith("not cited")


@pytest.mark.e2e
def test_handoff_sources_json_parses_to_the_python_api_entries(
    workflow: Workflow, settings: Settings
) -> None:
    finished(workflow, "t-cli-json")
    result = handoff("sources", "t-cli-json", "--json", env=backend_env(settings))
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert listed == [entry.as_dict() for entry in workflow.sources("t-cli-json")]
    assert {"id", "title", "file_name", "uri", "sha256", "snapshot", "cited_by"} <= set(listed[0])


@pytest.mark.e2e
def test_handoff_show_source_prints_the_marked_text(workflow: Workflow, settings: Settings) -> None:
    bundle, draft = finished(workflow, "t-cli-show")
    cited = next(source for source in bundle.sources if cited_by_source(bundle, draft)[source.id])
    result = handoff("show", "t-cli-show", "--source", cited.id, env=backend_env(settings))
    assert result.returncode == 0, result.stderr
    assert result.stdout == workflow.source_text("t-cli-show", cited.id)
    assert "⟦claim-" in result.stdout


@pytest.mark.e2e
def test_show_artifact_with_a_source_id_prints_the_snapshot_as_stored(
    workflow: Workflow, settings: Settings
) -> None:
    bundle, _ = finished(workflow, "t-cli-raw")
    first = bundle.sources[0]
    assert workflow.artifact("t-cli-raw", first.id) == snapshot_bytes(workflow, bundle, first.id)
    result = handoff("show", "t-cli-raw", "--artifact", first.id, env=backend_env(settings))
    assert result.returncode == 0, result.stderr
    assert result.stdout.encode() == snapshot_bytes(workflow, bundle, first.id)


def test_an_unknown_artifact_name_points_to_the_sources_command(workflow: Workflow) -> None:
    finished(workflow, "t-hint")
    with pytest.raises(UnknownArtifactName, match=r"src-1 \(list them: `handoff sources t-hint`"):
        workflow.artifact_ref("t-hint", "sources")


@pytest.mark.e2e
def test_show_refuses_an_artifact_and_a_source_at_once(
    workflow: Workflow, settings: Settings
) -> None:
    finished(workflow, "t-both")
    result = handoff(
        "show", "t-both", "--artifact", "draft", "--source", "src-1", env=backend_env(settings)
    )
    assert result.returncode == ExitCode.USAGE
    assert "not both" in one_line_error(result)


@pytest.mark.e2e
def test_a_thread_naming_another_threads_snapshots_is_refused_and_none_of_their_text_shown(
    workflow: Workflow, settings: Settings
) -> None:
    """A copied thread (``threads.copy``), or one edited by ``update_state``, as a copy is."""
    bundle, draft = finished(workflow, "t-origin")
    finished(workflow, "t-copy")
    workflow.graph.update_state(workflow.config("t-copy"), {"research": bundle, "draft": draft})
    cited = next(source for source in bundle.sources if cited_by_source(bundle, draft)[source.id])
    foreign = f"names t-origin-{cited.id} as its {cited.id}, which is not this thread's artifact"
    with pytest.raises(IntegrityError, match=foreign):
        workflow.source_text("t-copy", cited.id)
    with pytest.raises(IntegrityError, match="names t-origin-src-1 as its src-1"):
        workflow.sources("t-copy")
    for args in (("show", "t-copy", "--source", cited.id), ("sources", "t-copy", "--json")):
        result = handoff(*args, env=backend_env(settings))
        assert result.returncode == ExitCode.INTEGRITY, (args, result.stderr)
        assert "t-origin-src-" in one_line_error(result) and "t-copy" in result.stderr
        assert result.stdout == "", "nothing of the other thread's is shown"
    assert workflow.source_text("t-origin", cited.id), "the thread that owns them still reads them"
