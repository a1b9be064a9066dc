"""A thread's artifacts over HTTP, beside the API ``langgraph dev`` serves.

State holds ``ArtifactRef``s, never bytes, so a langgraph-sdk client or Studio reading a
finished thread gets the article's reference and nothing to read it with. The server's
``http.app`` (``app/server/http_app.py``) serves this app's route:
``GET /threads/{thread_id}/artifacts/{name}`` answers the bytes of the artifact the
thread's own state names (``article``, ``draft``, ``notes``, ``research``, ``review``, or a
source's snapshot by id, ``src-N``), verified against the sha256 the thread recorded,
with its media type, revision and hash in the headers. A name is resolved through the
thread's state, and a ref there that is not the thread's own (a copied thread's:
``threads.copy`` copies checkpoints, not artifacts) is refused with 409, so no name reaches
another thread's artifacts. Copies are not refused themselves: the
server raises no event of its own for them, only a thread ``create``. Reading is all it
does; the same rules as ``handoff show`` apply.
"""

from __future__ import annotations

import threading

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.exit_codes import ExitCode, for_error
from app.settings import Settings
from app.workflow import Workflow
from app.workflow.ids import check_thread_id
from contracts import ARTIFACT_PATH
from graphs.errors import HandoffError

ROUTE = ARTIFACT_PATH
"""Where a thread's artifact is read; a published outcome names its article's
(``RunOutcome.article_path``)."""
STATUS: dict[ExitCode, int] = {
    ExitCode.USAGE: 400,
    ExitCode.NOT_FOUND: 404,
    ExitCode.INTEGRITY: 409,
}
"""A refusal's exit code in ``handoff show`` as an HTTP status; the body says why, as the
command's one line would. Any other error is the server's (500)."""


class _Reader:
    """One read-only Workflow per server process, opened on the first request."""

    def __init__(self) -> None:
        self._workflow: Workflow | None = None
        self._lock = threading.Lock()

    def workflow(self) -> Workflow:
        with self._lock:
            if self._workflow is None:
                workflow = Workflow(Settings(), read_only=True)
                workflow.open()
                self._workflow = workflow
            return self._workflow


READER = _Reader()


def artifact(request: Request) -> Response:
    """The bytes of a thread's named artifact, verified, or why not (4xx, one line)."""
    thread_id = request.path_params["thread_id"]
    name = request.path_params["name"]
    try:
        workflow = READER.workflow()
        ref = workflow.artifact_ref(check_thread_id(thread_id), name)
        data = workflow.context.store.get(ref)
    except HandoffError as error:
        status = STATUS.get(for_error(error))
        if status is None:
            raise
        return JSONResponse({"detail": str(error)}, status_code=status)
    headers = {
        "ETag": f'"{ref.sha256}"',
        "X-Artifact-Sha256": ref.sha256,
        "X-Artifact-Revision": str(ref.revision),
        "X-Artifact-Uri": ref.uri,
    }
    return Response(data, media_type=ref.media_type, headers=headers)


app = Starlette(routes=[Route(ROUTE, artifact, methods=["GET"])])
