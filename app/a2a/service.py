"""The A2A server: the agent card and the JSON-RPC endpoint, on the settings' storage.

``handoff a2a`` serves it with uvicorn, with ``GET /threads/{id}/artifacts/{name}`` (the
route ``handoff serve`` mounts) so a published outcome's ``article_path`` reads here too.
It listens on 127.0.0.1 unless told otherwise: it has no authentication of its own
(docs/a2a.md says how to put one in front of it). A request body that is not JSON, is
over ``max_request_bytes`` or nests deeper than ``MAX_JSON_DEPTH``, is refused before it
is parsed.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import accumulate
from urllib.parse import urlsplit

from a2a.server.jsonrpc_models import JSONParseError
from a2a.server.request_handlers import build_error_response
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.utils.constants import DEFAULT_RPC_URL
from starlette.applications import Starlette
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.a2a.card import agent_card
from app.a2a.handler import WorkflowRequestHandler
from app.a2a.store import ThreadTaskStore
from app.a2a.threads import Threads
from app.server import artifacts_http
from app.settings import Settings

MAX_REQUEST_BYTES = 1_000_000
PARKED_SECONDS = 300.0
"""How long a task waiting for a person keeps its in-memory SDK state; a later message
rebuilds it from the thread."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
DRAIN_BYTES = 16_000_000
"""How much of a refused body is read and dropped before answering."""
MAX_JSON_DEPTH = 64
"""How deep a request body's arrays and objects may nest. A message needs about ten
levels; the SDK's parsers recurse once or more per level, so a body nested thousands deep
would fail inside them (as an internal error) instead of being refused as what it is."""
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
NESTING_STEP = [1 if byte in b"[{" else -1 for byte in range(256)]


def json_depth(body: bytes) -> int:
    """How deep a JSON text's arrays and objects nest, counted without parsing it.

    Strings are taken out first, so brackets inside them do not count; the count runs
    in constant stack, however deep the text goes.
    """
    brackets = JSON_STRING.sub(b"", body).translate(None, NOT_BRACKETS)
    return max(accumulate(map(NESTING_STEP.__getitem__, brackets)), default=0)


def allowed_hosts(url: str) -> list[str]:
    """The Host headers answered: this machine's names and the one in the agent's URL.

    A page whose name an attacker re-points at 127.0.0.1 (DNS rebinding) becomes
    same-origin with this server and needs no CORS to send JSON; its requests still carry
    its own name in Host, and are refused.
    """
    named = urlsplit(url).hostname
    return [*LOOPBACK_NAMES, *([named] if named else [])]


JSON_TYPES = ("application/json", "application/a2a+json")
"""What a request body may be. A browser sends any other type (text/plain, a form) to any
origin without asking first, so a page on another site could start tasks here; a JSON body
needs a CORS preflight, which this server never grants."""


class RequestGuard:
    """Refuse, unread, a POST body that is not JSON (415) or is over ``limit`` bytes (413).

    A body nested deeper than ``MAX_JSON_DEPTH`` is answered as JSON-RPC answers JSON it
    cannot parse: a parse error (-32700).
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared type and length, then count the body as it arrives."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        kind = headers.get(b"content-type", b"").decode("latin-1").split(";")[0].strip().lower()
        if scope.get("method") == "POST" and kind not in JSON_TYPES:
            await self._refuse(
                scope, receive, send, 415, f"a request body must be JSON, not {kind!r}"
            )
            return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        body = bytearray()  # read here, so a body sent without a length is held to it too
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)  # the client went away: let it see
                return
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._refuse(scope, receive, send, more=bool(message.get("more_body")))
                return
            if not message.get("more_body", False):
                break
        if json_depth(bytes(body)) > MAX_JSON_DEPTH:
            refused = JSONParseError(
                message=f"request body nests deeper than {MAX_JSON_DEPTH} levels of arrays "
                "and objects; nothing was read"
            )
            await JSONResponse(build_error_response(None, refused))(scope, receive, send)
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()  # the disconnect, when the app waits for one
            delivered = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        status: int = 413,
        why: str = "",
        more: bool = True,
    ) -> None:
        """Answer why, once the rest of a modest body was read and dropped.

        The client then hears the answer instead of a reset mid-send; a body over
        DRAIN_BYTES is cut off all the same.
        """
        drained = 0
        while more and drained < DRAIN_BYTES:
            message = await receive()
            drained += len(message.get("body", b""))
            more = message["type"] == "http.request" and bool(message.get("more_body", False))
        why = why or f"request body over {self.limit} bytes; nothing was read"
        await JSONResponse({"error": why}, status_code=status)(scope, receive, send)


def build_app(
    settings: Settings, *, url: str, max_runs: int = 4, max_request_bytes: int = MAX_REQUEST_BYTES
) -> Starlette:
    """The ASGI app serving the agent reached at ``url`` (the card names it)."""
    threads = Threads(settings, max_runs=max_runs)
    store = ThreadTaskStore(threads)
    card = agent_card(url)
    handler = WorkflowRequestHandler(
        threads, store, agent_card=card, interrupted_task_timeout=PARKED_SECONDS
    )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await handler.aclose()
            threads.close()

    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url=DEFAULT_RPC_URL),
            *artifacts_http.app.routes,  # so an outcome's article_path reads here too
        ],
        lifespan=lifespan,
    )
    app.add_middleware(RequestGuard, limit=max_request_bytes)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(url))
    return app
