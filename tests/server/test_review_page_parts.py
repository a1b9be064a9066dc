"""The review page's parts, without a server or a browser: escaping, the cross-site checks,
the draft's citations, a source's marked passages, and the page over a real Workflow.

The page posts decisions through the server's runs API (tests/server/test_review_page.py
drives that in Chromium); here it is given the Python API's resume instead, so the page's
own checks run in one process.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from html import unescape

import pytest
from langgraph.types import Command
from starlette.applications import Starlette
from starlette.testclient import TestClient

from app.server.review_page import (
    Guard,
    Html,
    ReviewPage,
    cross_site,
    csrf_token,
    decision_of,
    html,
    joined,
    marked_passages,
    render_draft,
    thread_path,
)
from app.workflow import Workflow
from contracts import Fact, HumanDecision, HumanRequest, TaskState
from graphs.human import EXPIRED
from tests.conftest import OBJECTIVE

ORIGIN = "http://testserver"
"""Where Starlette's TestClient says its requests go (its Host)."""
GUARD = Guard(b"the page's secret in these tests")


def test_every_value_is_escaped_in_text_and_attributes_unless_it_is_html_already() -> None:
    made = html(
        '<p title="{title}">{text}{safe}</p>',
        title='" onmouseover="alert(1)',
        text="<script>alert('x')</script> & more",
        safe=Html("<br>"),
    )
    assert made == (
        '<p title="&quot; onmouseover=&quot;alert(1)">'
        "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more<br></p>"
    )
    assert isinstance(made, Html)
    assert joined([made, Html("<hr>")], "") == made + "<hr>"
    with pytest.raises(TypeError, match="escape it first"):
        joined([made, "<b>raw</b>"])  # type: ignore[list-item]


def test_a_post_is_from_this_server_only_when_its_origin_or_referer_names_it() -> None:
    own = {"host": "127.0.0.1:2024"}
    assert cross_site({**own, "origin": "http://127.0.0.1:2024"}, "http") is None
    assert cross_site({**own, "referer": "http://127.0.0.1:2024/review/threads/a"}, "http") is None
    assert cross_site({"host": "LocalHost:2024", "origin": "http://localhost:2024"}, "http") is None
    for headers, why in (
        ({**own, "origin": "https://evil.example"}, "Origin 'https://evil.example' is not"),
        ({**own, "origin": "http://127.0.0.1:2025"}, "is not this server"),  # another port
        ({**own, "origin": "https://127.0.0.1:2024"}, "is not this server"),  # another scheme
        ({**own, "origin": "http://localhost:2024"}, "is not this server"),  # another name
        ({**own, "origin": "null"}, "Origin 'null'"),
        ({**own, "referer": "https://evil.example/"}, "Referer 'https://evil.example/'"),
        # an Origin is believed first: a Referer of ours does not make a foreign one ours
        ({**own, "origin": "https://evil.example", "referer": "http://127.0.0.1:2024/"}, "Origin"),
        (own, "neither an Origin nor a Referer"),
        ({"origin": "http://127.0.0.1:2024"}, "no Host"),
    ):
        refusal = cross_site(headers, "http")
        assert refusal is not None and why in refusal, (headers, refusal)


def test_a_form_token_belongs_to_one_thread_and_one_process() -> None:
    guard = Guard.new()
    assert re.fullmatch(r"[0-9a-f]{64}", guard.token("t-1"))
    assert guard.token("t-1") == csrf_token(guard.secret, "t-1")
    assert guard.token("t-1") != guard.token("t-2")
    assert Guard.new().token("t-1") != guard.token("t-1"), "a new process, a new secret"


def test_the_draft_is_rendered_escaped_and_each_known_citation_links_its_passage() -> None:
    markdown = (
        "# Title <b>bold</b>\n\n"
        "A claim [claim-1], an unknown one [claim-9], <script>alert(1)</script>.\n\n"
        "[run](javascript:alert(1)) ![pixel](https://tracker.example/p.png) "
        '[ok](https://example.org "see [claim-1]") [claim-1](https://example.org)\n'
    )
    rendered = render_draft(markdown, lambda claim: "/p#claim-1" if claim == "claim-1" else None)
    assert "<h1>Title &lt;b&gt;bold&lt;/b&gt;</h1>" in rendered
    assert 'A claim <a href="/p#claim-1" class="cite">[claim-1]</a>' in rendered
    assert "an unknown one [claim-9]" in rendered
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered and "<script" not in rendered
    assert "javascript:" not in rendered.replace("[run](javascript:alert(1))", "")
    assert "<img" not in rendered, "nothing is loaded from elsewhere"
    assert '<a href="https://example.org" title="see [claim-1]">ok</a>' in rendered
    assert rendered.count('class="cite"') == 1, "a citation inside a link stays that link"


def fact(claim_id: str, start: int, end: int, text: str, quote: str | None = None) -> Fact:
    return Fact.model_validate(
        {
            "id": claim_id,
            "source_id": "src-1",
            "quote": text[start:end] if quote is None else quote,
            "span": {"start": start, "end": end},
            "confidence": "medium",
            "provenance": {"producer": "research", "node": "research", "step": 1},
        }
    )


def test_a_source_is_shown_escaped_with_each_verbatim_passage_marked_once() -> None:
    text = "One <b>two</b> three. Four five six. Seven eight."
    facts = [
        fact("claim-1", 0, 20, text),
        fact("claim-2", 15, 36, text),  # overlaps claim-1
        fact("claim-3", 37, 49, text, quote="Twelve chars"),  # not what the snapshot says
    ]
    assert marked_passages(text, facts) == (
        '<span id="claim-2"></span><mark id="claim-1" title="claim-1, claim-2">'
        "One &lt;b&gt;two&lt;/b&gt; three. Four five six.</mark> Seven eight."
    )


def test_a_form_becomes_the_decision_it_fills_in_and_nothing_more() -> None:
    assert decision_of({"interrupt_id": "i", "action": "approve", "reason": " "}) == {
        "interrupt_id": "i",
        "action": "approve",
        "decided_by": "review page",
    }
    assert decision_of(
        {
            "interrupt_id": "i",
            "action": "revise",
            "decided_by": " ed ",
            "reason": " why ",
            "answer:q-1": " Champollion ",
            "answer:q-2": "",
            "constraints": "at most 200 words\n\n section: Young \n",
            "details": '{"a": [1]}',
        }
    ) == {
        "interrupt_id": "i",
        "action": "revise",
        "decided_by": "ed",
        "reason": "why",
        "answers": [{"question_id": "q-1", "text": "Champollion"}],
        "constraints": ["at most 200 words", "section: Young"],
        "details": {"a": [1]},
    }


# -- the page over a real Workflow ----------------------------------------------------------


@pytest.fixture
def page(workflow: Workflow) -> Iterator[TestClient]:
    """The page's routes over ``workflow``, deciding through ``Workflow.resume``."""

    async def resume(thread_id: str, decision: HumanDecision) -> str | None:
        await asyncio.to_thread(workflow.resume, thread_id, decision)
        return None

    routes = ReviewPage(lambda: workflow, resume, GUARD).routes()
    with TestClient(Starlette(routes=routes), follow_redirects=False) as client:
        yield client


def waiting_thread(workflow: Workflow, thread_id: str) -> HumanRequest:
    task = workflow.task(OBJECTIVE, policies={"require_approval": True})
    outcome = workflow.run(task, thread_id=thread_id)
    assert outcome.human_request is not None
    return outcome.human_request


def form_of(page: TestClient, thread_id: str, action: str) -> dict[str, str]:
    shown = page.get(f"/review/threads/{thread_id}")
    assert shown.status_code == 200
    assert shown.headers["content-security-policy"].startswith("default-src 'none'")
    form = re.search(rf'<form [^>]*id="decide-{action}">(.*?)</form>', shown.text, re.S)
    assert form is not None, shown.text
    hidden = re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form[1])
    return {**dict(hidden), "action": action}


def test_the_page_refuses_a_bad_or_foreign_post_and_posts_a_good_one(
    workflow: Workflow, page: TestClient
) -> None:
    thread_id = str(uuid.uuid4())  # as the server names threads
    request = waiting_thread(workflow, thread_id)
    listed = page.get("/review")
    assert f'<a href="/review/threads/{thread_id}">{thread_id}</a>' in listed.text
    checkpoints = workflow.checkpoint_count(thread_id)
    reject = form_of(page, thread_id, "reject")
    post = f"/review/threads/{thread_id}/decision"

    foreign = page.post(post, data=reject, headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403 and "nothing was changed" in foreign.text
    tokenless = page.post(post, data={**reject, "token": ""}, headers={"Origin": ORIGIN})
    assert tokenless.status_code == 403 and "form token" in tokenless.text
    unknown = page.post(post, data={**reject, "extra": "x"}, headers={"Origin": ORIGIN})
    assert unknown.status_code == 400 and "unknown field" in unknown.text
    no_reason = page.post(post, data=reject, headers={"Origin": ORIGIN})
    assert no_reason.status_code == 400 and "reason" in no_reason.text
    assert workflow.pending(thread_id) == request
    assert workflow.checkpoint_count(thread_id) == checkpoints

    approve = form_of(page, thread_id, "approve")
    approved = page.post(post, data=approve, headers={"Origin": ORIGIN})
    assert approved.status_code == 303
    assert approved.headers["location"] == f"/review/threads/{thread_id}"
    assert workflow.outcome(thread_id).state == TaskState.COMPLETED
    again = page.post(post, data=approve, headers={"Origin": ORIGIN})
    assert again.status_code == 409 and "not waiting" in again.text
    shown = page.get(f"/review/threads/{thread_id}")
    assert f'<strong id="state">{TaskState.COMPLETED.value}</strong>' in shown.text
    assert thread_id not in page.get("/review").text


def test_a_thread_whose_id_the_server_cannot_run_is_shown_with_how_to_answer_it(
    workflow: Workflow, page: TestClient
) -> None:
    request = waiting_thread(workflow, "t-cli")
    shown = page.get("/review/threads/t-cli")
    assert shown.status_code == 200 and "<form" not in shown.text
    assert "answer it with `handoff resume t-cli`" in unescape(shown.text)
    fields = {"token": GUARD.token("t-cli"), "interrupt_id": request.interrupt_id}
    decide, own = "/review/threads/t-cli/decision", {"Origin": ORIGIN}
    elsewhere = page.post(decide, data={**fields, "action": "approve"}, headers=own)
    assert elsewhere.status_code == 409
    assert "`handoff resume t-cli`; nothing was changed" in unescape(elsewhere.text)
    other_secret = {**fields, "token": Guard(b"another process").token("t-cli")}
    assert (
        page.post(decide, data={**other_secret, "action": "approve"}, headers=own).status_code
        == 403
    )
    assert workflow.pending("t-cli") == request


def test_an_unknown_thread_or_source_is_a_404_page_and_an_unsafe_id_a_400(
    workflow: Workflow, page: TestClient
) -> None:
    waiting_thread(workflow, "t-known")
    assert page.get("/review/threads/t-unknown").status_code == 404
    missing = page.get("/review/threads/t-known/sources/src-99")
    assert missing.status_code == 404 and "unknown source" in missing.text
    assert page.get("/review/threads/..%2Fetc").status_code in (400, 404)
    assert page.get("/review/threads/a%20b").status_code == 400


def test_a_request_that_expires_shows_when_in_the_list_and_on_its_page(
    workflow: Workflow, page: TestClient
) -> None:
    thread_id = str(uuid.uuid4())
    task = workflow.task(OBJECTIVE, policies={"require_approval": True, "decision_timeout": "24h"})
    request = workflow.run(task, thread_id=thread_id).human_request
    assert request is not None and request.expires_at is not None
    shown = f"{request.expires_at:%Y-%m-%d %H:%M:%S} UTC"
    assert f"<td>{shown}</td>" in page.get("/review").text
    assert f'<span id="expires">Expires {shown}.</span>' in page.get(thread_path(thread_id)).text


def test_a_decision_posted_after_the_expiry_is_refused_and_the_default_recorded(
    workflow: Workflow,
) -> None:
    """The page posts as a served client does: the paused node answers with the default."""

    async def served(thread_id: str, decision: HumanDecision) -> str | None:
        payload = Command(resume=decision.model_dump(mode="json"))
        config = workflow.config(thread_id)
        await asyncio.to_thread(workflow.graph.invoke, payload, config, context=workflow.context)
        return None

    thread_id = str(uuid.uuid4())
    task = workflow.task(OBJECTIVE, policies={"require_approval": True, "decision_timeout": "1s"})
    request = workflow.run(task, thread_id=thread_id).human_request
    assert request is not None and request.expires_at is not None
    routes = ReviewPage(lambda: workflow, served, GUARD).routes()
    with TestClient(Starlette(routes=routes), follow_redirects=False) as page:
        form = form_of(page, thread_id, "approve")
        time.sleep(max(0.0, (request.expires_at - datetime.now(UTC)).total_seconds()) + 0.1)
        posted = page.post(
            f"/review/threads/{thread_id}/decision", data=form, headers={"Origin": ORIGIN}
        )
    assert posted.status_code == 409 and "Request expired" in posted.text
    assert "its default, reject, was recorded instead" in posted.text
    [decision] = workflow.state(thread_id)["decisions"].decisions
    assert (decision.action, decision.decided_by) == ("reject", EXPIRED)
