"""A chat-completion endpoint on 127.0.0.1, for scripted model turns where no language model is configured.

The demo's scripted model and the tests' stand-in for a hosted model both answer the
real provider clients over HTTP; this module is what they share: the server thread,
the JSON request and reply, and the OpenAI Chat Completions reply's shape. What to
answer is theirs (:class:`Answer`).
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

#: The OpenAI Chat Completions path under a base URL ending in /v1.
OPENAI_PATH = "/v1/chat/completions"

#: (path, request headers in lower case, JSON body) -> (HTTP status, a JSON object or raw bytes to send).
Answer = Callable[[str, dict[str, str], dict[str, Any]], tuple[int, "dict[str, Any] | bytes"]]


def openai_completion(model: str, serial: int, text: str, tool_calls: Sequence[tuple[str, str]],
                      usage: tuple[int, int]) -> dict[str, Any]:
    """A Chat Completions reply: ``text`` and the (tool name, JSON arguments) calls, with token ``usage``."""
    calls = [{"id": f"call_{serial}_{k}", "type": "function", "function": {"name": name, "arguments": arguments}}
             for k, (name, arguments) in enumerate(tool_calls)]
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    return {"id": f"chatcmpl-scripted-{serial}", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}}


def estimate_tokens(text: str) -> int:
    """About four characters per token: the count a scripted reply reports."""
    return max(1, len(text) // 4)


class ChatServer:
    """Serves ``answer`` for POSTs to ``paths`` on 127.0.0.1 (``port`` 0: a free one) in a background thread."""

    def __init__(self, answer: Answer, paths: Sequence[str], *, port: int = 0, name: str = "scripted model"):
        self.name = name
        self._answer = answer
        self._paths = frozenset(paths)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=name.replace(" ", "-"), daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket (a reply being written is cut short)."""
        if self._thread.is_alive():
            self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5.0)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # the callers log their own calls
                return

            def do_POST(self) -> None:
                path = self.path.split("?", 1)[0]
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if path not in server._paths:
                    self._send(404, {"error": {"message": f"{server.name}: no endpoint {path}"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": f"{server.name}: the request body is not JSON"}})
                    return
                self._send(*server._answer(path, {k.lower(): v for k, v in self.headers.items()}, body))

            def _send(self, status: int, payload: dict[str, Any] | bytes) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on this call (its timeout): nothing left to tell it

        return Handler


_Served = TypeVar("_Served", bound="ServesChat")


class ServesChat:
    """Start, stop and ``with`` for a scripted model that serves through its ChatServer ``_server``."""

    _server: ChatServer

    def start(self: _Served) -> _Served:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self: _Served) -> _Served:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
