"""``heracles goal check "(GOAL)"``: is a PDDL goal well formed and grounded in the live scene?"""
from __future__ import annotations

import argparse
import sys

from heracles_ros.cli.common import add_db_options, print_json
from heracles_ros.errors import GoalError
from heracles_ros.formats.goal_ast import atoms, symbols
from heracles_ros.formats.pddl_goal import check_goal
from heracles_ros.graphdb import open_store


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("goal", help="check PDDL goals against the domain and the database")
    actions = parser.add_subparsers(dest="goal_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="validate a goal: syntax, predicates, arities, symbol kinds, symbols present in the database",
        description="Exit status 0 when the goal is valid; otherwise 1, with every problem printed.",
    )
    check.add_argument("goal", help='PDDL goal, e.g. "(and (safe O3) (not (visited-room R1)))"')
    add_db_options(check)
    check.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    with open_store(args.db, graph=args.graph) as store:
        try:
            expr = check_goal(args.goal, store)
        except GoalError as exc:
            if args.json:
                print_json({"valid": False, "goal": args.goal, "problems": exc.problems})
            else:
                for problem in exc.problems:
                    print(f"error: {problem}", file=sys.stderr)
            return 1
    if args.json:
        print_json({"valid": True, "goal": str(expr), "symbols": symbols(expr), "problems": []})
    else:
        count = len(list(atoms(expr)))
        print(f"valid: {expr} ({count} atom{'s' if count != 1 else ''}; symbols {', '.join(symbols(expr))})")
    return 0
