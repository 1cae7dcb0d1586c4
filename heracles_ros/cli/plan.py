"""``heracles plan "(GOAL)"``: plan a goal over the live scene and show the expanded actions."""
from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from heracles_ros.cli.common import add_db_options, print_json
from heracles_ros.graphdb import open_store
from heracles_ros.plan_types import PlanResult
from heracles_ros.planning.planner import Planner


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "plan",
        help="plan a PDDL goal with Fast Downward from the robot's recorded state",
        description="Exit status 0 when a plan was found, 1 otherwise (invalid goal, unsolvable, timeout, error).",
    )
    parser.add_argument("goal", help='PDDL goal, e.g. "(object-in-place O3 P12)"')
    add_db_options(parser)
    parser.add_argument("--from", dest="from_symbol", metavar="SYMBOL", help="start place instead of the robot's")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="S",
                        help="planning time limit: problem building and Fast Downward (default: 10)")
    parser.add_argument("--json", action="store_true", help="print the whole result as one JSON object")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    with open_store(args.db, graph=args.graph) as store:
        result = Planner(store, timeout_s=args.timeout).plan(args.goal, from_symbol=args.from_symbol)
    if args.json:
        print_json(plan_json(result))
    else:
        _print(result)
    return 0 if result.ok else 1


def plan_json(result: PlanResult) -> dict[str, Any]:
    """The result as plain JSON values (status as its string)."""
    data = dataclasses.asdict(result)
    data["status"] = result.status.value
    for action, raw in zip(data["actions"], result.actions, strict=True):
        action["path_length"] = action["cost"] if raw.name == "goto" else 0.0
    data["path_length"] = sum(a.cost for a in result.actions if a.name == "goto")
    return data


def _print(result: PlanResult) -> None:
    print(f"status: {result.status.value}")
    if result.start_symbol:
        print(f"start:  {result.start_symbol}")
    if result.reason:
        print(f"reason: {result.reason}")
    if result.unreachable:
        print(f"unreachable: {', '.join(result.unreachable)}")
    for i, action in enumerate(result.actions):
        x, y, z = action.target
        where = f"-> {action.target_symbol} at ({x:.2f}, {y:.2f}, {z:.2f})"
        if action.name == "goto":
            print(f"{i:3d}. goto {where}: {action.cost:.2f} m via {len(action.waypoints)} places")
        else:
            print(f"{i:3d}. {action.name} {' '.join(action.args)} {where}")
    if result.ok:
        walk = sum(a.cost for a in result.actions if a.name == "goto")
        proof = "optimal" if result.optimal else "best found, optimality not proved"
        print(f"cost:   {result.total_cost:.2f} ({walk:.2f} m walked; {proof})")
    print("timings: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in result.timings.items()))
