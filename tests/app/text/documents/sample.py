"""A README with every kind of block, and what every test of read documents asserts of sentences."""

from __future__ import annotations

from app.text.documents import Document

README = """\
---
title: handoff
---

# Handoff *workflow*

[![PyPI](https://img.shields.io/pypi/v/handoff.svg)](https://pypi.org/project/handoff/)
[![CI](https://github.com/acme/handoff/actions/workflows/ci.yml/badge.svg)](https://github.com/acme/handoff/actions)

<p align="center">
  <img src="docs/logo.png" width="200" alt="logo">
</p>

Handoff is a **LangGraph** template, e.g. for research with agents. Agents hand work
to each other through [validated contracts](docs/contracts.md), not chat transcripts.

## Install

$ pip install handoff
$ handoff --help

```bash
make demo   # install, then research and review an article
```

| to | read |
| --- | --- |
| run it | [docs/cli.md](docs/cli.md) |

- Runs are checkpointed by `thread_id` in SQLite.
- See [the docs](docs/index.md)

## Cite

@software{handoff2024,
  title = {Handoff: a LangGraph workflow template},
  year = {2024},
}

> Dr. Young read the demotic text first. Champollion read the hieroglyphs.
"""


def texts(document: Document) -> list[str]:
    return [sentence.text for sentence in document.sentences]


def plains(document: Document) -> list[str]:
    return [sentence.plain for sentence in document.sentences]


def assert_exact(document: Document) -> None:
    for sentence in document.sentences:
        assert sentence.text == document.text[sentence.start : sentence.end]
        assert sentence.text == sentence.text.strip()
        block = document.blocks[sentence.block]
        assert block.prose
        assert block.start <= sentence.start < sentence.end <= block.end
