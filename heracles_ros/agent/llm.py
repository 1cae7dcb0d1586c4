"""The one interface the agent uses to talk to any language model.

The agent only needs a chat call that may return tool calls, and the token
counts the provider reports; adapters (:mod:`.openai_llm`, :mod:`.ollama_llm`)
translate this to each provider's wire format and import their SDK lazily, so
the library works without either installed. API keys come only from the
environment (``OPENAI_API_KEY``), never from settings or code.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from heracles_ros.errors import ConfigError

Role = Literal["system", "user", "assistant", "tool"]

PROVIDERS = ("openai", "ollama")
#: Models used when none is named (the reference paper's main model; a local open model).
DEFAULT_MODELS = {"openai": "gpt-4.1", "ollama": "qwen3:32b"}
OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call: name, what it does, JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


def tool_schema(tool: ToolSpec) -> dict[str, Any]:
    """The ``{"type": "function", ...}`` form both providers take."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for.

    ``arguments`` is None when the model sent arguments that are not a JSON
    object; ``raw_arguments`` keeps what it sent so the agent can tell it.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""


@dataclass(frozen=True)
class Message:
    """One chat message in provider-neutral form."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    #: For role "tool": the call this message answers, and the tool's name.
    tool_call_id: str = ""
    name: str = ""


@dataclass(frozen=True)
class Reply:
    """The model's turn: text, tool calls, and the provider's token counts (0 when not reported)."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0

    def as_message(self) -> Message:
        return Message("assistant", self.text, self.tool_calls)


@dataclass(frozen=True)
class LLMSettings:
    """How to reach a model. ``base_url`` is the OpenAI-compatible URL or the Ollama host."""

    provider: str = "openai"
    model: str = ""
    temperature: float = 0.0
    #: Seconds one model call may take before LLMTimeout.
    timeout_s: float = 120.0
    #: Cypher tool calls one request may make (the paper's M).
    max_tool_calls: int = 5
    base_url: str | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ConfigError(f"unknown LLM provider {self.provider!r}; choose one of {', '.join(PROVIDERS)}")
        if self.timeout_s <= 0:
            raise ConfigError(f"LLM timeout must be positive, got {self.timeout_s}")
        if self.max_tool_calls < 0:
            raise ConfigError(f"max_tool_calls must be >= 0, got {self.max_tool_calls}")
        if not 0.0 <= self.temperature <= 2.0:
            raise ConfigError(f"temperature must be within [0, 2], got {self.temperature}")

    @property
    def model_name(self) -> str:
        return self.model or DEFAULT_MODELS[self.provider]

    def endpoint(self) -> str | None:
        """Where requests go: the explicit base URL, else the provider's env default."""
        if self.base_url:
            return self.base_url
        if self.provider == "ollama":
            return os.environ.get("OLLAMA_HOST") or OLLAMA_DEFAULT_HOST
        return os.environ.get("OPENAI_BASE_URL") or None


class LLM(ABC):
    """A chat model that can call tools."""

    def __init__(self, settings: LLMSettings):
        self.settings = settings

    @abstractmethod
    def chat(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> Reply:
        """One model turn. Raises LLMUnavailable, LLMTimeout or LLMOutputError."""

    @property
    def description(self) -> str:
        """Provider, model and endpoint, safe to log (no keys)."""
        where = self.settings.endpoint() or "default endpoint"
        return f"{self.settings.provider}:{self.settings.model_name} at {where}"

    @abstractmethod
    def close(self) -> None:
        """Release the adapter's HTTP client."""
