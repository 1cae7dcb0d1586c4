"""The robot's state in the graph database: where it is and what it holds.

The dispatcher writes it after every step, so the planner (and operators'
questions) always start from the truth. Layout, in the schema's names:
``(:Robot {nodeSymbol:'robot', x, y, z, place, holding})``, ``-[:AT]->`` the
place node, ``-[:HOLDING]->`` the held object. ``place`` / ``holding`` are ""
when unknown / empty-handed; the properties survive even if the mirror later
deletes the linked node, so the robot's own record is never lost.

Placing an object is recorded on the object too (decision): its ``x, y, z``
become the place's position and its ``CONTAINS`` parent becomes that place,
so a follow-up command sees the object where the robot left it. These are
mirrored properties: the next Hydra snapshot replaces them with what the
robot's perception observed, which is the more precise truth. While an object
is held, its mirrored position and parent are left alone; ``HOLDING`` is what
says where it is.
"""
from __future__ import annotations

from dataclasses import dataclass

from heracles_ros.errors import ExecutionError
from heracles_ros.graphdb.cypher import robot as cypher
from heracles_ros.graphdb.store import Params
from heracles_ros.mirror.symbols import symbol_layers
from heracles_ros.plan_types import Point3
from heracles_ros.robot_record import RobotRecord, RobotState
from heracles_ros.schema import Layer, is_scene_symbol

__all__ = ["RobotState", "RobotStateStore", "StartingState", "check_symbol", "starting_state"]


@dataclass(frozen=True)
class StartingState:
    """The state a dispatcher starts from, and whether it is the robot's record restored or a reset."""

    state: RobotState
    restored: bool
    #: For the log: what was restored, or where the robot was reset to and why.
    account: str


def check_symbol(symbol: str) -> str:
    """``symbol`` if it is shaped like a scene symbol, else ExecutionError naming it (its kind is the database's)."""
    if not is_scene_symbol(symbol):
        raise ExecutionError(f"{symbol!r} is not a scene symbol (one letter and a number, e.g. P3, Q6, p4)")
    return symbol


def _place_layer(symbol: str, kinds: dict[str, Layer]) -> Layer | None:
    """The database label of a place symbol (None: no such node, or none given); ExecutionError for a non-place."""
    layer = kinds.get(symbol)
    if layer is None or layer is Layer.MESH_PLACE or layer is Layer.PLACE:
        return layer
    raise ExecutionError(f"{symbol!r} is not a place symbol: the database holds it as {layer.value}")


def _object_symbol(symbol: str, kinds: dict[str, Layer]) -> bool:
    """Whether the database holds ``symbol`` as an object; ExecutionError when it holds it as something else."""
    layer = kinds.get(symbol)
    if layer is None or layer is Layer.OBJECT:
        return layer is not None
    raise ExecutionError(f"{symbol!r} is not an object symbol: the database holds it as {layer.value}")


class RobotStateStore(RobotRecord):
    """Reads (:class:`~heracles_ros.robot_record.RobotRecord`) and writes one robot's node; every write is one
    transaction."""

    def write(self, state: RobotState) -> None:
        """Replace the robot's pose, place and holding, with their AT / HOLDING links."""
        base: Params = {"symbol": self.symbol}
        statements: list[tuple[str, Params]] = [
            (
                cypher.UPSERT_ROBOT,
                {
                    **base,
                    "x": float(state.position[0]),
                    "y": float(state.position[1]),
                    "z": float(state.position[2]),
                    "place": state.place,
                    "holding": state.holding,
                },
            ),
            (cypher.UNLINK_ROBOT, base),
        ]
        kinds = self._kinds(state.place, state.holding)
        place_layer = _place_layer(state.place, kinds)
        if place_layer is not None:
            statements.append((cypher.link_robot_at(place_layer), {**base, "place": state.place}))
        if state.holding and _object_symbol(state.holding, kinds):
            statements.append((cypher.LINK_ROBOT_HOLDING, {**base, "object": state.holding}))
        self.store.write_many(statements)

    def record_placed(self, obj: str, place: str, position: Point3) -> None:
        """The robot put ``obj`` down at ``place`` (position = the place's)."""
        kinds = self._kinds(obj, place)
        params: Params = {
            "object": check_symbol(obj),
            "place": place,
            "x": float(position[0]),
            "y": float(position[1]),
            "z": float(position[2]),
        }
        if not _object_symbol(obj, kinds):
            return  # the object is gone from the database: nothing to move
        statements: list[tuple[str, Params]] = [
            (cypher.move_object(self.store.dialect), params),
            (cypher.UNLINK_OBJECT_CONTAINER, params),
        ]
        place_layer = _place_layer(place, kinds)
        if place_layer is not None:
            statements.append((cypher.link_object_container(place_layer), params))
        self.store.write_many(statements)

    def unknown_in(self, state: RobotState) -> list[str]:
        """What ``state`` names that the database lacks ("place P3", "object O14"): a record from another scene."""
        named = [symbol for symbol in (state.place, state.holding) if symbol and is_scene_symbol(symbol)]
        kinds = symbol_layers(self.store, named)
        unknown = []
        if state.place and kinds.get(state.place) not in (Layer.MESH_PLACE, Layer.PLACE):
            unknown.append(f"place {state.place}")
        if state.holding and kinds.get(state.holding) is not Layer.OBJECT:
            unknown.append(f"object {state.holding}")
        return unknown

    def place_position(self, symbol: str) -> Point3 | None:
        """Position of a place by symbol; None when there is no such node, ExecutionError when it is no place."""
        if _place_layer(check_symbol(symbol), self._kinds(symbol)) is None:
            return None
        return self.position_of(symbol)

    def position_of(self, symbol: str) -> Point3 | None:
        """Position of a scene node by symbol; None when there is no such node."""
        layer = symbol_layers(self.store, [symbol]).get(symbol)
        if layer is None:
            return None
        rows = self.store.query(cypher.node_position(layer), {"symbol": symbol})
        if not rows or rows[0]["x"] is None:
            return None
        row = rows[0]
        return (float(row["x"]), float(row["y"]), float(row["z"] or 0.0))

    def _kinds(self, *symbols: str) -> dict[str, Layer]:
        return symbol_layers(self.store, [check_symbol(s) for s in symbols if s])

    def forget(self) -> None:
        """Remove the robot node and its links (tests, or a robot taken out of service)."""
        self.store.write(cypher.DELETE_ROBOT, {"symbol": self.symbol})


def starting_state(states: RobotStateStore, start_place: str) -> StartingState:
    """Pose and held object restored together from the robot's record, or reset together, never one alone.

    - ``start_place`` given: reset there, holding nothing (whoever puts the robot at a
      place says where it is; nothing says it still holds what it held);
    - no record: reset at the map origin, holding nothing;
    - a record naming a place or an object the database lacks (another scene was
      loaded since): reset at the map origin, holding nothing;
    - else the record, whole.

    ExecutionError when ``start_place`` is not a place of the database.
    """
    recorded = states.read()
    had = f" (its record had it {recorded.words()})" if recorded is not None else ""
    if start_place:
        position = states.place_position(start_place)
        if position is None:
            raise ExecutionError(f"no place {start_place!r} in the database")
        return StartingState(RobotState(position, place=start_place), False,
                             f"reset at start_place {start_place}, holding nothing{had}")
    origin, reset = RobotState((0.0, 0.0, 0.0)), "reset at the map origin, holding nothing"
    if recorded is None:
        return StartingState(origin, False, f"{reset}: the database has no record of it")
    unknown = states.unknown_in(recorded)
    if unknown:
        lacks = f"its record names {' and '.join(unknown)}, which the scene lacks (another scene was loaded)"
        return StartingState(origin, False, f"{reset}: {lacks}")
    return StartingState(recorded, True, f"restored from its record: {recorded.words()}")
