"""A run on a reStructuredText or HTML corpus: it completes quoting prose only, and
``handoff show --source`` marks each quote where it sits in the source bytes."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import base as cli_base
from app.cli import cli
from app.text.documents import read_document
from app.workflow import Workflow
from contracts import DraftArticle, ResearchBundle
from graphs.errors import IntegrityError
from tests.app.corpus.test_citations import MARKED, cited_by_source
from tests.app.store_faults import tamper
from tests.conftest import write_corpus

OBJECTIVE = "Explain how kestrel limits calls and what happens when a bucket is empty"

RST = {
    "limits.rst": """\
.. _limits:

:Version: 2.4

Limits
======

.. |rate| replace:: 60

A new kestrel bucket allows |rate| requests per minute by default, and it starts full.
The burst size is the number of tokens a *full* bucket holds, which is 10 by default.

.. code-block:: python
   :linenos:

   # kestrel limits each bucket to 20 calls in this example code line
   limit = kestrel.Limit("search", rate=120, burst=20)

.. This comment says kestrel limits calls to 5 per minute, which is wrong.

=======  ==============================================
setting  kestrel limits calls per bucket to this value
=======  ==============================================
rate     60
=======  ==============================================
""",
    "empty.rst": """\
Empty buckets
=============

When a kestrel bucket is empty, :func:`kestrel.acquire` raises ``kestrel.Exhausted``
at once in ``refuse`` mode. In ``wait`` mode the call sleeps until a token comes back.

>>> kestrel.acquire("search")  # kestrel limits calls: an empty bucket raises here
Traceback (most recent call last):
""",
}

HTML = {
    "limits.html": """\
<!DOCTYPE html>
<html><head><title>Limits - kestrel</title>
<script>var banner = "kestrel limits calls to 5 per minute in this script";</script></head>
<body>
<nav class="sidebar"><p>Navigation: kestrel limits, empty buckets and every other page.</p></nav>
<header><p>The kestrel documentation header limits nothing at all.</p></header>
<main>
<h1>Limits</h1>
<p>A new kestrel bucket allows <strong>60 requests</strong> per minute by default,
and it starts full. The burst size is the number of tokens a full bucket holds, which
is&nbsp;10 by default.</p>
<pre><code># kestrel limits each bucket to 20 calls in this example code line
limit = kestrel.Limit("search", rate=120, burst=20)</code></pre>
<h2>Empty buckets</h2>
<p>When a kestrel bucket is empty, <code>kestrel.acquire</code> raises
<code>kestrel.Exhausted</code> at once in <em>refuse</em> mode. In <em>wait</em> mode the
call sleeps until a token comes back.</p>
<table><tr><th>mode</th><th>kestrel limits calls by</th></tr>
<tr><td>refuse</td><td>raising when the bucket is empty</td></tr></table>
</main>
<footer><p>Copyright 2024: kestrel limits calls, written by its authors.</p></footer>
</body></html>
""",
}

NOT_EVIDENCE = ("example code line", "comment", "script", "Navigation", "header", "Copyright")


def _run(workflow: Workflow, tmp_path: Path, files: dict[str, str], thread: str) -> ResearchBundle:
    corpus = write_corpus(tmp_path / thread, files)
    outcome = workflow.run(workflow.task(OBJECTIVE, corpus=[str(corpus)]), thread)
    assert outcome.result_status == "completed", outcome
    state = workflow.state(thread)
    bundle, draft = state["research"], state["draft"]
    assert isinstance(bundle, ResearchBundle) and isinstance(draft, DraftArticle)
    for fact in bundle.facts:
        source = bundle.source(fact.source_id)
        assert source is not None
        text = workflow.context.store.get(source.snapshot).decode("utf-8")
        block = read_document(text, source.snapshot.media_type).block_at(
            fact.span.start, fact.span.end
        )
        assert text[fact.span.start : fact.span.end] == fact.quote
        assert block is not None and block.prose, fact
        assert not any(word in fact.quote for word in NOT_EVIDENCE), fact.quote
    assert draft.cited_claim_ids
    return bundle


@pytest.mark.parametrize(
    ("files", "media_type"), [(RST, "text/x-rst"), (HTML, "text/html")], ids=["rst", "html"]
)
def test_a_run_quotes_prose_only_and_show_source_marks_each_quote_in_the_source(
    workflow: Workflow,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    media_type: str,
) -> None:
    thread = f"t-{media_type.rsplit('-', 1)[-1].rsplit('/', 1)[-1]}"
    bundle = _run(workflow, tmp_path, files, thread)
    draft = workflow.state(thread)["draft"]
    expected = cited_by_source(bundle, draft)
    monkeypatch.setattr(cli_base, "open_workflow", lambda **_: nullcontext(workflow))
    for source in bundle.sources:
        assert source.snapshot.media_type == media_type
        marked = workflow.source_text(thread, source.id)
        marks = MARKED.findall(marked)
        assert [ids for ids, _ in marks] == expected[source.id]
        for ids, span_text in marks:
            fact = bundle.fact(ids)
            assert fact is not None and span_text == fact.quote
        shown = CliRunner().invoke(cli, ["show", thread, "--source", source.id])
        assert shown.exit_code == 0, shown.output
        assert MARKED.findall(shown.output) == marks


def test_a_tampered_html_snapshot_is_refused(own_store_workflow: Workflow, tmp_path: Path) -> None:
    workflow = own_store_workflow  # the test damages its stored bytes
    bundle = _run(workflow, tmp_path, HTML, "t-tampered-html")
    cited = bundle.sources[0]
    tamper(workflow.context.store, cited.snapshot)
    with pytest.raises(IntegrityError, match=cited.snapshot.uri):
        workflow.source_text("t-tampered-html", cited.id)
