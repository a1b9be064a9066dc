"""P3 context per review round: contract-built prompts vs transcript replay.

The project has no prompt builder yet (its agents are offline), so this script writes the
contract-built prompts itself, from the contract objects the Writer and Reviewer nodes
actually receive in a real run. The run uses a Writer that always leaves one sentence
uncited, so the Reviewer requests exactly one change per round until the round budget.

- contract-built Writer prompt: objective and constraints (from the Handoff), the facts
  (id, claim, source, confidence) and the latest review's required changes only.
- contract-built Reviewer prompt: objective, constraints, the facts and the draft under
  review.
- transcript replay: the task message, the research message (the same facts text), then
  every earlier draft and review message, carried forward; the Writer of round N sees
  drafts and reviews 1..N-1, the Reviewer of round N also sees draft N.

Sizes are characters (tokens ~ chars / 4); deterministic, so one run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from app.workflow import Workflow
from bench._common import (
    OBJECTIVE,
    Measure,
    Row,
    chars,
    parse_args,
    print_rows,
    print_table,
    scratch_workflow,
)
from bench._variants import StubbornWriter
from contracts import (
    Budget,
    Constraints,
    DraftArticle,
    Handoff,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
)
from graphs import AgentOutput, ReviewRequest, WriteRequest

ROUNDS = 8
QUICK_ROUNDS = 3
TARGET = 1.2
CONSTRAINTS = Constraints(max_words=250, required_sections=["The Stone", "Decipherment"])

RequestT = TypeVar("RequestT")
ResultT = TypeVar("ResultT")
CallT = TypeVar("CallT")


@dataclass
class WriterCall:
    """What the Writer node handed the Writer in one round, and the body it wrote."""

    handoff: Handoff
    bundle: ResearchBundle
    review: ReviewResult | None
    body: str

    @classmethod
    def of(cls, request: WriteRequest, draft: DraftArticle) -> WriterCall:
        """The call, with the draft's body read back from the store it was written to."""
        body = request.store.get(draft.body).decode()
        return cls(request.handoff, request.bundle, request.review, body)


@dataclass
class ReviewerCall:
    """What the Reviewer node handed the Reviewer in one round, and its verdict."""

    handoff: Handoff
    bundle: ResearchBundle
    draft: DraftArticle
    body: str
    review: ReviewResult

    @classmethod
    def of(cls, request: ReviewRequest, review: ReviewResult) -> ReviewerCall:
        """The call, with the body of the draft under review read from the store."""
        body = request.store.get(request.draft.body).decode()
        return cls(request.handoff, request.bundle, request.draft, body, review)


@dataclass
class Recording(Generic[RequestT, ResultT, CallT]):
    """An agent that records every call it passes on; the work is the inner agent's.

    The record is taken after the inner agent ran, so it can read what that call wrote.
    """

    inner: Callable[[RequestT], AgentOutput[ResultT]]
    record: Callable[[RequestT, ResultT], CallT]
    calls: list[CallT] = field(default_factory=list)

    def run(self, request: RequestT) -> AgentOutput[ResultT]:
        output = self.inner(request)
        self.calls.append(self.record(request, output.result))
        return output


def task_text(handoff: Handoff) -> str:
    """Objective and constraints, as the envelope states them."""
    lines = [f"Objective: {handoff.objective}", "Constraints:"]
    lines += [f"- {item.text}" for item in handoff.constraints] or ["- none"]
    return "\n".join(lines)


def facts_text(bundle: ResearchBundle) -> str:
    """Every fact with its id, source and confidence: what the Writer may cite."""
    lines = ["Facts (cite every sentence's claims by id):"]
    lines += [
        f"- [{fact.id}] {fact.statement} (source {fact.source_id}, confidence {fact.confidence})"
        for fact in bundle.facts
    ]
    return "\n".join(lines)


def review_text(review: ReviewResult) -> str:
    """A review as the Writer needs it: the verdict and each required change."""
    lines = [f"Review of draft {review.draft_revision}: {review.verdict}"]
    lines += [f"- {change.code.value}: {change.reason}" for change in review.required_changes]
    if review.rejected_claims:
        lines.append(f"Rejected claims: {', '.join(review.rejected_claims)}")
    return "\n".join(lines)


def contract_writer_prompt(call: WriterCall) -> str:
    """Objective, constraints, facts and the latest required changes."""
    parts = [task_text(call.handoff), facts_text(call.bundle)]
    if call.review is not None:
        parts.append("Required changes:\n" + review_text(call.review))
    return "\n\n".join(parts)


def contract_reviewer_prompt(call: ReviewerCall) -> str:
    """Objective, constraints, facts and the draft under review."""
    draft = f"Draft revision {call.draft.revision}:\n{call.body}"
    return "\n\n".join([task_text(call.handoff), facts_text(call.bundle), draft])


def message(role: str, content: str) -> str:
    """One transcript message."""
    return f"[{role}]\n{content}"


def transcript_prompts(
    writers: list[WriterCall], reviewers: list[ReviewerCall]
) -> tuple[list[str], list[str]]:
    """Per round, the Writer's and the Reviewer's prompt when every message is replayed."""
    first = writers[0]
    history = [
        message("user", task_text(first.handoff)),
        message("research", facts_text(first.bundle)),
    ]
    writer_prompts: list[str] = []
    reviewer_prompts: list[str] = []
    for writer, reviewer in zip(writers, reviewers, strict=True):
        writer_prompts.append("\n\n".join(history))
        history.append(message("writer", writer.body))
        reviewer_prompts.append("\n\n".join(history))
        history.append(message("reviewer", review_text(reviewer.review)))
    return writer_prompts, reviewer_prompts


def with_tokens(count: int) -> str:
    """A character count with its rough token count beside it."""
    return f"{chars(count)} (~{count // 4:,})"


def exact(name: str, count: int) -> tuple[str, Measure]:
    """A named side of a row whose value is counted, not sampled."""
    return name, Measure.exact(count)


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P3; returns the rows."""
    args = parse_args(argv, "P3 context per review round", repeats=1, quick_repeats=1)
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    with scratch_workflow("p3") as workflow:
        writer = Recording(StubbornWriter(workflow.context.agents["writer"]).run, WriterCall.of)
        reviewer = Recording(workflow.context.agents["reviewer"].run, ReviewerCall.of)
        context = workflow.context.with_agent("writer", writer).with_agent("reviewer", reviewer)
        with Workflow(workflow.settings, context=context) as recorded:
            task = TaskSpec(
                task_id="p3",
                objective=OBJECTIVE,
                constraints=CONSTRAINTS,
                budget=Budget(max_review_rounds=rounds),
            )
            outcome = recorded.run(task, thread_id="p3")
    if len(writer.calls) != rounds or len(reviewer.calls) != rounds:
        raise RuntimeError(f"expected {rounds} review rounds, got {len(writer.calls)}: {outcome}")
    for call in reviewer.calls[:-1]:
        if call.review.verdict != "changes_requested" or len(call.review.required_changes) != 1:
            raise RuntimeError(f"expected one required change per round, got {call.review}")

    ours_writer = [len(contract_writer_prompt(call)) for call in writer.calls]
    ours_reviewer = [len(contract_reviewer_prompt(call)) for call in reviewer.calls]
    replay_writer, replay_reviewer = (
        [len(prompt) for prompt in prompts]
        for prompts in transcript_prompts(writer.calls, reviewer.calls)
    )
    columns = (ours_writer, replay_writer, ours_reviewer, replay_reviewer)
    print_table(
        f"P3 prompt characters per round (~tokens = chars/4), {rounds} rounds",
        [
            "round",
            "writer contract",
            "writer transcript",
            "reviewer contract",
            "reviewer transcript",
        ],
        [
            [str(index + 1), *(with_tokens(sizes[index]) for sizes in columns)]
            for index in range(rounds)
        ],
    )
    rows = []
    for role, ours, replay in (
        ("writer", ours_writer, replay_writer),
        ("reviewer", ours_reviewer, replay_reviewer),
    ):
        rows += [
            Row.of(
                "P3",
                f"{role}, contract-built",
                exact("round 1", ours[0]),
                exact(f"largest of 1-{rounds}", max(ours)),
                max_ratio=TARGET,
                unit="chars",
            ),
            Row.of(
                "P3",
                f"{role}, transcript replay",
                exact("round 1", replay[0]),
                exact(f"round {rounds}", replay[-1]),
                unit="chars",
            ),
        ]
    print_rows("P3 prompt growth over the review rounds, characters", rows)
    return rows


if __name__ == "__main__":
    main()
