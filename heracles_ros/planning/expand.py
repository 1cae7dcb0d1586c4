"""Fast Downward's steps -> executable actions with waypoint paths and target positions.

Every action carries what a driver needs (target symbol and position, and for
a goto the whole place path with positions), so execution never asks the
database again.
"""
from __future__ import annotations

from heracles_ros.errors import PlanningError
from heracles_ros.formats.pddl_goal import from_pddl_name
from heracles_ros.plan_types import PlanAction, Point3
from heracles_ros.planning.places import PlaceGraph
from heracles_ros.planning.problem import COST_SCALE, CompactProblem, ObjectInfo

#: Cost of inspect / pick / place in the domain, in problem units.
_ACTION_COST = 100


def expand_plan(
    steps: tuple[str, ...], problem: CompactProblem, graph: PlaceGraph, objects: dict[str, ObjectInfo]
) -> list[PlanAction]:
    """Actions for FD's steps; PlanningError when a step does not fit the problem."""
    return [_expand(step, problem, graph, objects) for step in steps]


def _expand(step: str, problem: CompactProblem, graph: PlaceGraph, objects: dict[str, ObjectInfo]) -> PlanAction:
    words = step.strip("()").split()
    if not words:
        raise PlanningError(f"empty plan step {step!r}")
    name, args = words[0], tuple(from_pddl_name(w) for w in words[1:])
    if name == "goto" and len(args) == 2:
        source, target = (_place_index(graph, s, step) for s in args)
        if source not in problem.row_of or target not in problem.row_of:
            raise PlanningError(f"plan step {step}: {args[0]} or {args[1]} is not a place of the problem")
        path = problem.paths.path(source, target)
        if not path:
            raise PlanningError(f"plan step {step}: no path from {args[0]} to {args[1]}")
        return PlanAction(
            name="goto",
            args=args,
            target_symbol=args[1],
            target=_point(graph, target),
            waypoints=tuple(_point(graph, i) for i in path),
            waypoint_symbols=tuple(graph.symbols[i] for i in path),
            cost=float(problem.dist[problem.row_of[source], problem.row_of[target]]),
        )
    if name in ("inspect", "pick", "place") and len(args) == 2:
        obj, place = args
        if name == "place":
            where = _point(graph, _place_index(graph, place, step))
        else:
            info = objects.get(obj)
            if info is None:
                raise PlanningError(f"plan step {step}: unknown object {obj}")
            where = info.position
        return PlanAction(name=name, args=args, target_symbol=obj, target=where, cost=_ACTION_COST / COST_SCALE)
    raise PlanningError(f"plan step {step!r} is not an action of the domain")


def _place_index(graph: PlaceGraph, symbol: str, step: str) -> int:
    index = graph.index.get(symbol)
    if index is None:
        raise PlanningError(f"plan step {step}: {symbol} is not in the place graph")
    return index


def _point(graph: PlaceGraph, index: int) -> Point3:
    x, y, z = graph.positions[index]
    return (float(x), float(y), float(z))
