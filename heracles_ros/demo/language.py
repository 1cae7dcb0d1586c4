"""Whether the demo can use a language model, and which, from options and the environment.

Without a configured model the demo (and ``heracles up``) plays the scripted model
turns and prints :data:`HOW_TO_ENABLE`. API keys are never
read here beyond "is it set": the OpenAI adapter takes ``OPENAI_API_KEY`` from
the environment itself.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from heracles_ros.agent.llm import PROVIDERS
from heracles_ros.errors import ConfigError

HOW_TO_ENABLE = """\
The question and the command above were answered by SCRIPTED model turns: no language model is configured.
Use a real model with one of:
  export OPENAI_API_KEY=...; heracles demo                 OpenAI (model gpt-4.1 unless --model)
  heracles demo --llm ollama --model qwen3:8b              a small local Ollama model (first: ollama pull qwen3:8b;
                                                           OLLAMA_HOST, default 127.0.0.1:11434; qwen3:32b is better)
  heracles demo --base-url http://HOST:PORT/v1 --model M   an OpenAI-compatible server (key: OPENAI_API_KEY)"""


@dataclass(frozen=True)
class LanguageChoice:
    """The model the demo will use and why (printed, so a surprise is visible)."""

    provider: str
    model: str
    base_url: str
    reason: str

    @property
    def description(self) -> str:
        where = self.base_url or ("api.openai.com" if self.provider == "openai" else "")
        model = self.model or "default model"
        return f"{self.provider} ({model}{' at ' + where if where else ''}; {self.reason})"


def choose_language_model(
    llm: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> LanguageChoice | None:
    """The configured model, or None when nothing asks for one.

    An explicit ``--llm`` wins; then ``--base-url`` (an OpenAI-compatible
    server), ``OPENAI_API_KEY``, and ``OLLAMA_HOST``, in that order.
    """
    env = os.environ if env is None else env
    model = model or ""
    base_url = base_url or ""
    if llm is not None and llm not in PROVIDERS:
        raise ConfigError(f"unknown --llm {llm!r}; choose one of {', '.join(PROVIDERS)}")
    if llm == "ollama":
        return LanguageChoice("ollama", model, base_url or env.get("OLLAMA_HOST", ""), "--llm ollama")
    if llm == "openai":
        if not base_url and not env.get("OPENAI_API_KEY"):
            raise ConfigError("--llm openai needs OPENAI_API_KEY in the environment, or --base-url of a local server")
        return LanguageChoice("openai", model, base_url, "--llm openai")
    if base_url:
        return LanguageChoice("openai", model, base_url, "--base-url given")
    if env.get("OPENAI_API_KEY"):
        return LanguageChoice("openai", model, "", "OPENAI_API_KEY is set")
    if env.get("OLLAMA_HOST"):
        return LanguageChoice("ollama", model, env["OLLAMA_HOST"], "OLLAMA_HOST is set")
    return None
