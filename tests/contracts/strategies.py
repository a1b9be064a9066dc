"""Hypothesis strategies that build valid contracts, nested parts and cross-field rules included.

Texts are kept short (the properties are about shape, not size) and time zones are whole-minute
offsets, because JSON serialization drops the seconds of an offset.
"""

from __future__ import annotations

import string
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar, get_args

from hypothesis import strategies as st

from contracts import (
    Answer,
    ArtifactKind,
    ArtifactRef,
    AuthoritativeInput,
    Budget,
    ConstraintItem,
    Constraints,
    Decision,
    DecisionLog,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    ErrorKind,
    Fact,
    FactSummary,
    FreshnessReport,
    Handoff,
    HumanAction,
    HumanDecision,
    HumanRequest,
    NodeError,
    NodeRun,
    NodeStatus,
    Policies,
    Provenance,
    Question,
    RecordedDecision,
    RefCheck,
    RefStatus,
    RequiredChange,
    ResearchBundle,
    ResultStatus,
    ReviewResult,
    RunOutcome,
    Source,
    Span,
    StalePolicy,
    TaskSpec,
    TaskState,
    ToolReceipt,
    Usage,
    Verdict,
    VersionedContract,
)
from contracts.human import RequestKind
from contracts.research import Confidence

T = TypeVar("T")

SHORT = 40
"""Longest text drawn for any string field (all limits are higher)."""

ID_START = string.ascii_letters + string.digits
ID_REST = ID_START + "._-"

one_line = st.characters(exclude_categories=("Cs",), exclude_characters="\n")


def literals(alias: Any) -> st.SearchStrategy[Any]:
    """One of the values of a ``Literal`` alias."""
    return st.sampled_from(get_args(alias))


def texts(min_size: int = 0) -> st.SearchStrategy[str]:
    return st.text(min_size=min_size, max_size=SHORT)


def non_blank_texts() -> st.SearchStrategy[str]:
    return texts(min_size=1).filter(lambda text: bool(text.strip()))


def optional(strategy: st.SearchStrategy[T]) -> st.SearchStrategy[T | None]:
    return st.none() | strategy


def few(strategy: st.SearchStrategy[T], min_size: int = 0) -> st.SearchStrategy[list[T]]:
    return st.lists(strategy, min_size=min_size, max_size=3)


identifiers = st.builds(
    lambda first, rest: first + rest, st.sampled_from(ID_START), st.text(ID_REST, max_size=20)
)
sha256s = st.text("0123456789abcdef", min_size=64, max_size=64)
media_types = st.from_regex(r"[a-z]{1,12}/[A-Za-z0-9.+-]{1,24}", fullmatch=True)
counts = st.integers(min_value=0)
positive = st.integers(min_value=1)


def numbered(prefix: str) -> st.SearchStrategy[str]:
    """Ids such as ``src-3`` or ``claim-12``."""
    return st.integers(min_value=0, max_value=10**6).map(lambda n: f"{prefix}-{n}")


source_ids = numbered("src")
claim_ids = numbered("claim")
question_ids = numbered("q")

whole_minute_offsets = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
aware_datetimes = st.datetimes(
    # a day inside datetime's range, so every offset still converts to UTC
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=whole_minute_offsets,
)
any_datetimes = aware_datetimes  # contracts refuse naive datetimes


@st.composite
def artifact_refs(draw: st.DrawFn) -> ArtifactRef:
    kind = draw(literals(ArtifactKind))
    artifact_id = draw(identifiers)
    return ArtifactRef(
        artifact_id=artifact_id,
        kind=kind,
        uri=f"artifact://{kind}/{artifact_id}",
        media_type=draw(media_types),
        sha256=draw(sha256s),
        revision=draw(positive),
        size_bytes=draw(counts),
    )


provenances = st.builds(
    Provenance,
    producer=texts(),
    node=texts(),
    step=optional(st.integers(min_value=-1)),
)

error_details = st.builds(
    ErrorDetail,
    code=st.sampled_from(ErrorCode),
    detail=texts(),
    source_id=optional(identifiers),
    claim_id=optional(identifiers),
    field=optional(texts()),
)

questions = st.builds(
    Question,
    id=question_ids,
    text=texts(min_size=1),
    answer=optional(texts()),
    answered_by=optional(provenances),
)

sources = st.builds(
    Source,
    id=source_ids,
    uri=texts(),
    title=texts(),
    retrieved_at=any_datetimes,
    sha256=sha256s,
    snapshot=artifact_refs(),
)


@st.composite
def facts(draw: st.DrawFn, source_id: st.SearchStrategy[str] = source_ids) -> Fact:
    """A fact whose span is exactly as long as its quote."""
    quote = draw(texts(min_size=1))
    start = draw(st.integers(min_value=0, max_value=10**9))
    return Fact(
        id=draw(claim_ids),
        claim=draw(optional(texts(min_size=1))),
        source_id=draw(source_id),
        quote=quote,
        span=Span(start=start, end=start + len(quote)),
        confidence=draw(literals(Confidence)),
        corroborating_source_ids=draw(few(source_id)),
        question_id=draw(optional(question_ids)),
        provenance=draw(provenances),
    )


@st.composite
def research_bundles(draw: st.DrawFn) -> ResearchBundle:
    """A bundle whose facts cite only sources it holds, with unique fact ids."""
    bundle_sources = draw(st.lists(sources, max_size=3, unique_by=lambda source: source.id))
    bundle_facts: list[Fact] = []
    if bundle_sources:
        known = st.sampled_from([source.id for source in bundle_sources])
        bundle_facts = draw(st.lists(facts(known), max_size=4, unique_by=lambda fact: fact.id))
    return ResearchBundle(
        task_id=draw(identifiers),
        result_status=draw(literals(ResultStatus)),
        facts=bundle_facts,
        sources=bundle_sources,
        open_questions=draw(few(questions)),
        artifact_refs=draw(few(artifact_refs())),
        errors=draw(few(error_details)),
        retryable=draw(st.booleans()),
        missing_inputs=draw(few(texts())),
    )


section_titles = (
    st.text(one_line, min_size=1, max_size=SHORT).map(str.strip).filter(lambda title: title != "")
)
objectives = st.text(min_size=3, max_size=SHORT).map(str.strip).filter(lambda text: len(text) >= 3)

constraints = st.builds(
    Constraints,
    max_words=optional(st.integers(min_value=10, max_value=20000)),
    required_sections=few(section_titles),
    notes=few(texts()),
)
budgets = st.builds(
    Budget,
    max_tool_calls=optional(positive),
    max_tokens=optional(positive),
    deadline=optional(aware_datetimes),
    max_review_rounds=st.integers(min_value=1, max_value=50),
    max_attempts=st.integers(min_value=1, max_value=10),
)
policies = st.builds(Policies, require_approval=st.booleans(), on_stale=literals(StalePolicy))

task_specs = st.builds(
    TaskSpec,
    task_id=identifiers,
    task_version=positive,
    objective=objectives,
    questions=few(texts(min_size=1)),
    constraints=constraints,
    corpus=few(texts()),
    budget=budgets,
    policies=policies,
)

draft_articles = st.builds(
    DraftArticle,
    task_id=identifiers,
    result_status=literals(ResultStatus),
    revision=positive,
    body=artifact_refs(),
    cited_claim_ids=few(claim_ids),
    excluded_claim_ids=few(claim_ids),
    addressed_changes=few(texts()),
    word_count=counts,
    errors=few(error_details),
)

review_results = st.builds(
    ReviewResult,
    task_id=identifiers,
    draft_revision=positive,
    verdict=literals(Verdict),
    accepted_claims=few(claim_ids),
    rejected_claims=few(claim_ids),
    required_changes=few(
        st.builds(
            RequiredChange,
            code=st.sampled_from(ErrorCode),
            reason=texts(),
            claim_id=optional(claim_ids),
            section=optional(texts()),
        )
    ),
    checked_sources=few(source_ids),
    report=optional(artifact_refs()),
)


@st.composite
def human_decisions(draw: st.DrawFn) -> HumanDecision:
    """A decision that gives a non-blank reason whenever it rejects or aborts."""
    action = draw(literals(HumanAction))
    needs_reason = action in ("reject", "abort")
    return HumanDecision(
        interrupt_id=draw(identifiers),
        action=action,
        reason=draw(non_blank_texts() if needs_reason else optional(texts())),
        answers=draw(few(st.builds(Answer, question_id=question_ids, text=texts(min_size=1)))),
        constraints=draw(few(non_blank_texts())),
        decided_by=draw(texts()),
    )


human_requests = st.builds(
    HumanRequest,
    interrupt_id=identifiers,
    request_kind=literals(RequestKind),
    question=texts(),
    allowed_actions=few(literals(HumanAction), min_size=1),
    fact_count=counts,
    source_count=counts,
    top_facts=few(
        st.builds(
            FactSummary,
            claim_id=claim_ids,
            claim=texts(),
            source_id=source_ids,
            confidence=literals(Confidence),
        )
    ),
    open_questions=few(questions),
    artifacts=few(artifact_refs()),
    changes=few(texts()),
)

node_runs = st.builds(
    NodeRun,
    task_version=positive,
    node_id=texts(),
    attempt=positive,
    status=literals(NodeStatus),
    input_hash=sha256s,
    started_at=any_datetimes,
    ended_at=optional(any_datetimes),
    duration_ms=optional(st.floats(min_value=0, allow_nan=False, allow_infinity=False)),
    usage=st.builds(Usage, tool_calls=counts, tokens=counts),
    artifact_ids=few(st.builds(lambda ident, rev: f"{ident}@{rev}", identifiers, positive)),
    error=optional(st.builds(NodeError, kind=literals(ErrorKind), detail=texts())),
)

run_outcomes = st.builds(
    RunOutcome,
    thread_id=texts(),
    task_id=identifiers,
    state=st.sampled_from(TaskState),
    result_status=optional(literals(ResultStatus)),
    errors=few(error_details),
    retryable=st.booleans(),
    missing_inputs=few(texts()),
    article=optional(artifact_refs()),
    draft=optional(artifact_refs()),
    review_rounds=counts,
    fact_count=counts,
    human_request=optional(human_requests),
    reason=optional(texts()),
)

node_names = st.sampled_from(
    ["research", "approve_research", "writer", "reviewer", "finalize", "__end__"]
) | st.from_regex(r"[a-z][a-z0-9_]{0,30}", fullmatch=True)
"""What a Handoff may name as its next node: the graph's names, or any name of that shape."""

handoffs = st.builds(
    Handoff,
    task_id=identifiers,
    task_version=positive,
    objective=texts(),
    from_node=texts(),
    next_allowed_action=node_names,
    accepted_decisions=few(st.builds(Decision, text=texts(min_size=1), provenance=provenances)),
    constraints=few(st.builds(ConstraintItem, text=texts(min_size=1), provenance=provenances)),
    authoritative_inputs=few(
        st.builds(
            AuthoritativeInput, name=texts(), uri=texts(), sha256=sha256s, provenance=provenances
        )
    ),
    artifacts=few(artifact_refs()),
    tool_receipts=few(
        st.builds(
            ToolReceipt,
            tool=texts(),
            call_id=identifiers,
            input_summary=texts(),
            output_sha256=optional(sha256s),
            provenance=provenances,
        )
    ),
    open_questions=few(questions),
    provenance=provenances,
)

ref_checks = st.builds(
    RefCheck,
    name=texts(),
    kind=st.sampled_from(["artifact", "source"]),
    producer=texts(),
    uri=texts(),
    recorded_revision=optional(positive),
    recorded_sha256=sha256s,
    current_revision=optional(positive),
    current_sha256=optional(sha256s),
    status=literals(RefStatus),
)

freshness_reports = st.builds(
    FreshnessReport,
    node=texts(),
    verdict=literals(RefStatus),
    checked=counts,
    checks=few(ref_checks),
    round=counts,
)

decision_logs = st.builds(
    DecisionLog,
    decisions=few(
        st.builds(
            RecordedDecision,
            interrupt_id=identifiers,
            request_kind=literals(RequestKind),
            action=literals(HumanAction),
            reason=optional(texts()),
            decided_by=texts(),
            answers=few(st.builds(Answer, question_id=question_ids, text=texts(min_size=1))),
            constraints=few(non_blank_texts()),
            repins=few(ref_checks),
            provenance=provenances,
        )
    ),
)

STRATEGIES: dict[type[VersionedContract], st.SearchStrategy[Any]] = {
    DecisionLog: decision_logs,
    FreshnessReport: freshness_reports,
    ArtifactRef: artifact_refs(),
    DraftArticle: draft_articles,
    Handoff: handoffs,
    HumanDecision: human_decisions(),
    HumanRequest: human_requests,
    NodeRun: node_runs,
    ResearchBundle: research_bundles(),
    ReviewResult: review_results,
    RunOutcome: run_outcomes,
    TaskSpec: task_specs,
}
"""A strategy of valid instances for every top-level contract."""


def json_values(allow_non_finite: bool = False) -> st.SearchStrategy[Any]:
    """Arbitrary JSON-like values: null, booleans, numbers and text, nested in lists and dicts."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=allow_non_finite, allow_infinity=allow_non_finite)
        | st.text()
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=10), children, max_size=4)
        ),
        max_leaves=12,
    )


__all__ = ["STRATEGIES", "json_values"]
