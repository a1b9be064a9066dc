"""A sentence that introduces a code block is paired with it, in every format read.

The example keeps its exact span in the source; the code a reader sees is derived from
those bytes by the format's rule.
"""

from __future__ import annotations

import pytest

from app.text.documents import HTML, MARKDOWN, PLAIN, RST, read_document
from app.text.documents.examples import Example, example_after, shown_code

MARKDOWN_TEXT = """\
# Tool

## Install

To install the command line tool, run the following command:

```bash
pip install tool
```

- Inside a list, the example is indented with the item like this:

  ```python
  import tool
  tool.go()
  ```

> A quoted lead-in keeps its markers on every line, like this:
>
> ```
> tool --go
>
> tool --stop
> ```

An indented block keeps the indentation of its own lines:

    tool run
      --fast

The options of the command are these:

- --fast

## Usage

A fence in the next section is no example of this sentence:
"""
MARKDOWN_TEXT += "\n## Other\n\n```\ntool --other\n```\n"

RST_TEXT = """\
Tool
====

To install the command line tool, run the following command::

    pip install tool
    tool --version

With a directive, the code is the same:

.. code-block:: python

   import tool
   tool.go()
"""

HTML_TEXT = """\
<html><body><main><h1>Tool</h1>
<p>To install the tool, run the following command:</p>
<pre><code class="language-bash">pip install tool &amp;&amp; tool --version
tool &lt;file&gt;
</code></pre>
<p>Only <code>inline code</code> follows this sentence, in a paragraph:</p>
<p><code>tool   --x</code></p>
</main></body></html>
"""

PLAIN_TEXT = """\
TOOL MANUAL

To install the command line tool, run the following command:

    pip install tool

    tool --version

You can start the tool quickly, without loading any plugins, with this command >
\ttool --go
<
Then more prose follows here, and it is a paragraph.
"""


def _pairs(text: str, media_type: str) -> dict[str, Example | None]:
    document = read_document(text, media_type)
    return {s.plain: example_after(document, s, media_type) for s in document.sentences}


def _code_of(text: str, media_type: str, plain: str) -> tuple[str, str, str]:
    """(the example's source text, its code, its media type) for the sentence ``plain``."""
    example = _pairs(text, media_type)[plain]
    assert example is not None, f"no example after {plain!r}"
    return text[example.start : example.end], example.code, example.media_type


def test_a_markdown_fence_after_a_colon_is_its_sentences_example() -> None:
    source, code, media = _code_of(
        MARKDOWN_TEXT, MARKDOWN, "To install the command line tool, run the following command:"
    )
    assert source == "```bash\npip install tool\n```"
    assert (code, media) == ("pip install tool", "text/x-shellscript")


@pytest.mark.parametrize(
    ("plain", "code"),
    [
        (
            "Inside a list, the example is indented with the item like this:",
            "import tool\ntool.go()",
        ),
        (
            "A quoted lead-in keeps its markers on every line, like this:",
            "tool --go\n\ntool --stop",
        ),
        ("An indented block keeps the indentation of its own lines:", "tool run\n  --fast"),
    ],
)
def test_a_markdown_example_loses_its_container_markers_and_indentation(
    plain: str, code: str
) -> None:
    assert _code_of(MARKDOWN_TEXT, MARKDOWN, plain)[1] == code


def test_a_lead_in_to_a_list_or_to_another_section_has_no_example() -> None:
    pairs = _pairs(MARKDOWN_TEXT, MARKDOWN)
    assert pairs["The options of the command are these:"] is None
    assert pairs["A fence in the next section is no example of this sentence:"] is None


def test_a_sentence_that_is_not_the_last_of_its_paragraph_introduces_nothing() -> None:
    text = "# T\n\nRun this command: it is fast. It ends here.\n\n```\ntool\n```\n"
    assert all(example is None for example in _pairs(text, MARKDOWN).values())


def test_an_rst_literal_block_and_code_block_are_their_sentences_examples() -> None:
    source, code, media = _code_of(
        RST_TEXT, RST, "To install the command line tool, run the following command:"
    )
    assert source == "pip install tool\n    tool --version"
    assert (code, media) == ("pip install tool\ntool --version", "text/plain")
    _, code, media = _code_of(RST_TEXT, RST, "With a directive, the code is the same:")
    assert (code, media) == ("import tool\ntool.go()", "text/x-python")


def test_an_html_example_is_shown_without_its_tags_and_with_its_entities_read() -> None:
    source, code, _ = _code_of(HTML_TEXT, HTML, "To install the tool, run the following command:")
    assert source.startswith("<pre><code") and source.endswith("</code></pre>")
    assert code == "pip install tool && tool --version\ntool <file>"
    _, code, media = _code_of(
        HTML_TEXT, HTML, "Only inline code follows this sentence, in a paragraph:"
    )
    assert (code, media) == ("tool --x", "text/plain")


def test_a_plain_text_example_runs_across_blank_lines_at_its_depth() -> None:
    source, code, _ = _code_of(
        PLAIN_TEXT, PLAIN, "To install the command line tool, run the following command:"
    )
    assert source == "pip install tool\n\n    tool --version"
    assert code == "pip install tool\n\ntool --version"


def test_a_sentence_before_vims_marker_introduces_the_example_after_it() -> None:
    plain = "You can start the tool quickly, without loading any plugins, with this command"
    assert _code_of(PLAIN_TEXT, PLAIN, plain)[1] == "tool --go"
    assert _pairs(PLAIN_TEXT, PLAIN)["Then more prose follows here, and it is a paragraph."] is None


@pytest.mark.parametrize(
    ("text", "media_type"),
    [(MARKDOWN_TEXT, MARKDOWN), (RST_TEXT, RST), (HTML_TEXT, HTML), (PLAIN_TEXT, PLAIN)],
    ids=["markdown", "rst", "html", "plain"],
)
def test_every_example_is_whole_code_blocks_and_its_code_derives_from_its_span(
    text: str, media_type: str
) -> None:
    document = read_document(text, media_type)
    examples = [example for example in _pairs(text, media_type).values() if example]
    assert examples
    for example in examples:
        first = document.block_at(example.start, example.start)
        last = document.block_at(example.end, example.end)
        assert first is not None and first.kind == "code" and first.start == example.start
        assert last is not None and last.kind == "code" and last.end == example.end
        assert shown_code(text, example.start, example.end, media_type) == example.code
