"""The agent's ``scene_at`` tool: the scene, or one node, as it was at a past time, from the mirror's history.

A tool rather than a Cypher shape over the history: the scene at T is the present with every event after T
undone, taking each node's first snapshot after T and combining its kinds of event
(:mod:`heracles_ros.mirror.as_of`); a small model does not write that query reliably, and a wrong one reads
as a confident wrong past. So "where was the box ten minutes ago", "when did you last see the bicycle" and
"what was in the kitchen this morning" are one call each; "what changed in R2" stays a Cypher query over the
``Change`` entries (the prompt shows it). A time before what the history keeps is a tool error that says what
it keeps. A duration ("10m") counts back from the newest snapshot, the time the prompt calls now.

Goals stay about the present: a goal names nodes as they are now, and a goal naming a node that has left
the scene is refused by the goal checker; :func:`gone_notes` tells the model which of its symbols are gone.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from heracles_ros.agent.llm import ToolSpec
from heracles_ros.agent.tool import ToolOutput, format_rows, tool_error
from heracles_ros.errors import HeraclesError, describe
from heracles_ros.graphdb.store import CappedRows, GraphStore
from heracles_ros.mirror.as_of import NodeAt, OutOfRange, node_at, read_range, scene_at
from heracles_ros.mirror.history import iso_time
from heracles_ros.mirror.snapshot_reads import DEFAULT_WAIT_S
from heracles_ros.mirror.time_text import parse_time
from heracles_ros.schema import SCENE_SYMBOL, is_scene_symbol

TIME_TOOL_NAME = "scene_at"
_ARGUMENTS = ("time", "symbol", "class", "room")
#: Goal symbols looked up in the history when a goal is refused (a goal is short; this bounds the reads).
_MAX_GONE_LOOKUPS = 8

TIME_TOOL = ToolSpec(
    name=TIME_TOOL_NAME,
    description=(
        "The scene at a past time, from the history: with 'symbol', where that node was then (present, last_seen); "
        "otherwise the objects there then, optionally of one 'class' or in one 'room'."
    ),
    parameters={
        "type": "object",
        "properties": {
            "time": {"type": "string", "description": "'10m' (ago), an ISO time, epoch seconds, or 'now'"},
            "symbol": {"type": "string", "description": "a node's symbol, e.g. 'O12'"},
            "class": {"type": "string", "description": "an object class"},
            "room": {"type": "string", "description": "a room's symbol, e.g. 'R2'"},
        },
        "required": ["time"],
        "additionalProperties": False,
    },
)


class TimeTool:
    """Runs ``scene_at`` calls on one store."""

    def __init__(self, store: GraphStore, *, token_budget: int = 2000, snapshot_wait_s: float = DEFAULT_WAIT_S):
        self.store = store
        self.token_budget = token_budget
        self.snapshot_wait_s = snapshot_wait_s

    def run(self, arguments: dict[str, Any]) -> ToolOutput:
        unknown = sorted(set(arguments) - set(_ARGUMENTS))
        if unknown:
            return tool_error(f"{TIME_TOOL_NAME} takes {', '.join(_ARGUMENTS)}, not {', '.join(map(repr, unknown))}.")
        texts = {name: arguments.get(name) for name in _ARGUMENTS}
        wrong = [name for name, value in texts.items() if value is not None and not isinstance(value, str)]
        if wrong or not texts["time"]:
            return tool_error(f"{TIME_TOOL_NAME} needs 'time' (e.g. '10m', an ISO time or 'now') and takes text "
                              f"values only{': ' + ', '.join(wrong) + ' is not text' if wrong else ''}.")
        symbol, cls, room = texts["symbol"], texts["class"], texts["room"]
        if symbol is not None and (cls is not None or room is not None):
            return tool_error("give either 'symbol' (one node) or 'class' / 'room' (objects), not both.")
        for name, value in (("symbol", symbol), ("room", room)):
            if value is not None and not is_scene_symbol(value):
                return tool_error(f"{name} {value!r} is not a scene symbol (a letter and a number, e.g. O12 or R2).")
        try:
            at = self._time(str(texts["time"]))
            if symbol is not None:
                return self._node(symbol, at)
            return self._scene(at, cls, room)
        except HeraclesError as exc:
            return tool_error(f"{TIME_TOOL_NAME} failed: {describe(exc)}")

    def _time(self, text: str) -> float | None:
        """Epoch seconds, None for now; durations count back from the newest snapshot (else this clock)."""
        if text.strip().lower() == "now":
            return None
        history = read_range(self.store)
        return parse_time(text.strip(), what="time", now=history.newest_t if history is not None else None)

    def _node(self, symbol: str, at: float | None) -> ToolOutput:
        found = node_at(self.store, symbol, at, wait_s=self.snapshot_wait_s)
        if isinstance(found, OutOfRange):
            return tool_error(found.message)
        if found is None:
            return tool_error(f"{symbol}: no such node in the scene, nor in the history it keeps.")
        return self._rows([_row(found)], at)

    def _scene(self, at: float | None, cls: str | None, room: str | None) -> ToolOutput:
        found = scene_at(self.store, at, cls=cls, room=room, wait_s=self.snapshot_wait_s)
        if isinstance(found, OutOfRange):
            return tool_error(found.message)
        if not found.objects:
            return ToolOutput(f"[] (no object {_filters(cls, room)}was in the scene {_when(at)})")
        output = self._rows([_row(node) for node in found.objects], at)
        if found.whole:
            return output
        return replace(output, text=output.text + "\n(note: the mirror wrote a new snapshot during the read; ask again "
                       "for a consistent answer)")

    def _rows(self, rows: list[dict[str, Any]], at: float | None) -> ToolOutput:
        output = format_rows(CappedRows(rows, len(rows)), token_budget=self.token_budget,
                             advice="name a class, a room or one symbol")
        return replace(output, text=f"{output.text}\n(as of {_when(at)}; times are epoch seconds)")


def _row(node: NodeAt) -> dict[str, Any]:
    x, y, z = node.position if node.position is not None else (None, None, None)
    return {"symbol": node.symbol, "class": node.cls, "present": node.present, "x": x, "y": y, "z": z,
            "room": node.room, "last_seen": node.last_seen}


def _when(at: float | None) -> str:
    return "now" if at is None else f"{iso_time(at)} (t {at:.3f})"


def _filters(cls: str | None, room: str | None) -> str:
    return (f"of class {cls!r} " if cls else "") + (f"in {room} " if room else "")


def gone_notes(store: GraphStore, goal_text: str) -> list[str]:
    """For a refused goal: each symbol it names that has left the scene, when it was last seen (a goal is about
    the scene now; where something used to be is no goal)."""
    notes: list[str] = []
    symbols = list(dict.fromkeys(re.findall(rf"\b{SCENE_SYMBOL.pattern}\b", goal_text)))
    for symbol in symbols[:_MAX_GONE_LOOKUPS]:
        try:
            found = node_at(store, symbol, None)
        except HeraclesError:  # a courtesy to the model: the checker's own problems still go back
            continue
        if isinstance(found, NodeAt) and not found.present:
            seen = f", last seen {iso_time(found.last_seen)}" if found.last_seen else ""
            notes.append(f"{symbol} ({found.cls}) is no longer in the scene{seen}.")
    return notes
