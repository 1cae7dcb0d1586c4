"""``heracles changes``: what changed in the scene since a time, from the mirror's history.

Corrections whose node left the scene (retired) or came back (returned) are
listed with the scene's events (:mod:`heracles_ros.mirror.timeline`, which the
dsg_mirror node's ``changes`` service answers from too). ``--live`` asks that
service of the running mirror instead of reading ``--db`` here; both print the
same lines, or the same JSON list.
"""
from __future__ import annotations

import argparse
from typing import Any

from heracles_ros.cli.common import add_db_options, print_json
from heracles_ros.cli.live import add_live_options
from heracles_ros.errors import ConfigError
from heracles_ros.graphdb import open_store
from heracles_ros.mirror.time_text import parse_time
from heracles_ros.mirror.timeline import read_timeline
from heracles_ros.outcomes import OverlayEventKind
from heracles_ros.ros.request_fields import MAX_CHANGES


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "changes", help="list what appeared, disappeared, moved or was relabelled/renamed since a time",
        description="Events the mirror recorded from its own diffs, oldest first. A move counts only beyond the "
        "mirror's move_threshold_m (default 0.5 m). Corrections retired with their node or returned with it are "
        "listed too (the last of each per correction; not with --room).",
    )
    parser.add_argument("--since", default="1h", metavar="AGO|TIME",
                        help="how far back: 30s, 10m, 2h, 1d, or an ISO time (2026-11-23T10:05:00, UTC unless it "
                        "names a zone), or seconds since the epoch (default: 1h)")
    parser.add_argument("--room", default=None, metavar="SYMBOL", help="only changes in this room, e.g. R2")
    parser.add_argument("--limit", type=int, default=1000, metavar="N",
                        help=f"at most N events (default: 1000; at most {MAX_CHANGES:,})")
    parser.add_argument("--json", action="store_true", help="print the events as a JSON list")
    add_db_options(parser)
    add_live_options(parser, what="dsg_mirror (its changes service)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_CHANGES:  # the changes service returns no more at once
        raise ConfigError(f"--limit must be 1 to {MAX_CHANGES:,}, got {args.limit} (ask again from a later --since)")
    since = parse_time(args.since, what="--since")
    if args.live:
        from heracles_ros.cli import live

        events = live.changes(args, since)
    else:
        with open_store(args.db, graph=args.graph) as store:
            events = [event.to_json() for event in read_timeline(store, since=since, room=args.room,
                                                                 limit=args.limit)]
    if args.json:
        print_json(events)
        return 0
    for event in events:
        print(_line(event))
    if not events:
        print("no changes recorded since then")
    return 0


def _line(what: dict[str, Any]) -> str:
    """One event (as its JSON object, the same from the database and from the service) in words."""
    if what["kind"].startswith("addition "):
        return f"{what['time']}  {what['text']}"
    if what["kind"].startswith("correction "):
        value = f"correction {what['correction']} = {what['value']!r}"
        if what["kind"] == OverlayEventKind.CORRECTION_RETIRED:
            return f"{what['time']}  {what['symbol']}: {value} retired: {what.get('why', '')}"
        return f"{what['time']}  {what['symbol']}: {value} returned with its node"
    if "from_position" in what:
        detail = f" from {_xyz(what['from_position'])} to {_xyz(what['position'])} ({what['distance_m']} m)"
    elif what.get("from_class") is not None:
        detail = f" from {what['from_class']!r} to {what['class']!r}"
    elif what.get("from_name") is not None:
        detail = f" from {what['from_name']!r} to {what['name']!r}"
    else:
        detail = f" at {_xyz(what['position'])}"
    room = f" in {what['room']}" if what.get("room") else ""
    return f"{what['time']}  {what['kind']:<11} {what['symbol']} ({what['class']}){room}{detail}"


def _xyz(values: list[float]) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in values) + ")"
