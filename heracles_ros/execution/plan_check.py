"""A plan is checked against the world before the robot moves.

``execute_plan`` is reachable by anything on the robot's DDS domain, and a plan
carries its own geometry: a driver walks to the coordinates it is given. So the
dispatcher trusts none of it: every plan and every replan must have finite
numbers, a bounded number of steps and path length, every goto target and
waypoint within a tolerance of where the database says its symbol is, every
walk along the place graph (each hop between consecutive places an edge of the
database, or a short step that no edge can join: onto the graph from where the
robot stands, or between a 3D place and its mesh place), and a pick or place
only where the robot will stand at the place it names (or within the tolerance
of the object). The database is read once per plan (:func:`read_world`), and
again before each step (:func:`check_step`: an object removed or reverted since
the plan was made fails its step); the checks are pure, so each rule is tested
without a server.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from heracles_ros.errors import ConfigError
from heracles_ros.execution.robot_state import RobotState
from heracles_ros.graphdb.cypher import plan_check as cypher
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.plan_types import MAX_HOP_M, PlanAction, PlanResult, Point3
from heracles_ros.planar import path_length, planar_distance
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
    #: Farthest a walk may go between two points no edge of the place graph joins (plan_types.MAX_HOP_M; the
    #: planner joins each 3D place to its nearest mesh place: at most 2.1 m in the example scene).
    max_hop_m: float = MAX_HOP_M

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(f"max_plan_steps must be >= 1, got {self.max_steps}")
        if not self.max_path_length_m > 0:
            raise ConfigError(f"max_plan_path_m must be > 0, got {self.max_path_length_m}")
        if not self.tolerance_m > 0:
            raise ConfigError(f"plan_tolerance_m must be > 0, got {self.tolerance_m}")
        if not self.max_hop_m > 0:
            raise ConfigError(f"plan_max_hop_m must be > 0, got {self.max_hop_m}")


@dataclass(frozen=True)
class Located:
    """Where the database has one symbol."""

    layer: Layer
    #: None when the node has no coordinates.
    position: Point3 | None
    #: Symbols of the nodes that CONTAIN it (an object's place).
    containers: tuple[str, ...] = ()


@dataclass(frozen=True)
class World:
    """What the database says about a plan: where each of its symbols is, and which of its hops an edge joins."""

    located: Mapping[str, Located]
    #: (a, b) for each hop of the plan that a ``<LAYER>_CONNECTED`` edge joins, in the hop's order.
    joined: frozenset[tuple[str, str]] = frozenset()


def plan_symbols(plan: PlanResult) -> list[str]:
    """Every scene symbol a plan names (targets, waypoints, arguments), once each."""
    names = itertools.chain.from_iterable(
        (a.target_symbol, *a.waypoint_symbols, *a.args) for a in plan.actions
    )
    return [s for s in dict.fromkeys(names) if is_scene_symbol(s)]


def walk_places(action: PlanAction) -> tuple[str, ...]:
    """The places a goto walks through, in order: its waypoints' symbols, else its target alone."""
    return action.waypoint_symbols or (action.target_symbol,)


def plan_hops(plan: PlanResult, robot: RobotState) -> list[tuple[str, str]]:
    """Each move between two different places the plan's walks make, from the place the robot is at."""
    hops: list[tuple[str, str]] = []
    at = robot.place
    for action in plan.actions:
        if action.name != "goto":
            continue
        places = walk_places(action)
        hops += [(a, b) for a, b in itertools.pairwise((at, *places) if at else places) if a != b]
        at = action.target_symbol
    return hops


def read_world(store: GraphStore, plan: PlanResult, robot: RobotState) -> World:
    """Label, position and containers of each symbol of ``plan`` the database holds (absent ones left
    out), and which of its hops an edge joins: two round trips."""
    wanted = [s for s in dict.fromkeys([*plan_symbols(plan), robot.place]) if is_scene_symbol(s)]
    if not wanted:
        return World({})
    located: dict[str, Located] = {}
    for row in store.query(cypher.SYMBOL_POSITIONS, {"symbols": wanted}):
        coords = (row["x"], row["y"], row["z"] if row["z"] is not None else 0.0)
        position = None if row["x"] is None or row["y"] is None else tuple(float(c) for c in coords)
        containers = tuple(str(c) for c in row["containers"] or () if c)
        located.setdefault(str(row["symbol"]), Located(Layer(row["label"]), position, containers))  # type: ignore[arg-type]
    hops = [list(hop) for hop in dict.fromkeys(plan_hops(plan, robot)) if all(is_scene_symbol(s) for s in hop)]
    joined = {(str(r["a"]), str(r["b"])) for r in store.query(cypher.JOINED_PLACES, {"pairs": hops})} if hops else set()
    return World(located, frozenset(joined))


def check_plan(plan: PlanResult, robot: RobotState, world: World | None, limits: PlanLimits) -> list[str]:
    """Everything that makes ``plan`` unsafe to start from ``robot``, each naming the step; [] when none.

    ``world`` None (no database) checks numbers, steps and path length only.
    """
    if len(plan.actions) > limits.max_steps:
        return [f"the plan has {len(plan.actions)} steps, more than max_plan_steps ({limits.max_steps})"]
    problems: list[str] = []
    walked = 0.0
    for index, action in enumerate(plan.actions):
        problems += check_step(action, index, robot, world, limits)
        if action.name == "goto" and not _not_finite(action):
            points = list(action.waypoints) or [action.target]
            walked += path_length([robot.position, *points])
            robot = replace(robot, position=action.target, place=action.target_symbol)
        elif action.name in ("pick", "place"):
            robot = replace(robot, holding=object_of(action) if action.name == "pick" else "")
    if not problems and not walked <= limits.max_path_length_m:
        problems.append(f"the plan walks {walked:.6g} m, more than max_plan_path_m ({limits.max_path_length_m:g})")
    if len(problems) > MAX_LISTED:
        problems = [*problems[:MAX_LISTED], f"and {len(problems) - MAX_LISTED} more problems"]
    return problems


def check_step(
    action: PlanAction, index: int, robot: RobotState, world: World | None, limits: PlanLimits
) -> list[str]:
    """What makes step ``index`` unsafe to start with the robot as ``robot`` is (where, at which place, holding
    what)."""
    where = f"step {index} ({action.name} {action.target_symbol})"
    numbers = _not_finite(action)
    if numbers:
        return [f"{where}: {numbers}"]
    if world is None:
        return []
    problems = _world_problems(action, robot, world.located, limits.tolerance_m)
    if action.name == "goto":
        problems += _off_graph(action, robot, world, limits.max_hop_m)
    return [f"{where}: {p}" for p in problems]


def _not_finite(action: PlanAction) -> str:
    if not all(math.isfinite(v) for v in action.target):
        return f"target position {action.target} is not finite"
    if any(not all(math.isfinite(v) for v in p) for p in action.waypoints):
        return "a waypoint position is not finite"
    if not math.isfinite(action.cost):
        return f"cost {action.cost} is not finite"
    return ""


def _world_problems(
    action: PlanAction, robot: RobotState, world: Mapping[str, Located], tolerance_m: float
) -> list[str]:
    """What the database contradicts in one step, the robot being as ``robot`` says before it.

    Putting down what the robot holds goes ahead even when the database no longer has the object
    (Hydra may lose sight of what the robot carries): only the place is checked then.
    """
    here, at = robot.position, robot.place
    problems: list[str] = []
    if action.name == "goto":
        problems += _near(action.target, action.target_symbol, "target", world, tolerance_m)
        if action.waypoints and len(action.waypoint_symbols) != len(action.waypoints):
            problems.append("its waypoints name no place symbols to check them against")
        else:
            for i, (point, symbol) in enumerate(zip(action.waypoints, action.waypoint_symbols, strict=True)):
                problems += _near(point, symbol, f"waypoint {i}", world, tolerance_m)
            if action.waypoint_symbols and action.waypoint_symbols[-1] != action.target_symbol:
                problems.append(f"its path ends at {action.waypoint_symbols[-1]}, not at its target")
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
        if not (action.name == "place" and robot.holding == obj):
            return [f"no object {obj!r} in the database"]
        located = None
    if action.name == "pick" and located and place and located.containers and place not in located.containers:
        problems.append(f"the database has {obj} in {', '.join(located.containers)}, not in {place}")
    if place and at == place:
        return problems
    if action.name == "pick":
        anchor = located.position if located else None
    else:
        anchor = _position(world, place) or action.target
    # Planar: the body stands lower than an object on a table, or a place's centre.
    if anchor is None or math.hypot(here[0] - anchor[0], here[1] - anchor[1]) > tolerance_m:
        stands = f"at {at}" if at else f"at ({here[0]:.1f}, {here[1]:.1f})"
        named = place or obj
        problems.append(f"the robot will stand {stands}, not at {named}: a {action.name} needs the robot there")
    return problems


def _off_graph(action: PlanAction, robot: RobotState, world: World, max_hop_m: float) -> list[str]:
    """The hops of a walk that leave the place graph: two places no edge joins (a 3D place and its mesh
    place aside, when near), or, from no known place, a first place far from where the robot stands."""
    places = walk_places(action)
    at = robot.place if robot.place in world.located else ""
    problems = []
    first = world.located.get(places[0])
    if not at and first is not None and first.position is not None:
        distance = planar_distance(robot.position, first.position)
        if distance > max_hop_m:
            problems.append(
                f"the robot stands on no known place, {distance:.3g} m from {places[0]} where the walk starts: "
                f"farther than plan_max_hop_m ({max_hop_m:g}) off the place graph"
            )
    for a, b in itertools.pairwise((at, *places) if at else places):
        if a == b or (a, b) in world.joined or _leaf_hop(world.located.get(a), world.located.get(b), max_hop_m):
            continue
        if a in world.located and b in world.located:  # a missing place is reported by the position checks
            problems.append(f"{a} to {b} is not an edge of the place graph: the walk would leave it")
    return problems


def _leaf_hop(a: Located | None, b: Located | None, max_hop_m: float) -> bool:
    """A 3D place and a mesh place within ``max_hop_m``: how the planner joins a 3D place to the graph."""
    if a is None or b is None or a.position is None or b.position is None:
        return False
    mesh_and_3d = {a.layer, b.layer} == {Layer.PLACE, Layer.MESH_PLACE}
    return mesh_and_3d and planar_distance(a.position, b.position) <= max_hop_m


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
