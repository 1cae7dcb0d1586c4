"""What tells the scene nodes of a clarification apart, read from the database (not taken from the model).

The model names the candidates of an ambiguous request; their class, room and
distance to the robot come from the live graph, so the operator chooses
between facts, and a symbol the model made up is caught before anyone sees it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from heracles_ros.agent.results import Candidate
from heracles_ros.graphdb.cypher.referents import DESCRIBE_REFERENTS
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.robot_record import RobotRecord


class Referents:
    """Describes scene symbols for one store and robot."""

    def __init__(self, store: GraphStore, *, robot_symbol: str):
        self.store = store
        self.robot = RobotRecord(store, symbol=robot_symbol)

    def describe(self, symbols: Sequence[str]) -> tuple[list[Candidate], list[str]]:
        """Candidates for the symbols found (in the order given), and the symbols not in the graph."""
        if not symbols:
            return [], []
        rows = {row["symbol"]: row for row in self.store.query(DESCRIBE_REFERENTS, {"symbols": list(symbols)})}
        state = self.robot.read()
        found, missing = [], []
        for symbol in symbols:
            row = rows.get(symbol)
            if row is None or symbol == self.robot.symbol:
                missing.append(symbol)
                continue
            rooms, room_classes = list(row.get("rooms") or []), list(row.get("room_classes") or [])
            distance = None
            if state is not None and _number(row.get("x")) and _number(row.get("y")):
                distance = math.hypot(row["x"] - state.position[0], row["y"] - state.position[1])
            found.append(Candidate(
                symbol=symbol,
                class_name=str(row.get("class") or ""),
                room=str(rooms[0]) if rooms else "",
                room_class=str(room_classes[0]) if room_classes and rooms else "",
                distance_m=distance,
                source=str(row.get("source") or ""),
            ))
        return found, missing

    def classes(self, symbols: Sequence[str]) -> dict[str, str]:
        """symbol -> class for the symbols in the graph (for goals in words)."""
        candidates, _ = self.describe(symbols)
        return {c.symbol: c.class_name for c in candidates if c.class_name}


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
