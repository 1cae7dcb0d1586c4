"""Adapter for the OpenAI Chat Completions API with tool calling.

Chat Completions is the protocol every OpenAI-compatible server speaks (vLLM,
llama.cpp, Ollama's ``/v1``), so ``base_url`` can point at any of them. The key
comes from ``OPENAI_API_KEY``; a local server given by URL may need none.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from heracles_ros.agent.llm import LLM, LLMSettings, Message, Reply, ToolCall, ToolSpec, tool_schema
from heracles_ros.errors import LLMOutputError
from heracles_ros.model_clients import openai_client, openai_failures

log = logging.getLogger(__name__)

class OpenAILLM(LLM):
    def __init__(self, settings: LLMSettings):
        super().__init__(settings)
        self._client = openai_client(settings.endpoint(), settings.timeout_s, url_option="--base-url")

    def chat(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> Reply:
        kwargs: dict[str, Any] = {
            "model": self.settings.model_name,
            "messages": [_to_wire(m) for m in messages],
            "temperature": self.settings.temperature,
        }
        if tools:
            kwargs["tools"] = [tool_schema(t) for t in tools]
        try:
            with openai_failures(self.description, self.settings.timeout_s):
                response = self._client.chat.completions.create(**kwargs)
        except ValueError as exc:  # JSON decoding or response validation
            raise LLMOutputError(f"{self.description} sent a reply that is not a chat completion: {exc}") from exc
        return _from_wire(response, self.description)

    def close(self) -> None:
        self._client.close()


def _to_wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments,
                },
            }
            for call in message.tool_calls
        ]
    return wire


def _from_wire(response: Any, who: str) -> Reply:
    choices = getattr(response, "choices", None)
    if not choices:
        raise LLMOutputError(f"{who} sent a reply without choices: {str(response)[:200]}")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise LLMOutputError(f"{who} sent a choice without a message")
    calls = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = getattr(call, "function", None)
        if function is None:
            raise LLMOutputError(f"{who} sent a tool call without a function: {call}")
        raw = function.arguments or ""
        try:
            arguments = json.loads(raw) if raw else {}
        except (json.JSONDecodeError, RecursionError):  # nested past Python's stack: malformed for us
            arguments = None
        if not isinstance(arguments, dict):
            arguments = None
        calls.append(ToolCall(call.id or f"call_{index}", function.name or "", arguments, raw))
    usage = getattr(response, "usage", None)
    return Reply(
        text=message.content or "",
        tool_calls=tuple(calls),
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )
