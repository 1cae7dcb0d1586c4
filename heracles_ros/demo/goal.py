"""Pick the demo's task from what the database holds, so the goal is valid for the mirrored scene.

The task is "bring a box to the lounge": the robot starts in the middle of the
kitchen, and candidate goals ``(object-in-place O<box> P<lounge place>)`` are
ordered nearest box first, skipping boxes already in the lounge. The caller
plans them in order and keeps the first that solves (a box in a room the robot
cannot reach is unsolvable).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from heracles_ros.errors import SceneError
from heracles_ros.graphdb.cypher import demo as cypher
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.plan_types import Point3

#: The scene the demo and ``heracles up`` start from (package data; sim.launch.py's default too).
EXAMPLE_SCENE = Path(__file__).resolve().parents[1] / "data" / "example_scene.json"
OBJECT_CLASS = "box"
TARGET_ROOM_CLASS = "lounge"
START_ROOM_CLASS = "kitchen"


@dataclass(frozen=True)
class Anchor:
    """The place nearest the middle of a room: where the robot starts, where the box goes."""

    room: str
    room_class: str
    place: str
    position: Point3


@dataclass(frozen=True)
class DemoGoal:
    goal: str
    object_symbol: str
    object_position: Point3
    from_room: str
    from_room_class: str
    target: Anchor

    @property
    def description(self) -> str:
        return (
            f"bring the {OBJECT_CLASS} {self.object_symbol} from the {self.from_room_class} ({self.from_room}) "
            f"to the {self.target.room_class} ({self.target.room}), putting it down at {self.target.place}"
        )

    @property
    def instruction(self) -> str:
        """The same task in plain language, for the language layer."""
        return f"Bring a {OBJECT_CLASS} from the {self.from_room_class} to the {self.target.room_class}."


def room_anchor(store: GraphStore, room_class: str) -> Anchor:
    """The mesh place nearest the centroid of the first room (by symbol) of ``room_class``."""
    rows = store.query(cypher.PLACES_OF_ROOM_CLASS, {"room_class": room_class})
    if not rows:
        raise SceneError(f"the scene has no room of class {room_class!r} with mesh places")
    room = min({str(r["room"]) for r in rows}, key=_symbol_order)
    places = [r for r in rows if r["room"] == room]
    cx = sum(float(r["x"]) for r in places) / len(places)
    cy = sum(float(r["y"]) for r in places) / len(places)
    best = min(places, key=lambda r: (math.hypot(float(r["x"]) - cx, float(r["y"]) - cy), _symbol_order(r["place"])))
    return Anchor(room, room_class, str(best["place"]), (float(best["x"]), float(best["y"]), float(best["z"] or 0.0)))


def candidate_goals(store: GraphStore, start: Anchor) -> list[DemoGoal]:
    """Goals that bring a box not yet in the lounge there, nearest box to ``start`` first."""
    target = room_anchor(store, TARGET_ROOM_CLASS)
    rows = store.query(cypher.OBJECTS_OF_CLASS_WITH_ROOM, {"cls": OBJECT_CLASS})
    goals = []
    for row in rows:
        if row["room"] == target.room:
            continue
        position = (float(row["x"]), float(row["y"]), float(row["z"] or 0.0))
        goals.append(
            DemoGoal(
                goal=f"(object-in-place {row['object']} {target.place})",
                object_symbol=str(row["object"]),
                object_position=position,
                from_room=str(row["room"]),
                from_room_class=str(row["room_class"]),
                target=target,
            )
        )
    if not goals:
        raise SceneError(f"the scene has no {OBJECT_CLASS} outside the {TARGET_ROOM_CLASS} on a mesh place")
    goals.sort(key=lambda g: (math.dist(g.object_position[:2], start.position[:2]), _symbol_order(g.object_symbol)))
    return goals


def _symbol_order(symbol: object) -> tuple[str, int]:
    text = str(symbol)
    return (text[:1], int(text[1:]) if text[1:].isdigit() else -1)
