"""``heracles corrections list|revert|clear``: see and undo what operators corrected.

By default on the database (``--db``) in this process; ``--live`` through the
running language server's ``corrections`` service (the same output either way:
text, or with ``--json`` the records and changes as JSON).
"""
from __future__ import annotations

import argparse
from typing import Any

from heracles_ros.cli import live
from heracles_ros.cli.common import add_db_options, print_report
from heracles_ros.cli.confirm import EXIT_NOT_CONFIRMED, add_yes_option, confirmed
from heracles_ros.cli.live import add_live_options
from heracles_ros.graphdb import open_store
from heracles_ros.mirror.corrections import Corrections, operator_name
from heracles_ros.outcomes import RecordStatus


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("corrections", help="list, revert or clear operator corrections",
                            description="On the database (--db) in this process, or with --live through the "
                            "running language_server's corrections service. Prints text, or JSON with --json.")
    actions = parser.add_subparsers(dest="corrections_action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every correction and addition: id, node, property, value, "
                                 "who, when, state")
    listing.add_argument("--active", action="store_true", help="only the active ones")
    revert = actions.add_parser("revert", help="give a node back the value it had before a correction, or remove "
                                "an object the operator added")
    revert.add_argument("id", help="the id as 'list' prints it, e.g. O43.class, or A1 for an addition")
    clear = actions.add_parser("clear", help="revert every active correction and delete all records")
    for action, func in ((listing, _list), (revert, _revert), (clear, _clear)):
        add_db_options(action)
        add_live_options(action, what="language_server (its corrections service)")
        action.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of text")
        action.set_defaults(func=func)
    add_yes_option(clear)


def _list(args: argparse.Namespace) -> int:
    if args.live:
        records = live.corrections(args)
    else:
        with open_store(args.db, graph=args.graph) as store:
            records = [record.as_dict() for record in Corrections(store).records(active_only=args.active)]
    if args.json:
        print_report(args, records)
    else:
        print("\n".join(record_line(record) for record in records) or "no corrections")
    return 0


def record_line(record: dict[str, Any]) -> str:
    """``O14.class = 'bag' (was 'bicycle')  active  by ana at 2026-11-28T10:00:00+00:00: 'that is a bag'``, or
    ``A1 added 'fire hydrant' at (2.00, 1.00, 0.00) in P3 (R0) near O5  active  by ...`` for an addition."""
    if record.get("kind") == "addition":
        x, y, z = record["position"]
        near = f" near {record['near']}" if record.get("near") else ""
        line = (f"{record['id']} added {record['class']!r} at ({x:.2f}, {y:.2f}, {z:.2f}) in {record['place']} "
                f"({record['room'] or 'no room'}){near}  {record['status']}")
    else:
        line = f"{record['id']} = {record['value']!r} (was {record['original']!r})  {record['status']}"
    if record.get("retired_why") and record["status"] == RecordStatus.RETIRED:
        line += f" ({record['retired_why']})"
    line += f"  by {record.get('author') or 'unknown'} at {record.get('created') or '?'}"
    return line + (f": {record['request']!r}" if record.get("request") else "")


def _revert(args: argparse.Namespace) -> int:
    if args.live:
        print_report(args, live.corrections(args))
        return 0
    with open_store(args.db, graph=args.graph) as store:
        change = Corrections(store).revert(args.id, author=f"heracles corrections ({operator_name()})")
    print_report(args, {"reverted": args.id.strip(), "changes": [str(change)]})
    return 0


def _clear(args: argparse.Namespace) -> int:
    what = f"the running language server's graph ({args.namespace})" if args.live else f"graph {args.graph}"
    if not confirmed(args, "heracles corrections clear",
                     f"Revert every active correction in {what} and delete all their records?"):
        return EXIT_NOT_CONFIRMED
    if args.live:
        print_report(args, live.corrections(args))
        return 0
    with open_store(args.db, graph=args.graph) as store:
        changes = Corrections(store).clear(author=f"heracles corrections ({operator_name()})")
    print_report(args, {"cleared": True, "reverted": [str(change) for change in changes]})
    return 0
