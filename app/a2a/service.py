"""The A2A server: the agent card and the JSON-RPC endpoint, on the settings' storage.

``handoff a2a`` serves it with uvicorn, with ``GET /threads/{id}/artifacts/{name}`` (the
route ``handoff serve`` mounts) so a published outcome's ``article_path`` reads here too.
It listens on 127.0.0.1 unless told otherwise: it has no authentication of its own
(docs/a2a.md says how to put one in front of it). A request body that is not JSON, or is
over ``max_request_bytes``, is refused before it is parsed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.utils.constants import DEFAULT_RPC_URL
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.a2a.card import agent_card
from app.a2a.handler import WorkflowRequestHandler
from app.a2a.store import ThreadTaskStore
from app.a2a.threads import Threads
from app.server import artifacts_http
from app.settings import Settings

MAX_REQUEST_BYTES = 1_000_000


JSON_TYPES = ("application/json", "application/a2a+json")
"""What a request body may be. A browser sends any other type (text/plain, a form) to any
origin without asking first, so a page on another site could start tasks here; a JSON body
needs a CORS preflight, which this server never grants."""


class RequestGuard:
    """Refuse, unread, a POST body that is not JSON (415) or is over ``limit`` bytes (413)."""

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
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._refuse(scope, receive, send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int = 413, why: str = ""
    ) -> None:
        why = why or f"request body over {self.limit} bytes; nothing was read"
        await JSONResponse({"error": why}, status_code=status)(scope, receive, send)


class _TooLarge(Exception):
    """The body passed the limit while it was read."""


def build_app(
    settings: Settings, *, url: str, max_runs: int = 4, max_request_bytes: int = MAX_REQUEST_BYTES
) -> Starlette:
    """The ASGI app serving the agent reached at ``url`` (the card names it)."""
    threads = Threads(settings, max_runs=max_runs)
    store = ThreadTaskStore(threads)
    card = agent_card(url)
    handler = WorkflowRequestHandler(threads, store, agent_card=card)

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
    return app
