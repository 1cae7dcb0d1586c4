"""Scripted model turns, so the language layer can be shown at the desk with no language model configured.

A small HTTP server on 127.0.0.1 speaking the OpenAI Chat Completions protocol
(what the agent's ``openai`` adapter sends), which plays fixed turns for the
demo's question (:data:`QUESTION`) and command (:func:`command_for`): it asks
the database through the agent's real Cypher tool, then answers from the rows
that came back. Everything else (the agent loop, the queries, the goal checker,
the planner, the dispatcher) is the real system; only the model's words are
scripted, and whoever uses it says so (:data:`LABEL`). Any other request gets
an answer saying the scripted model knows only these two.

``python -m heracles_ros.demo.scripted_model --port N`` serves it until SIGINT/SIGTERM (``heracles up``).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from heracles_ros.agent.tool import TOOL_NAME
from heracles_ros.demo.chat_server import OPENAI_PATH, ChatServer, estimate_tokens, openai_completion
from heracles_ros.graphdb.cypher import demo as cypher

#: The model name the server reports, so a log line naming the model says it too.
MODEL_NAME = "scripted-demo-turns"
#: What every output using this server prints next to its answers.
LABEL = "SCRIPTED model turns (no language model configured; not a language model's answers)"
QUESTION = "How many boxes are there in the lounge?"
_INSTRUCTION = re.compile(r"^Bring a box from the (?P<room_class>[\w ]+?) to the lounge\.?$", re.IGNORECASE)
_REQUEST_LINE = re.compile(r"^(Question|Instruction): (?P<text>.+)$", re.MULTILINE)
UNKNOWN_REPLY = (f"<answer>The scripted model only knows the question '{QUESTION}' and the command "
                 "'Bring a box from the <room> to the lounge.'; configure a language model for anything else "
                 "(docs/desk.md).</answer>")


def command_for(room_class: str) -> str:
    """The demo's command, in the words the scripted model answers."""
    return f"Bring a box from the {room_class} to the lounge."


@dataclass(frozen=True)
class ScriptedTurn:
    """One model reply: text, and the Cypher queries it asks the tool to run."""

    text: str = ""
    queries: tuple[str, ...] = ()


def next_turn(messages: list[dict[str, Any]]) -> ScriptedTurn:
    """The scripted reply to a conversation (the agent's system and user messages, then its tool results)."""
    user = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
    request = _REQUEST_LINE.search(user)
    text = request["text"].strip() if request else ""
    results = [_rows(str(m.get("content") or "")) for m in messages if m.get("role") == "tool"]
    if text.lower() == QUESTION.lower():
        if not results:
            return ScriptedTurn("I count the boxes in the lounge.", (cypher.SCRIPTED_BOXES_IN_LOUNGE,))
        count = results[-1][0].get("boxes", 0) if results[-1] else 0
        return ScriptedTurn(f"<answer>{int(count)}</answer>")
    instruction = _INSTRUCTION.match(text)
    if instruction:
        queries = (cypher.SCRIPTED_BOXES_OUTSIDE_LOUNGE, cypher.SCRIPTED_LOUNGE_PLACES, cypher.SCRIPTED_ROBOT)
        if len(results) < len(queries):
            return ScriptedTurn("I look up the boxes, the lounge's places and the robot.", queries)
        return ScriptedTurn(_goal(instruction["room_class"], *results[-3:]))
    return ScriptedTurn(UNKNOWN_REPLY)


def _goal(room_class: str, boxes: list[dict[str, Any]], places: list[dict[str, Any]],
          robots: list[dict[str, Any]]) -> str:
    """The box of that room nearest the robot, to the lounge's place nearest the middle of its first lounge."""
    candidates = [b for b in boxes if str(b.get("room_class", "")).lower() == room_class.lower()]
    if not candidates or not places:
        return f"<answer>There is no box in a {room_class} or no lounge with places to bring it to.</answer>"
    robot = robots[0] if robots and robots[0].get("x") is not None else None
    if robot is not None:
        candidates.sort(key=lambda b: math.dist((b["x"], b["y"]), (robot["x"], robot["y"])))
    lounge = [p for p in places if p["room"] == places[0]["room"]]
    cx = sum(p["x"] for p in lounge) / len(lounge)
    cy = sum(p["y"] for p in lounge) / len(lounge)
    target = min(lounge, key=lambda p: math.dist((p["x"], p["y"]), (cx, cy)))
    return f"<answer>(object-in-place {candidates[0]['box']} {target['place']})</answer>"


def _rows(text: str) -> list[dict[str, Any]]:
    """The JSON rows at the start of a tool result (notes may follow them); [] for an error."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except ValueError:
        return []
    return [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []


@dataclass
class ScriptedModelServer:
    """The scripted turns served over the OpenAI protocol on 127.0.0.1 (``port`` 0: a free one)."""

    port: int = 0
    #: Every conversation's replies, for whoever wants to show or check them.
    served: list[ScriptedTurn] = field(default_factory=list)
    script: Callable[[list[dict[str, Any]]], ScriptedTurn] = next_turn

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ChatServer(self._answer, (OPENAI_PATH,), port=self.port)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}/v1"

    def start(self) -> ScriptedModelServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = self.script(list(body.get("messages") or []))
        with self._lock:
            self.served.append(turn)
            serial = len(self.served)
        calls = [(TOOL_NAME, json.dumps({"query": q})) for q in turn.queries]
        usage = (estimate_tokens(json.dumps(body.get("messages"))), estimate_tokens(turn.text + json.dumps(calls)))
        return 200, openai_completion(MODEL_NAME, serial, turn.text, calls, usage)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the demo's scripted model turns (OpenAI protocol).")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    with ScriptedModelServer(args.port) as server:
        print(f"{LABEL}: serving at {server.base_url}", flush=True)
        while not stopping.wait(1.0):
            pass
    print("scripted model stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
