"""Model selection: ``offline`` (the deterministic agents) or a LangChain chat model.

A model spec is ``offline`` or ``provider:model`` (``openai:gpt-4.1-mini``,
``anthropic:claude-sonnet-4-5``, ``ollama:llama3.1``), resolved with LangChain's
``init_chat_model``. LangChain and the provider packages are optional extras
(``pip install -e ".[openai]"`` in the project, as docs/models.md says); the offline
default needs neither. Whatever stops a model from being set up (a package missing, a
provider's client refusing its configuration, e.g. no API key) is a ``ModelConfigError``:
one line, exit code 2.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from contracts import ErrorCode
from graphs.errors import ExitCode, HandoffError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

OFFLINE = "offline"
_SPEC = re.compile(r"^(?P<provider>[a-z][a-z0-9_-]*):(?P<model>\S+)$")
EXTRAS = frozenset({"openai", "anthropic", "ollama"})
"""Providers this project has an install extra for; others need their package by name."""
INSTALL = 'pip install -e ".[{extra}]"'
"""How an extra is installed in the project, exactly as docs/models.md writes it."""


class ModelConfigError(HandoffError, ValueError):
    """A model spec that is malformed, or a model that cannot be set up as configured."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


def check_spec(spec: str) -> str:
    """The spec, normalised (``offline`` or ``provider:model``), or ModelConfigError."""
    value = spec.strip()
    if value.lower() == OFFLINE:
        return OFFLINE
    if not _SPEC.match(value):
        raise ModelConfigError(
            f"invalid model {spec!r}: use 'offline' or provider:model, "
            "e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:llama3.1"
        )
    return value


def chat_model_for(spec: str) -> BaseChatModel | None:
    """The chat model a spec names, or None for ``offline``."""
    value = check_spec(spec)
    if value == OFFLINE:
        return None
    match = _SPEC.match(value)
    assert match is not None
    provider, name = match.group("provider"), match.group("model")
    extra = provider if provider in EXTRAS else "llm"
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as error:
        raise ModelConfigError(
            f"model {value!r} needs LangChain: {INSTALL.format(extra=extra)}"
        ) from error
    try:
        return init_chat_model(name, model_provider=provider)
    except ImportError as error:
        hint = (
            INSTALL.format(extra=provider)
            if provider in EXTRAS
            else f"install langchain-{provider.replace('_', '-')}"
        )
        raise ModelConfigError(f"model {value!r}: provider package missing ({hint})") from error
    except ValueError as error:
        raise ModelConfigError(f"model {value!r}: {error}") from error
    except Exception as error:  # the provider's client refused its configuration
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ModelConfigError(
            f"model {value!r} could not be set up: {type(error).__name__}: {first}"[:1000]
            + " (check the provider's settings, e.g. its API key variable; --debug shows more)"
        ) from error
