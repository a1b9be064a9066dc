"""The example write tool: the published article, written to a file in the export folder.

The declaration is the graph's; the code is the app's (it knows where the export folder
is, ``HANDOFF_EXPORT_DIR``), given to the run as ``RunContext.tools["export_article"]``.
"""

from __future__ import annotations

from contracts import ExportArticleInput, ExportArticleOutput
from graphs.tools.declare import ToolSpec


def _file_name(args: ExportArticleInput) -> str:
    return f"{args.file_name} <- {args.article.uri}"


EXPORT_ARTICLE = ToolSpec(
    name="export_article",
    input=ExportArticleInput,
    output=ExportArticleOutput,
    kind="write",
    timeout_seconds=None,  # a write cut short could land after its caller was told it failed
    errors={OSError: "retryable", ValueError: "fix_arguments"},  # a destination refusing it
    summary=_file_name,
)
"""Write the article to ``<export folder>/<file_name>``; a file already holding exactly
these bytes is left as it is, so a call run again after a crash writes nothing new."""
