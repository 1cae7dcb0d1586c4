"""The map as of a past time: the objects then, each marked against what the map shows now.

The read is :func:`heracles_ros.mirror.as_of.scene_at` (the present with every later event undone; a time
before what the history keeps is answered with its words, never a guess), its queries bounded by
:data:`READ_TIMEOUT_S` and its wait for a reconcile in progress by :data:`RECONCILE_WAIT_S`. The hub runs it
in a worker thread, one at a time per tab. Each object says whether it is drawn elsewhere than the map has
it now (``moved``) and whether it has left the scene since (``gone``); the objects on the map now that were
not there then are listed to be hidden.
"""
from __future__ import annotations

import time
from collections.abc import Mapping

from heracles_ros.console import protocol
from heracles_ros.console.protocol import AsOfItem, SceneAtMessage
from heracles_ros.console.scene_feed import DECIMALS, SceneItem
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.as_of import OutOfRange, scene_at
from heracles_ros.mirror.history import iso_time

#: Seconds each of the read's queries may take (the as-of read at the kilometre-scale scene after an hour of
#: churn: ~0.1-0.2 s).
READ_TIMEOUT_S = 10.0
#: Seconds the read waits for a reconcile in progress before it answers from what it read, marked mixed.
RECONCILE_WAIT_S = 3.0


def read_as_of(store: GraphStore, ago_s: float, shown: Mapping[str, SceneItem], *,
               now_s: float | None = None) -> SceneAtMessage:
    """The objects ``ago_s`` seconds before ``now_s`` (default: now), against ``shown``, the map's items now."""
    at = (time.time() if now_s is None else now_s) - ago_s
    found = scene_at(store, at, wait_s=RECONCILE_WAIT_S, timeout_s=READ_TIMEOUT_S)
    if isinstance(found, OutOfRange):
        return protocol.scene_at(ago_s, at, iso_time(at), found.earliest, [], [], found.message)
    objects: list[AsOfItem] = []
    for node in found.objects:
        if node.position is None:
            continue
        x, y = round(node.position[0], DECIMALS), round(node.position[1], DECIMALS)
        now = shown.get(node.symbol)
        there_now = now is not None and now.layer == "object"
        moved = now is not None and there_now and (now.x, now.y) != (x, y)
        objects.append({"symbol": node.symbol, "cls": node.cls, "name": node.name, "x": x, "y": y,
                        "room": node.room or "", "moved": moved, "gone": not there_now})
    there = {item["symbol"] for item in objects}
    hidden = sorted((symbol for symbol, item in shown.items() if item.layer == "object" and symbol not in there),
                    key=lambda symbol: (len(symbol), symbol))
    kept_from = found.range.earliest(objects=True) if found.range is not None else None
    return protocol.scene_at(ago_s, at, iso_time(at), kept_from, objects, hidden)
