"""``heracles corrections list|revert|clear``: see and undo what operators corrected.

By default on the database (``--db``) in this process; ``--live`` through the
running language server's ``corrections`` service (the same JSON either way).
"""
from __future__ import annotations

import argparse

from heracles_ros.cli import live
from heracles_ros.cli.common import add_db_option, print_json
from heracles_ros.cli.confirm import EXIT_NOT_CONFIRMED, add_yes_option, confirmed
from heracles_ros.cli.live import add_live_options
from heracles_ros.graphdb import open_store
from heracles_ros.mirror.corrections import Corrections, operator_name


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("corrections", help="list, revert or clear operator corrections",
                            description="On the database (--db) in this process, or with --live through the "
                            "running language_server's corrections service. Prints JSON either way.")
    actions = parser.add_subparsers(dest="corrections_action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every correction and addition: id, node, property, value, "
                                 "who, when, state")
    listing.add_argument("--active", action="store_true", help="only the active ones")
    revert = actions.add_parser("revert", help="give a node back the value it had before a correction, or remove "
                                "an object the operator added")
    revert.add_argument("id", help="the id as 'list' prints it, e.g. O43.class, or A1 for an addition")
    clear = actions.add_parser("clear", help="revert every active correction and delete all records")
    for action, func in ((listing, _list), (revert, _revert), (clear, _clear)):
        add_db_option(action)
        action.add_argument("--graph", default="heracles", help="graph name on FalkorDB (default: heracles)")
        add_live_options(action, what="language_server (its corrections service)")
        action.add_argument("--json", action="store_true", help="JSON on stdout (always; accepted for uniformity)")
        action.set_defaults(func=func)
    add_yes_option(clear)


def _list(args: argparse.Namespace) -> int:
    if args.live:
        return live.corrections(args)
    with open_store(args.db, graph=args.graph) as store:
        records = Corrections(store).records(active_only=args.active)
    print_json([record.as_dict() for record in records])
    return 0


def _revert(args: argparse.Namespace) -> int:
    if args.live:
        return live.corrections(args)
    with open_store(args.db, graph=args.graph) as store:
        change = Corrections(store).revert(args.id, author=f"heracles corrections ({operator_name()})")
    print_json({"reverted": args.id.strip(), "change": str(change)})
    return 0


def _clear(args: argparse.Namespace) -> int:
    what = f"the running language server's graph ({args.namespace})" if args.live else f"graph {args.graph}"
    if not confirmed(args, "heracles corrections clear",
                     f"Revert every active correction in {what} and delete all their records?"):
        return EXIT_NOT_CONFIRMED
    if args.live:
        return live.corrections(args)
    with open_store(args.db, graph=args.graph) as store:
        changes = Corrections(store).clear(author=f"heracles corrections ({operator_name()})")
    print_json({"cleared": True, "reverted": [str(change) for change in changes]})
    return 0
