"""Scripted model turns, so the language layer can be shown at the desk with no language model configured.

A small HTTP server on 127.0.0.1 speaking the OpenAI Chat Completions protocol
(what the agent's ``openai`` adapter sends), which plays fixed turns for the
demo's question (:data:`QUESTION`) and command (:func:`command_for`): it asks
the database through the agent's real Cypher tool, then answers from the rows
that came back. Everything else (the agent loop, the queries, the goal checker,
the planner, the dispatcher) is the real system; only the model's words are
scripted, and whoever uses it says so (:data:`LABEL`). It also answers the README's
examples ("Which room is the bicycle in?", "Bring the box nearest the bicycle to the
lounge"), asking back which one is meant when the scene holds several, and takes
the operator's reply (a symbol, or "the one nearest you"). Any other request is
asked back with the sentences it knows (:data:`KNOWN_SENTENCES`), so the operator
reads them where the answer would be.

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
from heracles_ros.demo.chat_server import OPENAI_PATH, ChatServer, ServesChat, estimate_tokens, openai_completion
from heracles_ros.graphdb.cypher import demo as cypher

#: The model name the server reports, so a log line naming the model says it too.
MODEL_NAME = "scripted-demo-turns"
#: What every output using this server prints next to its answers.
LABEL = "SCRIPTED model turns (no language model configured; not a language model's answers)"
QUESTION = "How many boxes are there in the lounge?"
_INSTRUCTION = re.compile(r"^Bring a box from the (?P<room_class>[\w ]+?) to the lounge\.?$", re.IGNORECASE)
_WHICH_ROOM = re.compile(r"^Which room is the (?P<cls>[\w -]+?) in\??$", re.IGNORECASE)
_BRING_NEAREST = re.compile(
    r"^Bring the (?P<cls>[\w -]+?) (?:nearest|closest to) the (?P<near>[\w -]+?) to the (?P<room_class>[\w -]+?)\.?$",
    re.IGNORECASE)
#: An operator's reply to a question back: a candidate's symbol, or the one nearest the robot.
_CHOICE = re.compile(r"^(?:the one nearest you|(?P<symbol>[A-Za-z]\d+))\.?$", re.IGNORECASE)
_REQUEST_LINE = re.compile(r"^(Question|Instruction|Correction): (?P<text>.+)$", re.MULTILINE)
#: The sentences the scripted turns answer, as the operator is told when asking anything else.
KNOWN_SENTENCES = (QUESTION, "Which room is the <object class> in?", "Bring a box from the <room class> to the lounge.",
                   "Bring the <object class> nearest the <object class> to the <room class>.")
UNKNOWN_REPLY = ("<answer>CLARIFY(\"This is the scripted model (no language model is configured): it knows only "
                 + "; ".join(f"'{s}'" for s in KNOWN_SENTENCES)
                 + ". Ask one of those, or configure a language model (docs/desk.md).\", <>)</answer>")


def command_for(room_class: str) -> str:
    """The demo's command, in the words the scripted model answers."""
    return f"Bring a box from the {room_class} to the lounge."


@dataclass(frozen=True)
class ScriptedTurn:
    """One model reply: text, and the Cypher queries it asks the tool to run."""

    text: str = ""
    queries: tuple[str, ...] = ()


def next_turn(messages: list[dict[str, Any]]) -> ScriptedTurn:
    """The scripted reply to a conversation (the agent's system and user messages, earlier exchanges of the
    session, then this request's tool results)."""
    requests = [m["text"].strip() for message in messages if message.get("role") == "user"
                for m in _REQUEST_LINE.finditer(str(message.get("content") or ""))]
    text = requests[-1] if requests else ""
    choice = _CHOICE.match(text)
    if choice and len(requests) > 1:  # the operator answered a question back: the earlier request, resolved
        text = requests[-2]
    results = [_rows(str(m.get("content") or "")) for m in messages if m.get("role") == "tool"]
    if text.lower() == QUESTION.lower():
        if not results:
            return ScriptedTurn("I count the boxes in the lounge.", (cypher.SCRIPTED_BOXES_IN_LOUNGE,))
        count = results[-1][0].get("boxes", 0) if results[-1] else 0
        return ScriptedTurn(f"<answer>{int(count)}</answer>")
    instruction = _INSTRUCTION.match(text)
    if instruction:
        queries: tuple[str, ...] = (cypher.SCRIPTED_BOXES_OUTSIDE_LOUNGE, cypher.SCRIPTED_LOUNGE_PLACES,
                                    cypher.SCRIPTED_ROBOT)
        if len(results) < len(queries):
            return ScriptedTurn("I look up the boxes, the lounge's places and the robot.", queries)
        return ScriptedTurn(_goal(instruction["room_class"], *results[-3:]))
    which = _WHICH_ROOM.match(text)
    if which:
        queries = (cypher.scripted_objects_of_class(which["cls"].lower()), cypher.SCRIPTED_ROBOT)
        if len(results) < len(queries):
            return ScriptedTurn(f"I look up every {which['cls']} and where it is.", queries)
        found = _one(which["cls"], results[-2], results[-1], choice)
        if isinstance(found, str):
            return ScriptedTurn(found)
        return ScriptedTurn(f"<answer>{json.dumps(str(found['room_class']))}</answer>")
    bring = _BRING_NEAREST.match(text)
    if bring:
        queries = (cypher.scripted_objects_of_class(bring["cls"].lower()),
                   cypher.scripted_objects_of_class(bring["near"].lower()),
                   cypher.scripted_places_of_room_class(bring["room_class"].lower()), cypher.SCRIPTED_ROBOT)
        if len(results) < len(queries):
            return ScriptedTurn(f"I look up the {bring['cls']}s, the {bring['near']}s, the {bring['room_class']}'s "
                                "places and the robot.", queries)
        objects, near, places, robots = results[-4:]
        anchor = _one(bring["near"], near, robots, choice)
        if isinstance(anchor, str):
            return ScriptedTurn(anchor)
        if not objects:
            return ScriptedTurn(_no_such(bring["cls"]))
        if not places:
            return ScriptedTurn(_no_such(bring["room_class"], "room"))
        nearest = min(objects, key=lambda o: math.dist((o["x"], o["y"]), (anchor["x"], anchor["y"])))
        return ScriptedTurn(f"<answer>(object-in-place {nearest['object']} {_middle_place(places)})</answer>")
    return ScriptedTurn(UNKNOWN_REPLY)


def _one(cls: str, rows: list[dict[str, Any]], robots: list[dict[str, Any]],
         choice: re.Match[str] | None) -> dict[str, Any] | str:
    """The one object of ``cls`` the operator means, or a question back (the reply text) when that is not clear:
    none, or several and no choice among them (a symbol, or "the one nearest you")."""
    if choice is not None and choice["symbol"]:
        rows = [r for r in rows if str(r["object"]).lower() == choice["symbol"].lower()]
    elif choice is not None and rows and robots and robots[0].get("x") is not None:
        robot = robots[0]
        rows = [min(rows, key=lambda r: math.dist((r["x"], r["y"]), (robot["x"], robot["y"])))]
    if not rows:
        return _no_such(cls)
    if len(rows) > 1:
        symbols = ", ".join(str(r["object"]) for r in rows)
        return f'<answer>CLARIFY("Which {cls} do you mean? There are {len(rows)}.", <{symbols}>)</answer>'
    return rows[0]


def _no_such(name: str, kind: str = "object") -> str:
    return f'<answer>CLARIFY("I find no {kind} of class {name} in the scene graph. What do you mean?", <>)</answer>'


def _middle_place(places: list[dict[str, Any]]) -> str:
    """The place of the first room (of the rows' order) nearest that room's middle."""
    room = [p for p in places if p["room"] == places[0]["room"]]
    cx = sum(p["x"] for p in room) / len(room)
    cy = sum(p["y"] for p in room) / len(room)
    return str(min(room, key=lambda p: math.dist((p["x"], p["y"]), (cx, cy)))["place"])


def _goal(room_class: str, boxes: list[dict[str, Any]], places: list[dict[str, Any]],
          robots: list[dict[str, Any]]) -> str:
    """The box of that room nearest the robot, to the lounge's place nearest the middle of its first lounge."""
    candidates = [b for b in boxes if str(b.get("room_class", "")).lower() == room_class.lower()]
    if not candidates or not places:
        return f"<answer>There is no box in a {room_class} or no lounge with places to bring it to.</answer>"
    robot = robots[0] if robots and robots[0].get("x") is not None else None
    if robot is not None:
        candidates.sort(key=lambda b: math.dist((b["x"], b["y"]), (robot["x"], robot["y"])))
    return f"<answer>(object-in-place {candidates[0]['box']} {_middle_place(places)})</answer>"


def _rows(text: str) -> list[dict[str, Any]]:
    """The JSON rows at the start of a tool result (notes may follow them); [] for an error."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except ValueError:
        return []
    return [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []


@dataclass
class ScriptedModelServer(ServesChat):
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
