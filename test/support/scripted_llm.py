"""A local stand-in for a hosted LLM: replays scripted model turns over real HTTP.

No hosted model is reachable from the test machines, so tests that exercise an
agent (the loop, the language node, the evaluation harness, the CLI) point the
real ``openai`` or ``ollama`` client at this server. It speaks both wire
protocols the adapters use:

* OpenAI Chat Completions: ``POST /v1/chat/completions`` (tool calls in the
  ``choices[0].message.tool_calls`` shape, ``usage.prompt_tokens`` /
  ``completion_tokens``); base URL ``server.openai_base_url``.
* Ollama native chat: ``POST /api/chat`` with ``stream: false`` (tool calls with
  dict ``arguments``, ``prompt_eval_count`` / ``eval_count``); host
  ``server.ollama_host``.

Only the model is replaced: whatever the agent does with a turn (run a Cypher
query, check a goal) is real.

Usage::

    from support.scripted_llm import ScriptedLLMServer, adapter, call, say

    script = [call("MATCH (o:Object) RETURN count(o) AS n"), say("<answer>5</answer>")]
    # the other tools: find("something to sit on"), scene_at("10m", symbol="O3"), use(name, arguments)
    with ScriptedLLMServer(script) as server:
        agent = Agent(store, adapter(server, "openai"))   # or "ollama"; or settings_for(server)
        result = agent.ask("How many objects?")
        assert "ERROR" not in server.requests[1].tool_results()[0]

CLI / ROS parameters take ``server.openai_base_url`` (``--llm openai --base-url``)
or ``server.ollama_host`` (``--llm ollama --base-url``).

A script is either a list of :class:`Turn` (consumed one per request, in order,
whichever protocol asks) or a callable ``(RecordedRequest) -> Turn`` that can
look at what the model was sent (e.g. answer differently when a database error
came back). When a list runs out the server answers HTTP 500 with a message
saying so, which the adapters turn into an ``LLMError``.

Token usage is reported the way providers do; by default a deterministic count
(about 4 characters per token of the request's messages, and of the reply) that
``server.reported`` records per reply so tests can check the agent sums exactly
what the provider reported.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from heracles_ros.demo.chat_server import OPENAI_PATH, ChatServer, ServesChat, estimate_tokens, openai_completion

OLLAMA_PATH = "/api/chat"


@dataclass
class Turn:
    """One scripted model reply.

    ``text``: the assistant's message content. ``tool_calls``: (name, arguments)
    pairs the model asks for, in order (a ``str`` of arguments is sent verbatim
    over the OpenAI protocol: a model writing broken JSON). ``delay_s``: sleep before answering (a
    slow model, for timeout tests). ``raw_body`` / ``status``: send these bytes
    instead of a well-formed reply (garbage from the provider). ``usage``:
    (input tokens, output tokens) to report instead of the default estimate.
    """

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    delay_s: float = 0.0
    raw_body: bytes | None = None
    status: int = 200
    usage: tuple[int, int] | None = None


def say(text: str, **kwargs: Any) -> Turn:
    """A plain text reply (e.g. ``say("<answer>3</answer>")``)."""
    return Turn(text=text, **kwargs)


def call(query: str, text: str = "", **kwargs: Any) -> Turn:
    """A reply asking for one ``run_cypher_query`` call, with optional reasoning text."""
    return Turn(text=text, tool_calls=[("run_cypher_query", {"query": query})], **kwargs)


def calls(*queries: str, text: str = "") -> Turn:
    """A reply asking for several ``run_cypher_query`` calls at once."""
    return Turn(text=text, tool_calls=[("run_cypher_query", {"query": q}) for q in queries])


def use(tool: str, arguments: dict[str, Any] | str, text: str = "") -> Turn:
    """A reply asking for one call of any tool by name (``find_objects``, ``scene_at``, or one that does not
    exist), with these arguments (a ``str`` is sent verbatim: broken JSON)."""
    return Turn(text=text, tool_calls=[(tool, arguments)])


def find(words: str, k: int | None = None, text: str = "") -> Turn:
    """A reply asking ``find_objects`` for the objects ``words`` name."""
    return use("find_objects", {"text": words, **({"k": k} if k is not None else {})}, text)


def scene_at(time: str, text: str = "", **filters: str) -> Turn:
    """A reply asking ``scene_at`` for the scene at ``time``; ``filters``: symbol, room, or cls (sent as
    ``class``)."""
    arguments = {"time": time, **{("class" if key == "cls" else key): value for key, value in filters.items()}}
    return use("scene_at", arguments, text)


def slow(seconds: float, turn: Turn | None = None) -> Turn:
    """``turn`` (default: a short answer) delivered after ``seconds``."""
    turn = turn or say("<answer>late</answer>")
    turn.delay_s = seconds
    return turn


def garbage(body: bytes = b"\x00not json{", status: int = 200) -> Turn:
    """A reply that is not the protocol's JSON at all."""
    return Turn(raw_body=body, status=status)


@dataclass
class RecordedRequest:
    """What the model was sent in one request."""

    protocol: str  # "openai" | "ollama"
    path: str
    body: dict[str, Any]
    #: HTTP headers, lower-case names (e.g. "authorization").
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    def tool_results(self) -> list[str]:
        """Contents of every tool-result message, oldest first."""
        return [str(m.get("content") or "") for m in self.messages if m.get("role") == "tool"]

    def last(self, role: str | None = None) -> dict[str, Any]:
        """The newest message (of ``role`` when given)."""
        for message in reversed(self.messages):
            if role is None or message.get("role") == role:
                return message
        raise LookupError(f"no {role or 'any'} message in the request")

    def text(self) -> str:
        """All message contents joined: handy for ``"..." in request.text()``."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)


Script = Sequence[Turn] | Callable[[RecordedRequest], Turn]


class ScriptedLLMServer(ServesChat):
    """The HTTP server, on 127.0.0.1 at a free port, serving in a background thread."""

    def __init__(self, script: Script, *, model: str = "scripted-model"):
        self.model = model
        self.requests: list[RecordedRequest] = []
        #: (input tokens, output tokens) of every well-formed reply, in order.
        self.reported: list[tuple[int, int]] = []
        self._script = script
        self._next = 0
        self._lock = threading.Lock()
        self._server = ChatServer(self._answer, (OPENAI_PATH, OLLAMA_PATH), name="scripted server")

    # -- addresses -----------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._server.port

    @property
    def ollama_host(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def remaining(self) -> int:
        """Scripted turns not yet served (0 for a callable script)."""
        return 0 if callable(self._script) else len(self._script) - self._next

    def extend(self, turns: Sequence[Turn]) -> None:
        """Append turns to a list script (e.g. between two requests of one test)."""
        if callable(self._script):
            raise TypeError("a callable script cannot be extended")
        with self._lock:
            self._script = [*self._script, *turns]

    # -- serving -------------------------------------------------------------------
    def _turn_for(self, request: RecordedRequest) -> Turn | None:
        with self._lock:
            self.requests.append(request)
            if callable(self._script):
                return self._script(request)
            if self._next >= len(self._script):
                return None
            turn = self._script[self._next]
            self._next += 1
            return turn

    def _reply(self, protocol: str, request: RecordedRequest, turn: Turn) -> dict[str, Any]:
        if turn.usage is not None:
            usage = turn.usage
        else:
            sent = json.dumps(request.messages) + json.dumps(request.tools)
            produced = turn.text + json.dumps(turn.tool_calls)
            usage = (estimate_tokens(sent), estimate_tokens(produced))
        with self._lock:
            self.reported.append(usage)
        if protocol == "openai":
            return _openai_reply(self.model, len(self.requests), turn, usage)
        return _ollama_reply(self.model, turn, usage)

    def _answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, Any] | bytes]:
        protocol = "openai" if path == OPENAI_PATH else "ollama"
        request = RecordedRequest(protocol, path, body, headers)
        turn = self._turn_for(request)
        if turn is None:
            return 500, {"error": {"message": f"scripted server: script exhausted after {self._next} turns",
                                   "type": "server_error"}}
        if turn.delay_s:
            time.sleep(turn.delay_s)
        if turn.raw_body is not None:
            return turn.status, turn.raw_body
        return turn.status, self._reply(protocol, request, turn)


def _openai_reply(model: str, serial: int, turn: Turn, usage: tuple[int, int]) -> dict[str, Any]:
    calls = [(name, args if isinstance(args, str) else json.dumps(args)) for name, args in turn.tool_calls]
    return openai_completion(model, serial, turn.text, calls, usage)


def _ollama_reply(model: str, turn: Turn, usage: tuple[int, int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.tool_calls:
        message["tool_calls"] = [{"function": {"name": name, "arguments": args}} for name, args in turn.tool_calls]
    return {
        "model": model,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "message": message,
        "done": True,
        "done_reason": "stop",
        "total_duration": 1_000_000,
        "load_duration": 0,
        "prompt_eval_count": usage[0],
        "prompt_eval_duration": 500_000,
        "eval_count": usage[1],
        "eval_duration": 500_000,
    }


def settings_for(server: ScriptedLLMServer, provider: str = "openai", **changes: Any) -> Any:
    """``LLMSettings`` that point ``provider``'s real adapter at ``server``."""
    from heracles_ros.agent.llm import LLMSettings

    url = server.openai_base_url if provider == "openai" else server.ollama_host
    return LLMSettings(provider=provider, model=server.model, base_url=url, **changes)


def adapter(server: ScriptedLLMServer, provider: str = "openai", **changes: Any) -> Any:
    """The real ``openai`` / ``ollama`` adapter talking to ``server`` (``changes``: LLMSettings fields)."""
    from heracles_ros.agent.factory import make_llm

    return make_llm(settings_for(server, provider, **changes))
