"""What langgraph.json's ``http.app`` serves beside the API: artifacts and the review page.

``langgraph dev`` (and ``handoff serve``) mount this Starlette app into the server: a
thread's artifacts over HTTP (``app/server/artifacts_http.py``) and the page where a person
answers a waiting thread (``app/server/review_page.py``, under ``/review``).
"""

from __future__ import annotations

from starlette.applications import Starlette

from app.server import artifacts_http
from app.server.review_page import review_routes

app = Starlette(routes=[*artifacts_http.app.routes, *review_routes()])
