"""Model-backed Writer: a draft from the usable facts, every sentence citing claim ids.

The prompt holds the objective, the constraints in force, the facts the offline writer
would use too (``writable``: not excluded by an earlier review, none an aside), and the
last review's required changes; never an earlier draft or conversation. The draft's Open
questions and Sources are appended from the contracts (``app/agents/apparatus.py``), never
taken from the model. The Reviewer, not the Writer, decides whether the draft is
acceptable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.agents import prompt_inputs, prompts, replies
from app.agents.apparatus import open_questions, without_apparatus
from app.agents.article_text import draft_markdown
from app.agents.structured import ModelBacked
from app.agents.writer import OfflineWriterAgent, addressed_changes, writable
from app.text.primitives import word_count
from contracts import DraftArticle, Usage
from graphs import AgentOutput, WriteRequest


@dataclass
class LLMWriterAgent(ModelBacked):
    """Writer whose prose a model drafts from facts only."""

    fallback: OfflineWriterAgent = field(default_factory=OfflineWriterAgent)
    """Writes the (failed) draft when no usable fact is left: nothing to ask a model."""

    def run(self, request: WriteRequest) -> AgentOutput[DraftArticle]:
        """Draft round N+1 from the facts, addressing the last review's required changes."""
        task, handoff, bundle = request.task, request.handoff, request.bundle
        previous, review, store, step = (
            request.previous,
            request.review,
            request.store,
            request.step,
        )
        excluded = set(previous.excluded_claim_ids if previous else [])
        if review is not None:
            excluded |= set(review.rejected_claims)
        usable = writable(task, bundle, excluded)
        if not usable:
            return self.fallback.run(request)
        revision = (previous.revision + 1) if previous else 1
        prompt = prompts.writer_prompt(
            task,
            usable,
            revision=revision,
            changes=review.required_changes if review else (),
            excluded=sorted(excluded),
            decisions=handoff.accepted_decisions,
            inputs=prompt_inputs.request_inputs(request, prompt_inputs.WRITER_LAYS_OUT),
        )
        reply = self.ask_model(prompt, replies.DraftReply, step, "draft", request.tools)
        text = without_apparatus(reply.value.markdown.strip())
        body, cited = draft_markdown(text, bundle, open_questions(request))
        ref = store.put(step.artifact_id("draft"), "draft", body.encode(), "text/markdown")
        draft = DraftArticle(
            task_id=task.task_id,
            result_status="completed",
            revision=revision,
            body=ref,
            cited_claim_ids=cited,
            excluded_claim_ids=sorted(excluded),
            addressed_changes=addressed_changes(review),
            word_count=word_count(body),
        )
        return AgentOutput(draft, usage=Usage(tokens=reply.tokens))
