"""A plan is checked against the world before the robot moves.

``execute_plan`` is reachable by anything on the robot's DDS domain, and a plan
carries its own geometry: a driver walks to the coordinates it is given. So the
dispatcher trusts none of it: every plan and every replan must have finite
numbers, a bounded number of steps and path length, every goto target and
waypoint within a tolerance of where the database says its symbol is, and a
pick or place only where the robot will stand at the place it names (or within
the tolerance of the object). The database is read once per plan
(:func:`read_world`); :func:`check_plan` is pure, so each rule is tested
without a server.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from heracles_ros.errors import ConfigError
from heracles_ros.execution.robot_state import RobotState
from heracles_ros.graphdb.cypher import plan_check as cypher
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.plan_types import PlanAction, PlanResult, Point3
from heracles_ros.schema import Layer, is_scene_symbol

#: At most this many problems are listed in one refusal (the rest are counted).
MAX_LISTED = 8


@dataclass(frozen=True)
class PlanLimits:
    #: Most steps a plan may have.
    max_steps: int = 200
    #: Longest total walk of a plan, metres (planar, through every waypoint).
    max_path_length_m: float = 5000.0
    #: Farthest a target or waypoint may be from where the database has its symbol, metres.
    tolerance_m: float = 1.0

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(f"max_plan_steps must be >= 1, got {self.max_steps}")
        if not self.max_path_length_m > 0:
            raise ConfigError(f"max_plan_path_m must be > 0, got {self.max_path_length_m}")
        if not self.tolerance_m > 0:
            raise ConfigError(f"plan_tolerance_m must be > 0, got {self.tolerance_m}")


@dataclass(frozen=True)
class Located:
    """Where the database has one symbol."""

    layer: Layer
    #: None when the node has no coordinates.
    position: Point3 | None
    #: Symbols of the nodes that CONTAIN it (an object's place).
    containers: tuple[str, ...] = ()


def plan_symbols(plan: PlanResult) -> list[str]:
    """Every scene symbol a plan names (targets, waypoints, arguments), once each."""
    names = itertools.chain.from_iterable(
        (a.target_symbol, *a.waypoint_symbols, *a.args) for a in plan.actions
    )
    return [s for s in dict.fromkeys(names) if is_scene_symbol(s)]


def read_world(store: GraphStore, symbols: Iterable[str]) -> dict[str, Located]:
    """Label, position and containers of each symbol the database holds (absent ones left out)."""
    wanted = [s for s in dict.fromkeys(symbols) if is_scene_symbol(s)]
    if not wanted:
        return {}
    world: dict[str, Located] = {}
    for row in store.query(cypher.SYMBOL_POSITIONS, {"symbols": wanted}):
        coords = (row["x"], row["y"], row["z"] if row["z"] is not None else 0.0)
        position = None if row["x"] is None or row["y"] is None else tuple(float(c) for c in coords)
        containers = tuple(str(c) for c in row["containers"] or () if c)
        world.setdefault(str(row["symbol"]), Located(Layer(row["label"]), position, containers))  # type: ignore[arg-type]
    return world


def check_plan(
    plan: PlanResult, robot: RobotState, world: Mapping[str, Located] | None, limits: PlanLimits
) -> list[str]:
    """Everything that makes ``plan`` unsafe to start from ``robot``, each naming the step; [] when none.

    ``world`` None (no database) checks numbers, steps and path length only.
    """
    if len(plan.actions) > limits.max_steps:
        return [f"the plan has {len(plan.actions)} steps, more than max_plan_steps ({limits.max_steps})"]
    problems: list[str] = []
    here, at = robot.position, robot.place
    walked = 0.0
    for index, action in enumerate(plan.actions):
        where = f"step {index} ({action.name} {action.target_symbol})"
        numbers = _not_finite(action)
        if numbers:
            problems.append(f"{where}: {numbers}")
            continue
        if world is not None:
            problems += [f"{where}: {p}" for p in _world_problems(action, here, at, world, limits.tolerance_m)]
        if action.name == "goto":
            points = list(action.waypoints) or [action.target]
            walked += sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in itertools.pairwise([here, *points]))
            here, at = action.target, action.target_symbol
    if not problems and not walked <= limits.max_path_length_m:
        problems.append(f"the plan walks {walked:.6g} m, more than max_plan_path_m ({limits.max_path_length_m:g})")
    if len(problems) > MAX_LISTED:
        problems = [*problems[:MAX_LISTED], f"and {len(problems) - MAX_LISTED} more problems"]
    return problems


def _not_finite(action: PlanAction) -> str:
    if not all(math.isfinite(v) for v in action.target):
        return f"target position {action.target} is not finite"
    if any(not all(math.isfinite(v) for v in p) for p in action.waypoints):
        return "a waypoint position is not finite"
    if not math.isfinite(action.cost):
        return f"cost {action.cost} is not finite"
    return ""


def _world_problems(
    action: PlanAction, here: Point3, at: str, world: Mapping[str, Located], tolerance_m: float
) -> list[str]:
    """What the database contradicts in one step, the robot being at ``here`` (place ``at``) before it."""
    problems: list[str] = []
    if action.name == "goto":
        problems += _near(action.target, action.target_symbol, "target", world, tolerance_m)
        if action.waypoints and len(action.waypoint_symbols) != len(action.waypoints):
            problems.append("its waypoints name no place symbols to check them against")
        else:
            for i, (point, symbol) in enumerate(zip(action.waypoints, action.waypoint_symbols, strict=True)):
                problems += _near(point, symbol, f"waypoint {i}", world, tolerance_m)
        return problems
    obj, place = object_of(action), place_of(action)
    if action.name in ("pick", "inspect"):
        problems += _near(action.target, obj, "target", world, tolerance_m)
    elif action.name == "place" and place:
        problems += _near(action.target, place, "target", world, tolerance_m)
    if action.name not in ("pick", "place") or problems:
        return problems
    located = world.get(obj)
    if located is None or located.layer is not Layer.OBJECT:
        return [f"no object {obj!r} in the database"]
    if action.name == "pick" and place and located.containers and place not in located.containers:
        problems.append(f"the database has {obj} in {', '.join(located.containers)}, not in {place}")
    if place and at == place:
        return problems
    anchor = located.position if action.name == "pick" else _position(world, place) or action.target
    # Planar: the body stands lower than an object on a table, or a place's centre.
    if anchor is None or math.hypot(here[0] - anchor[0], here[1] - anchor[1]) > tolerance_m:
        stands = f"at {at}" if at else f"at ({here[0]:.1f}, {here[1]:.1f})"
        named = place or obj
        problems.append(f"the robot will stand {stands}, not at {named}: a {action.name} needs the robot there")
    return problems


def _near(point: Point3, symbol: str, what: str, world: Mapping[str, Located], tolerance_m: float) -> list[str]:
    located = world.get(symbol)
    if located is None:
        return [f"{what} {symbol!r} is not in the database"]
    if located.position is None:
        return [f"{what} {symbol!r} has no position in the database"]
    distance = math.dist(point, located.position)
    if distance > tolerance_m:
        return [f"{what} {symbol} is given at {_fmt(point)}, {distance:.6g} m from where the database has it "
                f"({_fmt(located.position)}; tolerance {tolerance_m:g} m)"]
    return []


def _position(world: Mapping[str, Located], symbol: str) -> Point3 | None:
    located = world.get(symbol)
    return located.position if located is not None else None


def object_of(action: PlanAction) -> str:
    """The object a pick/place/inspect acts on: its first argument (the domain's ``?o - item``), else its target."""
    for symbol in (*action.args[:1], action.target_symbol):
        if is_scene_symbol(symbol):
            return symbol
    return ""


def place_of(action: PlanAction) -> str:
    """The place argument of a pick/place/inspect (the domain's ``?p - place``), "" when it names none."""
    if action.name in ("inspect", "pick", "place") and len(action.args) > 1 and is_scene_symbol(action.args[1]):
        return action.args[1]
    return ""


def _fmt(p: Point3) -> str:
    return "(" + ", ".join(f"{v:.6g}" for v in p) + ")"
