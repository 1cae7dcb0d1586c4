"""``heracles where SYMBOL [--at TIME]`` and ``heracles scene [--at TIME]``: the scene as of a time.

Where one node was (any layer), or which objects were there and where, read back from the mirror's history
(:mod:`heracles_ros.mirror.as_of`, which says how exact a position is). TIME takes the forms of ``changes
--since``; without it, now. A time before what the history keeps is an error that says what it keeps.
``--live`` asks the running mirror's ``scene_at`` service instead of reading ``--db`` here; both print
the same lines and the same JSON.
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from heracles_ros.cli.common import add_db_options, as_text, print_json
from heracles_ros.cli.live import add_live_options
from heracles_ros.errors import ConfigError
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.scene_presence import require_graph
from heracles_ros.mirror.as_of import OutOfRange, node_at, scene_at
from heracles_ros.mirror.history import iso_time
from heracles_ros.mirror.time_text import parse_time
from heracles_ros.schema import is_scene_symbol

if TYPE_CHECKING:
    from heracles_ros.client.system import PastScene

_AT_HELP = ("the time: 30s, 10m, 2h, 1d ago, an ISO time (UTC unless it names a zone) or seconds since the epoch "
            "(default: now)")


def register(sub: argparse._SubParsersAction) -> None:
    where = sub.add_parser(
        "where", help="where a node was at a time (default: now), from the mirror's history",
        description="Where SYMBOL was at TIME: class, position, room, whether it was in the scene, and when the "
        "mirror last saw it. A position the history recorded (before a move, or when last seen) is exact unless "
        "the node drifted less than the mirror's move_threshold_m first; otherwise it is the position now, "
        "within twice that threshold of where it was.",
    )
    where.add_argument("symbol", help="the node's symbol, e.g. O12")
    scene = sub.add_parser(
        "scene", help="the objects in the scene at a time (default: now) and where each was",
        description="The objects there at TIME, with class, position and room, from the mirror's history "
        "(positions as precise as 'heracles where' says).",
    )
    scene.add_argument("--class", dest="cls", default=None, metavar="CLASS",
                       help="only objects of this class then (any case), e.g. chair")
    scene.add_argument("--room", default=None, metavar="SYMBOL", help="only objects in this room then, e.g. R2")
    for parser, run in ((where, _where), (scene, _scene)):
        parser.add_argument("--at", default=None, metavar="AGO|TIME", help=_AT_HELP)
        parser.add_argument("--json", action="store_true", help="print the answer as one JSON object")
        add_db_options(parser)
        add_live_options(parser, what="dsg_mirror (its scene_at service)")
        parser.set_defaults(func=run)


def _where(args: argparse.Namespace) -> int:
    if not is_scene_symbol(args.symbol):
        raise ConfigError(f"{args.symbol!r} is not a scene symbol (a letter and a number, e.g. O12)")
    at = parse_time(args.at, what="--at") if args.at is not None else None
    if args.live:
        (node,) = _live(args, at, symbol=args.symbol).nodes
    else:
        with open_store(args.db, graph=args.graph) as store:
            require_graph(store, reader="heracles where")  # a misspelt --graph is not an empty past
            found = node_at(store, args.symbol, at)
        if isinstance(found, OutOfRange):
            raise ConfigError(found.message)
        if found is None:
            raise ConfigError(f"{args.symbol}: no such node in the scene, nor in the history it keeps")
        node = found.to_json()
    if args.json:
        print_json({**node, **_when(at)})
    else:
        print(_where_line(node, at))
    return 0


def _scene(args: argparse.Namespace) -> int:
    at = parse_time(args.at, what="--at") if args.at is not None else None
    if args.live:
        past = _live(args, at, class_name=args.cls or "", room=args.room or "")
        objects, kept_from, newest, whole = past.nodes, past.kept_from, past.newest, past.whole
    else:
        with open_store(args.db, graph=args.graph) as store:
            require_graph(store, reader="heracles scene")
            found = scene_at(store, at, cls=args.cls, room=args.room)
        if isinstance(found, OutOfRange):
            raise ConfigError(found.message)
        objects, whole = [node.to_json() for node in found.objects], found.whole
        kept_from, newest = (found.range.earliest(objects=True), found.range.newest_t) if found.range else (None, None)
    if args.json:
        print_json({**_when(at), "kept_from": kept_from, "newest": newest, "whole": whole, "objects": objects})
        return 0
    kept = f" (the history answers from {iso_time(kept_from)})" if kept_from is not None else ""
    _print_scene(objects, at, kept)
    if not whole:
        print("note: a mirror update overlapped the read; what is listed may mix two snapshots", file=sys.stderr)
    return 0


def _live(args: argparse.Namespace, at: float | None, **request: str) -> PastScene:
    """The running mirror's answer: its nodes as ``to_json`` gives them here, and the history's range."""
    from heracles_ros.client import HeraclesClient

    with HeraclesClient(args.namespace, node_name="heracles_cli", find_timeout_s=args.server_timeout,
                        answer_timeout_s=args.server_timeout, short_lease=False) as client:
        return client.scene_at(at_s=at if at is not None else 0.0, **request)


def _print_scene(objects: list[dict[str, Any]], at: float | None, kept: str) -> None:
    when = "now" if at is None else f"at {iso_time(at)}"
    print(f"objects {when}{kept}: {len(objects)}")
    if objects:
        print(as_text([_scene_row(node) for node in objects]))


def _when(at: float | None) -> dict[str, Any]:
    return {"at": at, "time": iso_time(at) if at is not None else "now"}


def _where_line(node: dict[str, Any], at: float | None) -> str:
    when = "now" if at is None else iso_time(at)
    seen = f"; last seen {iso_time(node['last_seen'])}" if node["last_seen"] else ""
    what = f"{node['symbol']} ({node['class']})"
    if not node["present"] or node["x"] is None:
        return f"{when}  {what} not in the scene{seen}"
    room = f" in {node['room']}" if node["room"] else ""
    how = ", as recorded" if node["recorded"] else ""
    return f"{when}  {what} at {_xyz(node)}{room}{how}{seen}"


def _scene_row(node: dict[str, Any]) -> dict[str, Any]:
    return {"symbol": node["symbol"], "class": node["class"], "name": node["name"], "position": _xyz(node),
            "room": node["room"], "recorded": node["recorded"]}


def _xyz(node: dict[str, Any]) -> str:
    point = (node["x"], node["y"], node["z"])
    return "(" + ", ".join(f"{v:.2f}" for v in point) + ")" if None not in point else "-"
