"""The model providers' Python clients (OpenAI's, Ollama's), as the chat adapters and the embedders use them.

Each SDK is imported on first use, so the package runs without the one it does not need; its client never
retries (a retry would silently double the time a caller waits past its timeout); and its failures become
the package's errors, worded once: no answer in time, no connection, a refusal with its HTTP status.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from heracles_ros.errors import LLMError, LLMTimeout, LLMUnavailable

#: Sent when a local OpenAI-compatible server is named by URL and no key is set; such servers ignore it.
_NO_KEY = "no-key-needed"


def require_openai() -> Any:
    """The ``openai`` module."""
    try:
        import openai
    except ImportError as exc:
        raise LLMUnavailable("the 'openai' package is not installed: pip install openai") from exc
    return openai


def require_ollama() -> tuple[Any, Any]:
    """The ``ollama`` module and the ``httpx`` it speaks through (whose errors it lets through)."""
    try:
        import httpx
        import ollama
    except ImportError as exc:
        raise LLMUnavailable("the 'ollama' package is not installed: pip install ollama") from exc
    return ollama, httpx


def openai_client(base_url: str | None, timeout_s: float, *, url_option: str) -> Any:
    """A client of ``base_url`` (None: api.openai.com, which needs ``OPENAI_API_KEY``); ``url_option`` names
    how the caller's user gives a URL instead."""
    openai = require_openai()
    key = os.environ.get("OPENAI_API_KEY")
    if not key and not base_url:
        raise LLMUnavailable(f"OPENAI_API_KEY is not set (needed for api.openai.com; or pass {url_option})")
    return openai.OpenAI(api_key=key or _NO_KEY, base_url=base_url, timeout=timeout_s, max_retries=0)


@contextlib.contextmanager
def openai_failures(where: str, timeout_s: float) -> Iterator[None]:
    """The OpenAI client's failures in the block as the package's errors, naming ``where`` was asked."""
    openai = require_openai()
    try:
        yield
    except openai.APITimeoutError as exc:
        raise LLMTimeout(f"{where} did not answer within {timeout_s:g} s") from exc
    except openai.APIConnectionError as exc:
        raise LLMUnavailable(f"cannot reach {where}: {exc}") from exc
    except openai.APIStatusError as exc:
        raise LLMUnavailable(f"{where} refused the request (HTTP {exc.status_code}): {exc}") from exc
    except openai.OpenAIError as exc:
        raise LLMError(f"{where} failed: {exc}") from exc


@contextlib.contextmanager
def ollama_failures(where: str, timeout_s: float) -> Iterator[None]:
    """The Ollama client's failures in the block as the package's errors, naming ``where`` was asked."""
    ollama, httpx = require_ollama()
    try:
        yield
    except httpx.TimeoutException as exc:
        raise LLMTimeout(f"{where} did not answer within {timeout_s:g} s") from exc
    except (ConnectionError, httpx.TransportError) as exc:
        raise LLMUnavailable(f"cannot reach {where}: {exc}") from exc
    except ollama.ResponseError as exc:
        raise LLMUnavailable(f"{where} refused the request (HTTP {exc.status_code}): {exc.error}") from exc
    except httpx.HTTPError as exc:
        raise LLMError(f"{where} failed: {exc}") from exc
