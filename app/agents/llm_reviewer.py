"""Model-backed Reviewer: the deterministic checks, plus a model's critique on top.

The offline Reviewer's checks run first (citations walked back to the source snapshots,
support, word limit, sections). The model sees the draft, the facts it cites and those
findings, and may only add changes. The verdict is "approved" only when the checks found
nothing and the model approved: a model cannot approve an unsupported or unknown claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.agents import prompt_inputs, prompts, replies
from app.agents.apparatus import open_questions
from app.agents.reviewer import OfflineReviewerAgent
from app.agents.structured import ModelBacked
from contracts import (
    ErrorCode,
    Fact,
    RequiredChange,
    ReviewResult,
)
from graphs import AgentOutput, ReviewRequest


@dataclass
class LLMReviewerAgent(ModelBacked):
    """Reviewer = deterministic checks + a model's critique; the checks always stand."""

    checks: OfflineReviewerAgent = field(default_factory=OfflineReviewerAgent)

    def run(self, request: ReviewRequest) -> AgentOutput[ReviewResult]:
        """Check, ask for a critique, and decide with both."""
        task, bundle, draft = request.task, request.bundle, request.draft
        store, step = request.store, request.step
        findings = self.checks.check(task, bundle, draft, store, open_questions(request))
        cited: list[Fact] = [fact for fact in map(bundle.fact, findings.accepted) if fact]
        prompt = prompts.reviewer_prompt(
            task,
            findings.body,
            cited,
            findings.changes,
            revision=draft.revision,
            inputs=prompt_inputs.request_inputs(request, prompt_inputs.REVIEWER_LAYS_OUT),
        )
        reply = self.ask_model(prompt, replies.ReviewReply, step, "review", request.tools)
        critique = [
            RequiredChange(
                code=ErrorCode(item.code),
                reason=f"reviewer: {item.reason}",
                claim_id=item.claim_id,
                section=item.section,
            )
            for item in reply.value.changes
        ]
        return self.checks.conclude(
            task, bundle, draft, findings, store, step, critique=critique, tokens=reply.tokens
        )
