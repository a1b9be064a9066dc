"""The review page: the threads waiting for a person, and a form that answers one.

The server's own ``http.app`` (``app/server/http_app.py``) mounts these routes under
``/review``, beside the API ``langgraph dev`` and ``handoff serve`` already answer:

* ``GET /review``: every thread of the project's database that waits for a person, with
  what it waits for.
* ``GET /review/threads/{thread_id}``: the open ``HumanRequest`` (question, leading facts,
  the research's open questions, what changed, the pause's own details, when it expires),
  the current draft rendered with each ``[claim-N]`` a link to its passage, and one form per
  action the request allows, with the fields its pause declares for that action
  (``graphs.pauses``: a reason, answers to the open questions, constraints, details). A
  thread that waits for nobody shows its outcome; one the server cannot run (started
  elsewhere, its id no UUID) shows the ``handoff resume`` that answers it.
* ``GET /review/threads/{thread_id}/sources/{source_id}``: the snapshot research read,
  verified against the sha256 it recorded, every fact's span quoting it marked
  (``<mark id="claim-N">``), so a citation's link lands on its passage.
* ``POST /review/threads/{thread_id}/decision``: the form, as a ``HumanDecision``.

A decision is posted as every other client posts one: a run on the thread with
``command={"resume": <HumanDecision>}``, through the server's own runs API (langgraph-sdk's
in-process client), so the server's thread status, the thread's lock and the rules of
``app/server/thread_rules.py`` apply, and the page waits for the run. The in-process client
passes the server's ``auth`` handlers by, so the page marks the run as carrying a decision
itself (``RUN_ASKS``), as the ``create_run`` handler would; the rules checked under the lock
then apply to it as to any client's. Before anything is posted the decision is checked
against the thread's open request and its pause (``check_decision``): one that does not fit
(a rejection without a reason) is refused with a 400 page naming the field, and the thread
keeps waiting on the same checkpoint.

What the page shows is escaped, always: every value goes through :func:`html`, which
escapes whatever is not already :class:`Html`, and a draft's markdown is rendered with raw
HTML off and images off. The page loads nothing from elsewhere (inline CSS, no script; its
``Content-Security-Policy`` allows neither). A post must come from the page itself: its
``Origin`` (or, without one, its ``Referer``) must be the server's own, and it must carry
the thread's token (an HMAC of the thread id under a secret made when the process starts);
anything else is refused with 403 and changes nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit
from uuid import UUID

from markdown_it import MarkdownIt
from markdown_it.token import Token
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from app.corpus.citations import find_source, marked_regions, snapshot_text
from app.errors import InvalidDecision
from app.exit_codes import for_error
from app.server.artifacts_http import READER, STATUS
from app.workflow import Workflow
from app.workflow.decisions import check_decision, pause_of
from app.workflow.ids import check_thread_id
from contracts import (
    DraftArticle,
    Fact,
    FactSummary,
    HumanDecision,
    HumanRequest,
    ResearchBundle,
    RunOutcome,
)
from graphs.errors import HandoffError
from graphs.human import expired_decision, has_expired
from graphs.markdown import CITATION
from graphs.pauses import Action, Pause

ROOT = "/review"
"""Where the page is mounted in the server's ``http.app``."""
DECIDED_BY = "review page"
"""Who decided, when the form leaves its name empty."""
MAX_FORM_BYTES = 64 * 1024
"""The largest form a post may send; a decision's fields are far smaller."""
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""Every page's headers: nothing runs, nothing loads from elsewhere, no framing, no cache."""
STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem;
       padding: 0 1rem; color: #1b1b1b; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #ddd;
         vertical-align: top; }
pre.passage { white-space: pre-wrap; background: #f7f7f7; padding: 1rem; }
mark { background: #fff3a8; }
mark:target { background: #ffd23f; outline: 2px solid #c99700; }
.draft { border-left: 3px solid #ddd; padding-left: 1rem; }
.refused { border: 2px solid #b00020; padding: .5rem 1rem; }
form { border: 1px solid #ddd; padding: .5rem 1rem; margin: 1rem 0; }
label { display: block; margin-top: .5rem; }
textarea, input[type=text] { width: 100%; box-sizing: border-box; }
code { word-break: break-all; }
"""


class Html(str):
    """Markup that is already safe to show: made by :func:`html` or the draft's renderer."""


def html(template: str, /, **values: object) -> Html:
    """``template`` with each ``{name}`` filled in, escaped unless it is already Html.

    Escaping quotes too, so a value is as safe in a (double-quoted) attribute as in text.
    """
    safe = {
        name: value if isinstance(value, Html) else escape(str(value), quote=True)
        for name, value in values.items()
    }
    return Html(template.format(**safe))


def joined(parts: Iterable[Html], separator: str = "\n") -> Html:
    """Pieces of markup joined into one (only Html may be joined)."""
    pieces = list(parts)
    for piece in pieces:
        if not isinstance(piece, Html):
            raise TypeError(f"only Html is joined, not {type(piece).__name__}: escape it first")
    return Html(separator.join(pieces))


# -- who may post -------------------------------------------------------------------------


def csrf_token(secret: bytes, thread_id: str) -> str:
    """The token a thread's forms carry: an HMAC of the thread id under ``secret``."""
    return hmac.new(secret, f"decide:{thread_id}".encode(), hashlib.sha256).hexdigest()


def cross_site(headers: Mapping[str, str], scheme: str) -> str | None:
    """Why a post is not from a page of this server, or None when it is.

    The post's ``Origin`` (or, when a browser sends none, its ``Referer``) must name this
    server as the request reached it: the same scheme, host and port as its ``Host``.
    """
    host = headers.get("host", "").strip().lower()
    if not host:
        return "the request names no Host"
    claimed = headers.get("origin")
    named = "Origin"
    if claimed is None:
        claimed, named = headers.get("referer"), "Referer"
    if not claimed:
        return "the request has neither an Origin nor a Referer header"
    parts = urlsplit(claimed.strip())
    if f"{parts.scheme}://{parts.netloc}".lower() != f"{scheme}://{host}":
        return f"its {named} {claimed!r} is not this server ({scheme}://{host})"
    return None


@dataclass(frozen=True)
class Guard:
    """The process's secret, and the checks a post passes before it is read as a decision."""

    secret: bytes

    @classmethod
    def new(cls) -> Guard:
        """A guard with a fresh random secret (tokens of an earlier process are void)."""
        return cls(secrets.token_bytes(32))

    def token(self, thread_id: str) -> str:
        """The token the thread's forms carry."""
        return csrf_token(self.secret, thread_id)

    def refusal(self, request: Request, thread_id: str, form: Mapping[str, str]) -> str | None:
        """Why the post is refused as cross-site, or None when it comes from the page."""
        foreign = cross_site(request.headers, request.url.scheme)
        if foreign is not None:
            return foreign
        if not hmac.compare_digest(form.get("token", ""), self.token(thread_id)):
            return "its form token is missing or not this thread's (reload the page)"
        return None


# -- links --------------------------------------------------------------------------------


def thread_path(thread_id: str) -> str:
    """The page of one thread."""
    return f"{ROOT}/threads/{quote(thread_id, safe='')}"


def passage_path(thread_id: str, source_id: str, claim_id: str | None = None) -> str:
    """The page of a source's snapshot; with a claim, at that claim's passage."""
    path = f"{thread_path(thread_id)}/sources/{quote(source_id, safe='')}"
    return f"{path}#{quote(claim_id, safe='')}" if claim_id else path


# -- the draft, with its citations linked -------------------------------------------------


def _markdown() -> MarkdownIt:
    """CommonMark with tables; raw HTML is shown as text and images are not loaded."""
    return MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")


def render_draft(markdown: str, link: Callable[[str], str | None]) -> Html:
    """The draft as HTML, each ``[claim-N]`` a link to ``link(claim_id)`` where it has one.

    The markdown renderer escapes every text and attribute; links whose scheme runs code
    are dropped by it (``validateLink``). Citations are linked in the token stream, never
    in the rendered text, so no markup is ever spliced into it.
    """
    md = _markdown()
    tokens = md.parse(markdown)
    for token in tokens:
        if token.type == "inline" and token.children:
            token.children = _cite(token.children, link)
    return Html(md.renderer.render(tokens, md.options, {}))


def _cite(children: list[Token], link: Callable[[str], str | None]) -> list[Token]:
    """Inline tokens with each citation in plain text (not inside a link) made a link."""
    made: list[Token] = []
    inside_link = 0
    for child in children:
        inside_link += {"link_open": 1, "link_close": -1}.get(child.type, 0)
        if child.type != "text" or inside_link:
            made.append(child)
            continue
        position = 0
        for match in CITATION.finditer(child.content):
            href = link(match[1])
            if href is None:
                continue
            made.append(_text(child.content[position : match.start()]))
            made.append(Token("link_open", "a", 1, attrs={"href": href, "class": "cite"}))
            made.append(_text(match[0]))
            made.append(Token("link_close", "a", -1))
            position = match.end()
        made.append(_text(child.content[position:]))
    return [token for token in made if token.type != "text" or token.content]


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


# -- a source's passages ------------------------------------------------------------------


def marked_passages(text: str, facts: Sequence[Fact]) -> Html:
    """The snapshot ``text``, escaped, each fact's span marked ``<mark id="claim-N">``.

    A fact whose quote is not at its span is not marked (the Reviewer refuses it too).
    Overlapping spans are marked once; the mark names each claim, and every claim id but
    the first is an anchor placed at its start.
    """
    verbatim = [fact for fact in facts if text[fact.span.start : fact.span.end] == fact.quote]
    parts: list[Html] = []
    position = 0
    for start, end, ids in marked_regions([(f.span.start, f.span.end, f.id) for f in verbatim]):
        anchors = joined((html('<span id="{id}"></span>', id=other) for other in ids[1:]), "")
        parts.append(html("{text}", text=text[position:start]))
        parts.append(
            html(
                '{anchors}<mark id="{id}" title="{ids}">{quote}</mark>',
                anchors=anchors,
                id=ids[0],
                ids=", ".join(ids),
                quote=text[start:end],
            )
        )
        position = end
    parts.append(html("{text}", text=text[position:]))
    return joined(parts, "")


# -- pages --------------------------------------------------------------------------------


def page(title: str, body: Html, status: int = 200) -> HTMLResponse:
    """A whole page: its title, inline style, the body; with the security headers."""
    document = html(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{title}</title><style>{style}</style></head>"
        '<body><nav><a href="{root}">Waiting threads</a></nav>\n{body}\n</body></html>',
        title=title,
        style=Html(STYLE),
        root=ROOT,
        body=body,
    )
    return HTMLResponse(document, status_code=status, headers=SECURITY_HEADERS)


def refused_page(title: str, why: str, status: int, thread_id: str | None = None) -> HTMLResponse:
    """A refusal: what was refused, why (one line), and the way back."""
    back = (
        html('<p><a href="{href}">Back to the thread</a></p>', href=thread_path(thread_id))
        if thread_id is not None
        else Html("")
    )
    return page(
        title,
        html(
            '<h1>{title}</h1><p class="refused" role="alert">{why}</p>{back}',
            title=title,
            why=why,
            back=back,
        ),
        status,
    )


def expires(request: HumanRequest) -> str:
    """When the request expires (its task's ``decision_timeout``), as shown; "" if never."""
    if request.expires_at is None:
        return ""
    return f"{request.expires_at:%Y-%m-%d %H:%M:%S} UTC"


def waiting_list(workflow: Workflow) -> Html:
    """The table of threads waiting for a person, or a line saying none is."""
    rows: list[Html] = []
    for thread_id in workflow.threads():
        request = workflow.pending(thread_id)
        if request is None:
            continue
        rows.append(
            html(
                '<tr><td><a href="{href}">{thread}</a></td><td>{kind}</td><td>{question}</td>'
                "<td>{actions}</td><td>{expires}</td></tr>",
                href=thread_path(thread_id),
                thread=thread_id,
                kind=request.request_kind,
                question=request.question,
                actions=", ".join(request.allowed_actions),
                expires=expires(request),
            )
        )
    if not rows:
        return Html("<p>No thread is waiting for a person.</p>")
    return html(
        '<table id="waiting"><thead><tr><th>Thread</th><th>Waits for</th><th>Question</th>'
        "<th>Actions</th><th>Expires</th></tr></thead><tbody>{rows}</tbody></table>",
        rows=joined(rows),
    )


def request_view(thread_id: str, request: HumanRequest, research: ResearchBundle | None) -> Html:
    """What the person is asked, and the evidence the request shows."""
    facts = [_fact_item(thread_id, fact, research) for fact in request.top_facts]
    questions = [
        html("<li><code>{id}</code>: {text}</li>", id=question.id, text=question.text)
        for question in request.open_questions
    ]
    changes = [html("<li>{change}</li>", change=change) for change in request.changes]
    details = [
        html("<dt>{name}</dt><dd><code>{value}</code></dd>", name=name, value=_json(value))
        for name, value in (request.details or {}).items()
    ]
    evidence = [
        html(
            "<li><code>{uri}</code> revision {revision}, sha256 <code>{sha}</code></li>",
            uri=ref.uri,
            revision=ref.revision,
            sha=ref.sha256,
        )
        for ref in request.artifacts
    ]
    when = expires(request)
    return html(
        '<section id="request"><h2>{question}</h2>'
        "<p>Waits for <strong>{kind}</strong> (<code>{interrupt}</code>); "
        "actions: {actions}.{expiry}</p>"
        "{facts}{questions}{changes}{details}{evidence}</section>",
        question=request.question,
        kind=request.request_kind,
        interrupt=request.interrupt_id,
        actions=", ".join(request.allowed_actions),
        expiry=html(' <span id="expires">Expires {when}.</span>', when=when) if when else Html(""),
        facts=_listed("Leading facts", "facts", facts),
        questions=_listed("Open questions", "open-questions", questions),
        changes=_listed("What changed", "changes", changes),
        details=html('<h3>Details</h3><dl id="details">{items}</dl>', items=joined(details))
        if details
        else Html(""),
        evidence=_listed("Evidence", "evidence", evidence),
    )


def _fact_item(thread_id: str, fact: FactSummary, research: ResearchBundle | None) -> Html:
    """A leading fact; its id a link to its passage when research read its source."""
    known = research is not None and research.fact(fact.claim_id) is not None
    claim_id = (
        html(
            '<a class="fact" href="{href}">{id}</a>',
            href=passage_path(thread_id, fact.source_id, fact.claim_id),
            id=fact.claim_id,
        )
        if known
        else html("{id}", id=fact.claim_id)
    )
    return html(
        "<li>{claim_id} ({confidence}, {source}): {claim}</li>",
        claim_id=claim_id,
        confidence=fact.confidence,
        source=fact.source_id,
        claim=fact.claim,
    )


def _json(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _listed(title: str, element_id: str, items: list[Html]) -> Html:
    if not items:
        return Html("")
    return html(
        '<h3>{title}</h3><ul id="{id}">{items}</ul>',
        title=title,
        id=element_id,
        items=joined(items),
    )


def draft_view(thread_id: str, markdown: str, research: ResearchBundle | None) -> Html:
    """The current draft, rendered, each citation of a fact research made a link."""

    def link(claim_id: str) -> str | None:
        fact = research.fact(claim_id) if research is not None else None
        return passage_path(thread_id, fact.source_id, claim_id) if fact else None

    return html(
        '<section id="draft"><h2>The draft</h2><div class="draft">{body}</div></section>',
        body=render_draft(markdown, link),
    )


def decision_forms(thread_id: str, request: HumanRequest, pause: Pause[Any], token: str) -> Html:
    """One form per allowed action, with the fields the pause declares for it."""
    forms = [
        _form(thread_id, request, pause.action(name), token)
        for name in request.allowed_actions
        if name in pause.names
    ]
    return html('<section id="decide"><h2>Decide</h2>{forms}</section>', forms=joined(forms))


def _form(thread_id: str, request: HumanRequest, action: Action, token: str) -> Html:
    fields: list[Html] = []
    needed = " (required)" if "reason" in action.needs else ""
    fields.append(
        html(
            '<label>Reason{needed}<textarea name="reason" rows="2"></textarea></label>',
            needed=needed,
        )
    )
    if action.allows("answers"):
        fields += [
            html(
                "<label>Answer to <code>{id}</code>: {text}"
                '<textarea name="answer:{id}" rows="2"></textarea></label>',
                id=question.id,
                text=question.text,
            )
            for question in request.open_questions
        ]
    if action.allows("constraints"):
        fields.append(
            Html(
                "<label>Constraints to add, one per line"
                '<textarea name="constraints" rows="2"></textarea></label>'
            )
        )
    if action.allows("details"):
        needed = " (required)" if "details" in action.needs else ""
        fields.append(
            html(
                '<label>Details, as a JSON object{needed}<textarea name="details" rows="3">'
                "</textarea></label>",
                needed=needed,
            )
        )
    return html(
        '<form method="post" action="{post}" id="decide-{action}">'
        '<input type="hidden" name="token" value="{token}">'
        '<input type="hidden" name="interrupt_id" value="{interrupt}">'
        "{fields}"
        '<label>Decided by<input type="text" name="decided_by" placeholder="{by}"></label>'
        '<p><button type="submit" name="action" value="{action}">{action}</button></p></form>',
        post=f"{thread_path(thread_id)}/decision",
        action=action.name,
        token=token,
        interrupt=request.interrupt_id,
        fields=joined(fields),
        by=DECIDED_BY,
    )


def outcome_view(thread_id: str, outcome: RunOutcome) -> Html:
    """A thread that waits for nobody: where it stands, and its article when it has one."""
    article = (
        html('<p><a id="article" href="{href}">The article</a></p>', href=outcome.article_path)
        if outcome.article_path is not None
        else Html("")
    )
    return html(
        '<section id="outcome"><h2>Nothing waits for a person here</h2>'
        '<p>State <strong id="state">{state}</strong>, result {result}.</p>'
        "<p>{reason}</p>{article}</section>",
        state=outcome.state.value,
        result=outcome.result_status or "none yet",
        reason=outcome.reason or "",
        article=article,
    )


def decision_of(form: Mapping[str, str]) -> dict[str, Any]:
    """The decision a form gives, as data: only the fields filled in (checked later)."""
    decision: dict[str, Any] = {
        "interrupt_id": form.get("interrupt_id", ""),
        "action": form.get("action", ""),
        "decided_by": form.get("decided_by", "").strip() or DECIDED_BY,
    }
    reason = form.get("reason", "").strip()
    if reason:
        decision["reason"] = reason
    answers = [
        {"question_id": name.removeprefix("answer:"), "text": text.strip()}
        for name, text in form.items()
        if name.startswith("answer:") and text.strip()
    ]
    if answers:
        decision["answers"] = answers
    constraints = [line.strip() for line in form.get("constraints", "").splitlines()]
    if any(constraints):
        decision["constraints"] = [line for line in constraints if line]
    details = form.get("details", "").strip()
    if details:
        try:
            decision["details"] = json.loads(details)
        except json.JSONDecodeError as error:
            raise InvalidDecision(
                f"invalid decision for {decision['interrupt_id']!r}: details: not JSON "
                f"({error.msg} at line {error.lineno}, column {error.colno})"
            ) from None
    return decision


_FORM_NAME = re.compile(
    r"^(?:token|interrupt_id|action|decided_by|reason|constraints|details|answer:q-[0-9]+)$"
)
"""The fields this page's forms have; a post with any other is not one of them."""


async def read_form(request: Request) -> dict[str, str] | Response:
    """The post's fields, or the page refusing a body that is no form of this page."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return refused_page("Not a form", f"a decision is posted as a form, not {kind!r}", 415)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return refused_page("Form too large", f"a form is at most {MAX_FORM_BYTES} bytes", 413)
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=100)
    except (UnicodeDecodeError, ValueError) as error:
        return refused_page("Not a form", f"the form cannot be read: {error}", 400)
    form: dict[str, str] = {}
    for name, value in pairs:
        if not _FORM_NAME.match(name):
            return refused_page("Not this page's form", f"unknown field {name!r}", 400)
        if name in form:
            return refused_page("Not this page's form", f"field {name!r} is given twice", 400)
        form[name] = value
    return form


@dataclass
class ReviewPage:
    """The page's routes over one read-only Workflow, posting through the server's runs API.

    ``workflow`` gives the server process's read-only Workflow (``artifacts_http.READER``);
    ``post`` resumes a thread with a checked decision and answers the run's error, or None
    (:func:`post_through_server`).
    """

    workflow: Callable[[], Workflow]
    post: Callable[[str, HumanDecision], Awaitable[str | None]]
    guard: Guard

    def routes(self) -> list[Route]:
        """The page's routes, under ``ROOT``."""
        return [
            Route(ROOT, self.waiting, methods=["GET"]),
            Route(f"{ROOT}/threads/{{thread_id}}", self.thread, methods=["GET"]),
            Route(
                f"{ROOT}/threads/{{thread_id}}/sources/{{source_id}}", self.source, methods=["GET"]
            ),
            Route(f"{ROOT}/threads/{{thread_id}}/decision", self.decide, methods=["POST"]),
        ]

    def waiting(self, request: Request) -> Response:
        """Every thread waiting for a person."""
        body = html(
            "<h1>Threads waiting for a person</h1>{table}",
            table=waiting_list(self.workflow()),
        )
        return page("Waiting threads", body)

    def thread(self, request: Request) -> Response:
        """One thread: its request, its draft, and the forms that answer it."""
        return self._answered(request, self._thread)

    def _thread(self, thread_id: str, request: Request) -> Response:
        workflow = self.workflow()
        pending = workflow.pending(thread_id)
        state = workflow.state(thread_id)
        research = state.get("research")
        draft: DraftArticle | None = state.get("draft")
        parts: list[Html] = [html("<h1>Thread <code>{id}</code></h1>", id=thread_id)]
        if pending is None:
            parts.append(outcome_view(thread_id, workflow.outcome(thread_id)))
        else:
            parts.append(request_view(thread_id, pending, research))
        if draft is not None:
            markdown = workflow.artifact(thread_id, "draft").decode("utf-8", errors="replace")
            parts.append(draft_view(thread_id, markdown, research))
        if pending is not None and not runs_here(thread_id):
            parts.append(html('<p id="elsewhere">{why}</p>', why=not_run_here(thread_id)))
        elif pending is not None:
            pause = pause_of(pending, workflow.pauses)
            parts.append(decision_forms(thread_id, pending, pause, self.guard.token(thread_id)))
        return page(f"Thread {thread_id}", joined(parts))

    def source(self, request: Request) -> Response:
        """A source's snapshot, verified, with every fact's passage in it marked."""
        return self._answered(request, self._source)

    def _source(self, thread_id: str, request: Request) -> Response:
        source_id = request.path_params["source_id"]
        workflow = self.workflow()
        workflow.artifact_ref(thread_id, source_id)  # refused unless the thread's own
        research = workflow.state(thread_id).get("research")
        source = find_source(research, source_id, thread_id)
        text = snapshot_text(source, workflow.context.store)  # sha256 checked
        facts = [fact for fact in research.facts if fact.source_id == source_id] if research else []
        body = html(
            "<h1>{title}</h1><p><code>{uri}</code>, sha256 <code>{sha}</code> (verified)</p>"
            '<p><a href="{back}">Back to the thread</a></p>'
            '<pre class="passage" id="snapshot">{text}</pre>',
            title=source.title,
            uri=source.uri,
            sha=source.sha256,
            back=thread_path(thread_id),
            text=marked_passages(text, facts),
        )
        return page(f"{source_id} of {thread_id}", body)

    def _answered(self, request: Request, answer: Callable[[str, Request], Response]) -> Response:
        """The page, or the project's refusal of it as a page (4xx, one line)."""
        thread_id = request.path_params["thread_id"]
        try:
            return answer(check_thread_id(thread_id), request)
        except HandoffError as error:
            status = STATUS.get(for_error(error))
            if status is None:
                raise
            return refused_page("Cannot show this", error.message, status)

    async def decide(self, request: Request) -> Response:
        """Check the form's decision against the open request, then resume the thread."""
        thread_id = request.path_params["thread_id"]
        form = await read_form(request)
        if isinstance(form, Response):
            return form
        refusal = self.guard.refusal(request, thread_id, form)
        if refusal is not None:
            return refused_page("Cross-site post refused", f"{refusal}; nothing was changed", 403)
        try:
            checked = await asyncio.to_thread(self._checked, check_thread_id(thread_id), form)
        except HandoffError as error:
            status = STATUS.get(for_error(error))
            if status is None:
                raise
            title = "Decision refused" if status == 400 else "Cannot decide"
            return refused_page(title, f"{error.message}; nothing was changed", status, thread_id)
        if isinstance(checked, Response):
            return checked
        decision, expired = checked
        if not runs_here(thread_id):
            why = f"{not_run_here(thread_id)}; nothing was changed"
            return refused_page("Not a thread of this server", why, 409, thread_id)
        failed = await self.post(thread_id, decision)  # past its expiry: the default's answer
        if failed is not None:
            return refused_page("The run did not take the decision", failed, 409, thread_id)
        if expired is not None:
            why = (
                f"the request expired at {expires(expired.request)} and can no longer be answered: "
                f"its default, {expired.default}, was recorded instead; the decision was not used"
            )
            return refused_page("Request expired", why, 409, thread_id)
        return RedirectResponse(thread_path(thread_id), status_code=303)

    def _checked(
        self, thread_id: str, form: Mapping[str, str]
    ) -> tuple[HumanDecision, Expired | None] | Response:
        """The form's decision, checked; and, when the request has expired, its default."""
        workflow = self.workflow()
        pending = workflow.pending(thread_id)
        if pending is None:
            return refused_page(
                "Not waiting",
                f"thread {thread_id!r} is not waiting for a decision; nothing was changed",
                409,
                thread_id,
            )
        decision = check_decision(pending, decision_of(form), workflow.pauses)
        if not has_expired(pending, workflow.context.clock()):
            return decision, None
        default = expired_decision(pending, pause_of(pending, workflow.pauses))
        return decision, Expired(pending, default.action)


@dataclass(frozen=True)
class Expired:
    """A request found past its expiry when a decision for it came, and its default action."""

    request: HumanRequest
    default: str


def runs_here(thread_id: str) -> bool:
    """Whether the server can run the thread: its runs API takes UUID thread ids only."""
    try:
        UUID(thread_id)
    except ValueError:
        return False
    return True


def not_run_here(thread_id: str) -> str:
    """Why a thread started elsewhere (its id no UUID) is answered elsewhere, and how."""
    return (
        f"thread {thread_id!r} was started outside this server and its id is no UUID, which "
        f"the server's runs API needs: answer it with `handoff resume {thread_id}`"
    )


async def post_through_server(thread_id: str, decision: HumanDecision) -> str | None:
    """Resume the thread with ``decision`` as a run of this server; the run's error, or None.

    langgraph-sdk's client without a URL talks to the server it runs in, in process. Its
    requests pass the server's auth handlers by, so the run is marked as carrying a decision
    here, as the ``create_run`` handler marks a client's: the graph factory then checks the
    thread's rules under its lock (``refuse_at_start``). A thread the CLI started is made
    known to the server first (``if_not_exists="create"``), as ``threads.create`` would (its
    id must be a UUID, :func:`runs_here`).
    """
    import httpx
    from langgraph_sdk import get_client
    from langgraph_sdk.schema import Command

    from app.server.auth import run_asks
    from app.server.graph import GRAPH_ID
    from app.server.thread_rules import RUN_ASKS

    command: Command = {"resume": decision.model_dump(mode="json")}
    async with get_client(api_key=None) as client:
        try:
            result = await client.runs.wait(
                thread_id,
                GRAPH_ID,
                command=command,
                metadata={RUN_ASKS: run_asks(None, dict(command)).value},
                if_not_exists="create",
                raise_error=False,
            )
        except httpx.HTTPStatusError as refused:  # the server answered the run with an error
            return f"{refused.response.status_code}: {refused.response.text}"
    failed = result.get("__error__") if isinstance(result, dict) else None
    if isinstance(failed, dict):
        return f"{failed.get('error')}: {failed.get('message')}"
    return None


def review_routes() -> list[Route]:
    """The page's routes for the server: its read-only Workflow, its runs API, a new secret."""
    return ReviewPage(READER.workflow, post_through_server, Guard.new()).routes()
