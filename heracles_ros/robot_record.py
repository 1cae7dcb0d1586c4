"""The robot's record in the graph database, as its readers see it: where it stands and what it holds.

The dispatcher writes the record after every step
(:class:`~heracles_ros.execution.robot_state.RobotStateStore`); the planner starts from it and the agent
measures distances from it. Reading it lives here, below all three, so that planning and the agent
need nothing of execution.
"""
from __future__ import annotations

from dataclasses import dataclass

from heracles_ros.graphdb.cypher import robot as cypher
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.plan_types import Point3
from heracles_ros.schema import ROBOT_SYMBOL


@dataclass(frozen=True)
class RobotState:
    position: Point3
    #: Place symbol the robot stands at ("" when not known).
    place: str = ""
    #: Object symbol in the gripper ("" when empty-handed).
    holding: str = ""

    def words(self) -> str:
        """"at P3 holding O14", "at (1.0, 2.0) holding nothing"."""
        where = self.place or f"({self.position[0]:.1f}, {self.position[1]:.1f})"
        return f"at {where} holding {self.holding or 'nothing'}"


class RobotRecord:
    """Reads one robot's node (``symbol``)."""

    def __init__(self, store: GraphStore, *, symbol: str = ROBOT_SYMBOL):
        self.store = store
        self.symbol = symbol

    def read(self) -> RobotState | None:
        """The recorded state, or None when the robot was never written."""
        rows = self.store.query(cypher.READ_ROBOT, {"symbol": self.symbol})
        if not rows:
            return None
        row = rows[0]
        position = (float(row["x"] or 0.0), float(row["y"] or 0.0), float(row["z"] or 0.0))
        return RobotState(position, place=str(row["place"] or ""), holding=str(row["holding"] or ""))
