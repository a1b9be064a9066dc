"""One realistic, valid instance of every top-level contract, built with real field values."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts import (
    Answer,
    ArtifactRef,
    AuthoritativeInput,
    Budget,
    ConstraintItem,
    Constraints,
    Decision,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    Fact,
    FactSummary,
    FreshnessReport,
    Handoff,
    HumanDecision,
    HumanRequest,
    NodeRun,
    Policies,
    Provenance,
    Question,
    RefCheck,
    RequiredChange,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    Source,
    Span,
    TaskSpec,
    TaskState,
    ToolReceipt,
    Usage,
    VersionedContract,
)

SHA_SOURCE = "3f" * 32
SHA_DRAFT = "0123456789abcdef" * 4
THREAD = "thread-rosetta-1"
QUOTE = "The Rosetta Stone carries the same decree in hieroglyphic, Demotic and Greek."


def artifact(kind: str, artifact_id: str, size: int = 1234) -> ArtifactRef:
    return ArtifactRef.model_validate(
        {
            "artifact_id": artifact_id,
            "kind": kind,
            "uri": f"artifact://{kind}/{artifact_id}",
            "media_type": "text/markdown",
            "sha256": SHA_DRAFT,
            "revision": 2,
            "size_bytes": size,
        }
    )


def provenance(producer: str = "research", node: str = "research") -> Provenance:
    return Provenance(producer=producer, node=node, step=3)


def task_spec() -> TaskSpec:
    return TaskSpec(
        task_id="rosetta",
        task_version=2,
        objective="Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs",
        questions=["What does the stone contain?", "Who deciphered the hieroglyphs, and how?"],
        constraints=Constraints(
            max_words=800, required_sections=["Background", "Decipherment"], notes=["No jargon."]
        ),
        corpus=["examples/corpus"],
        budget=Budget(
            max_tool_calls=40,
            max_tokens=50_000,
            deadline=datetime(2030, 1, 1, 12, 0, tzinfo=UTC),
            max_review_rounds=3,
            max_attempts=2,
        ),
        policies=Policies(require_approval=True, on_stale="ask"),
    )


def research_bundle() -> ResearchBundle:
    source = Source(
        id="src-1",
        uri="file:///corpus/rosetta.md",
        title="The Rosetta Stone",
        retrieved_at=datetime(2025, 5, 1, 9, 30, tzinfo=UTC),
        sha256=SHA_SOURCE,
        snapshot=artifact("source", "src-1"),
    )
    fact = Fact(
        id="claim-1",
        claim="The stone repeats one decree in three scripts.",
        source_id="src-1",
        quote=QUOTE,
        span=Span(start=120, end=120 + len(QUOTE)),
        confidence="medium",
        corroborating_source_ids=[],
        question_id="q-1",
        provenance=provenance(),
    )
    return ResearchBundle(
        task_id="rosetta",
        result_status="partial",
        facts=[fact],
        sources=[source],
        open_questions=[Question(id="q-2", text="Who deciphered the hieroglyphs, and how?")],
        artifact_refs=[artifact("notes", "notes-rosetta")],
        errors=[
            ErrorDetail(
                code=ErrorCode.INSUFFICIENT_EVIDENCE,
                detail="No source names the decipherer.",
                field="questions[1]",
            )
        ],
        retryable=True,
        missing_inputs=["a source on Champollion"],
    )


def draft_article() -> DraftArticle:
    return DraftArticle(
        task_id="rosetta",
        result_status="completed",
        revision=2,
        body=artifact("draft", "draft-rosetta"),
        cited_claim_ids=["claim-1"],
        excluded_claim_ids=["claim-7"],
        addressed_changes=["UNCITED_SENTENCE"],
        word_count=412,
    )


def review_result() -> ReviewResult:
    return ReviewResult(
        task_id="rosetta",
        draft_revision=2,
        verdict="changes_requested",
        accepted_claims=["claim-1"],
        rejected_claims=["claim-7"],
        required_changes=[
            RequiredChange(
                code=ErrorCode.MISSING_SECTION,
                reason="The Decipherment section is missing.",
                section="Decipherment",
            )
        ],
        checked_sources=["src-1"],
        report=artifact("review", "review-rosetta"),
    )


def human_request() -> HumanRequest:
    return HumanRequest(
        interrupt_id="approve-research-1",
        request_kind="approve_research",
        question="Research found 1 fact from 1 source. Approve writing?",
        allowed_actions=["approve", "revise", "reject"],
        fact_count=1,
        source_count=1,
        top_facts=[
            FactSummary(
                claim_id="claim-1",
                claim="The stone repeats one decree in three scripts.",
                source_id="src-1",
                confidence="medium",
            )
        ],
        open_questions=[Question(id="q-2", text="Who deciphered the hieroglyphs, and how?")],
        artifacts=[artifact("notes", "notes-rosetta")],
        changes=[],
    )


def human_decision() -> HumanDecision:
    return HumanDecision(
        interrupt_id="approve-research-1",
        action="revise",
        reason="Name the decipherer.",
        answers=[Answer(question_id="q-2", text="Jean-François Champollion, in 1822.")],
        constraints=["Mention Thomas Young's earlier work."],
        decided_by="editor@example.org",
    )


def node_run() -> NodeRun:
    return NodeRun(
        task_version=2,
        node_id="writer",
        attempt=1,
        status="succeeded",
        input_hash=SHA_SOURCE,
        started_at=datetime(2025, 5, 1, 9, 31, tzinfo=UTC),
        ended_at=datetime(2025, 5, 1, 9, 31, 2, tzinfo=UTC),
        duration_ms=2012.5,
        usage=Usage(tool_calls=2, tokens=0),
        artifact_ids=["draft-rosetta@2"],
    )


def run_outcome() -> RunOutcome:
    return RunOutcome(
        thread_id=THREAD,
        task_id="rosetta",
        state=TaskState.INPUT_REQUIRED,
        result_status=None,
        draft=artifact("draft", "draft-rosetta"),
        review_rounds=1,
        fact_count=1,
        human_request=human_request(),
        reason="Waiting for approval of the research.",
    )


def handoff() -> Handoff:
    return Handoff(
        task_id="rosetta",
        task_version=2,
        objective="Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs",
        from_node="research",
        next_allowed_action="writer",
        accepted_decisions=[
            Decision(text="Write for a general audience.", provenance=provenance())
        ],
        constraints=[ConstraintItem(text="At most 800 words.", provenance=provenance("human"))],
        authoritative_inputs=[
            AuthoritativeInput(
                name="source src-1",
                uri="artifact://source/src-1",
                sha256=SHA_SOURCE,
                provenance=provenance(),
            )
        ],
        tool_receipts=[
            ToolReceipt(
                tool="read_source",
                call_id="call-1",
                input_summary="rosetta.md",
                output_sha256=SHA_SOURCE,
                provenance=provenance(),
            )
        ],
        artifacts=[artifact("notes", "notes-rosetta")],
        open_questions=[Question(id="q-2", text="Who deciphered the hieroglyphs, and how?")],
        provenance=provenance(),
    )


def freshness_report() -> FreshnessReport:
    """A writer's check that found one edited source."""
    return FreshnessReport(
        node="writer",
        verdict="stale",
        checked=5,
        checks=[
            RefCheck(
                name="source src-1",
                kind="source",
                producer="research",
                uri="file:///corpus/rosetta.md",
                recorded_sha256=SHA_SOURCE,
                current_sha256="e" * 64,
                status="stale",
            )
        ],
        round=1,
    )


EXAMPLES: dict[type[VersionedContract], VersionedContract] = {
    FreshnessReport: freshness_report(),
    ArtifactRef: artifact("article", "article-rosetta"),
    DraftArticle: draft_article(),
    Handoff: handoff(),
    HumanDecision: human_decision(),
    HumanRequest: human_request(),
    NodeRun: node_run(),
    ResearchBundle: research_bundle(),
    ReviewResult: review_result(),
    RunOutcome: run_outcome(),
    TaskSpec: task_spec(),
}


def contract_id(model: type[VersionedContract]) -> str:
    """Readable pytest id for a parametrized contract class."""
    return model.__name__
