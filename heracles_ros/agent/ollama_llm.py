"""Adapter for Ollama's native ``/api/chat`` with tool calling.

Ollama reports usage as ``prompt_eval_count`` / ``eval_count``; its tool calls
carry arguments as JSON objects and have no ids, so ids are made up here to
pair each result with its call. The host comes from the settings, else
``OLLAMA_HOST``, else the local default.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from heracles_ros.agent.llm import LLM, LLMSettings, Message, Reply, ToolCall, ToolSpec, tool_schema
from heracles_ros.errors import LLMOutputError
from heracles_ros.model_clients import ollama_failures, require_ollama

log = logging.getLogger(__name__)


class OllamaLLM(LLM):
    def __init__(self, settings: LLMSettings):
        super().__init__(settings)
        ollama, _ = require_ollama()
        self._client = ollama.Client(host=settings.endpoint(), timeout=settings.timeout_s)
        self._calls = 0

    def chat(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> Reply:
        wire_tools = [tool_schema(t) for t in tools]
        try:
            with ollama_failures(self.description, self.settings.timeout_s):
                response = self._client.chat(
                    model=self.settings.model_name,
                    messages=[_to_wire(m) for m in messages],
                    tools=wire_tools or None,
                    options={"temperature": self.settings.temperature},
                )
        except ValueError as exc:  # JSON decoding or response validation
            raise LLMOutputError(f"{self.description} sent a reply that is not a chat response: {exc}") from exc
        message = response.message
        calls = []
        for call in message.tool_calls or []:
            self._calls += 1
            raw = call.function.arguments
            arguments = dict(raw) if isinstance(raw, dict) else None
            calls.append(ToolCall(f"ollama_call_{self._calls}", call.function.name, arguments, str(raw)))
        return Reply(
            text=message.content or "",
            tool_calls=tuple(calls),
            input_tokens=int(response.prompt_eval_count or 0),
            output_tokens=int(response.eval_count or 0),
        )

    def close(self) -> None:
        self._client.close()


def _to_wire(message: Message) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "tool":
        wire["tool_name"] = message.name
    if message.tool_calls:
        wire["tool_calls"] = [
            {"function": {"name": call.name, "arguments": call.arguments or {}}} for call in message.tool_calls
        ]
    return wire
