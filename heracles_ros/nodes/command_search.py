"""A command's search (``execute_command`` with ``search_for``): what the map lacks, looked for before the
instruction is grounded.

The rooms are ranked and walked by :class:`heracles_ros.search.runner.Search`; each leg is a plan to the room's
viewpoint sent through the command's :class:`.plan_dispatch.PlanDispatch`, like any plan of the command: a
cancel, a lost client, the node closing or the latched stop end it as they end a plan (the robot stops). While
a leg runs the primary database is read every :data:`LOOK_S` for the thing (a new object of WHAT, as
:mod:`heracles_ros.search.target` recognises it); once it is there the leg is cancelled (the robot stands)
and the search ends ``found``. Feedback (stage ``search``) says where it looks next and what it has ruled out.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from heracles_ros.action import ExecuteCommand
from heracles_ros.nodes.plan_dispatch import Interruption, PlanDispatch, StopCheck
from heracles_ros.planning.planner import Planner
from heracles_ros.robot_record import RobotRecord
from heracles_ros.ros.plan_msgs import plan_to_msg
from heracles_ros.search.area import map_objects, search_area, things_seen, walk_lengths
from heracles_ros.search.runner import XY, Leg, Search, SearchResult
from heracles_ros.search.target import Target

#: Seconds between looks for the thing while a leg runs.
LOOK_S = 0.25
#: The search's bounds: rooms looked in, and wall-clock seconds in all.
MAX_ROOMS = 10
TIMEOUT_S = 900.0
#: How far the robot sees, metres (the simulated Hydra's default sim_sensor_range_m): what a walk rules out.
SENSOR_RANGE_M = 3.0
#: The reason a leg is cancelled with when the thing is seen (the command's own cancel, not the operator's).
FOUND = "found "

#: ``dispatch(feedback, interruption)``: a PlanDispatch of the command with these two in place of its own.
Dispatcher = Callable[[Callable[..., None], Interruption], PlanDispatch]


class CommandSearch:
    """One search for ``target`` over the map ``planner`` plans on (its primary store)."""

    def __init__(self, planner: Planner, target: Target, *, command_id: str, map_frame: str, stamp: Callable[[], Any],
                 dispatch: Dispatcher, feedback: Callable[..., None], interruption: Interruption,
                 stopped: StopCheck):
        self.planner = planner
        self.store = planner.store
        self.target = target
        self.command_id = command_id
        self.map_frame = map_frame
        self._stamp = stamp
        self._dispatch = dispatch
        self._feedback = feedback
        self._interruption = interruption
        self._stopped = stopped
        self._legs = 0
        graph = planner.place_graph()
        self.area = search_area(self.store, graph)
        self._lengths = lambda xy: walk_lengths(graph, self.area, xy)
        self.search = Search(self.area, target.similarity, sensor_range_m=SENSOR_RANGE_M, max_rooms=MAX_ROOMS,
                             timeout_s=TIMEOUT_S)
        self.before = map_objects(self.store)

    def on_the_map(self) -> dict[str, Any] | None:
        """The first object of the map that is already what the search looks for, if any."""
        found = things_seen(self.store, self.target, [])
        return found[0] if found else None

    def first_rooms(self, count: int = 3) -> list[str]:
        """The rooms it would look in first, in order (what the operator confirms)."""
        start = self._robot_xy()
        lengths = self._lengths(start)
        order = sorted((room for room in self.search.prior if room in lengths),
                       key=lambda room: -self.search.prior[room] / (lengths[room] + 4.0))
        return order[:count]

    def run(self) -> SearchResult:
        return self.search.run(self._robot_xy(), self._walk, self._lengths,
                               feedback=lambda text: self._feedback("search", text))

    def _robot_xy(self) -> XY:
        robot = RobotRecord(self.store, symbol=self.planner.robot_symbol).read()
        return (robot.position[0], robot.position[1]) if robot is not None else (0.0, 0.0)

    def _walk(self, room: str, viewpoint: str) -> Leg:
        """One leg to ``viewpoint`` through the dispatcher, ended early when the thing is seen."""
        leg = ExecuteCommand.Result()
        if self._stopped(leg, f"before the search's leg to {room}"):
            return Leg(leg.outcome, [], reason=leg.reason)
        plan = self.planner.plan(f"(at-place {viewpoint})")
        if not plan.ok:
            return Leg("failed", [], reason=f"no plan to {viewpoint} in {room}: {plan.reason or plan.status.value}")
        self._legs += 1
        message = plan_to_msg(plan, plan_id=f"{self.command_id}-search-{self._legs}", frame_id=self.map_frame,
                              stamp=self._stamp())
        positions: list[XY] = []
        seen: list[dict[str, Any]] = []
        last_look = [0.0]

        def feedback(stage: str, text: str, **fields: Any) -> None:
            step = fields.get("step")
            if step is not None:
                positions.append((step.robot_position.x, step.robot_position.y))
            self._feedback(stage, text, **fields)

        def interruption(stage: str) -> str:
            reason = self._interruption(stage)
            if reason or seen:
                return reason or FOUND + str(seen[0]["symbol"])
            if time.monotonic() - last_look[0] >= LOOK_S:
                last_look[0] = time.monotonic()
                seen.extend(things_seen(self.store, self.target, self.before))
            return FOUND + str(seen[0]["symbol"]) if seen else ""

        self._dispatch(feedback, interruption).run(message, leg)
        if not seen and leg.outcome == "succeeded":
            seen.extend(things_seen(self.store, self.target, self.before))  # seen on the leg's last step
        end = self._robot_xy()
        positions.append(end)
        if seen and not self._interruption("searching"):
            thing = seen[0]
            return Leg("found", positions, found=str(thing["symbol"]),
                       found_where=self.area.room_at((float(thing["x"]), float(thing["y"]))) or room)
        if leg.outcome == "succeeded":
            return Leg("arrived", positions)
        return Leg(leg.outcome or "failed", positions, reason=leg.reason)


def search_proposal(missing: str) -> str:
    """The ask-back's proposal when the map lacks ``missing``: the same command again with ``search_for``."""
    return (f'to go and look for {missing}, send the command again with search_for "{missing}" '
            f"(heracles command --execute --search '{missing}' ...)")
