"""What the page shows for a clicked object: symbol, class, room and when it was last seen.

"Last seen" comes from the mirror's history (:mod:`heracles_ros.mirror.history`):
an object in the scene now was in the newest snapshot (the history clock); one
gone from it keeps a ``Seen`` entry with the last snapshot that held it; an
operator's addition was never perceived (None).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from heracles_ros.console import protocol
from heracles_ros.console.protocol import ObjectMessage
from heracles_ros.graphdb.cypher.console import OBJECT_DETAILS
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.schema import OPERATOR_SOURCE


@dataclass(frozen=True)
class ObjectDetails:
    symbol: str
    cls: str
    room: str
    #: Epoch seconds (UTC) of the last snapshot that held it; None when never perceived or no history.
    last_seen_s: float | None
    error: str = ""

    def to_message(self) -> ObjectMessage:
        return protocol.object_details(self.symbol, self.cls, self.room, self.last_seen_s, self.error)


def read_object(store: GraphStore, symbol: str, *, timeout_s: float = 5.0) -> ObjectDetails:
    """The object's details; ``error`` says so when it is neither in the scene nor in the history."""
    rows = store.query(OBJECT_DETAILS, {"symbol": symbol}, timeout_s=timeout_s)
    row = rows[0] if rows else {}
    if row.get("present"):
        rooms = row.get("rooms") or []
        perceived = row.get("source") != OPERATOR_SOURCE
        return ObjectDetails(symbol, str(row.get("class") or ""), str(rooms[0]) if rooms else "",
                             _seconds(row.get("clock_t")) if perceived else None)
    if row.get("seen_t") is not None:
        return ObjectDetails(symbol, str(row.get("seen_class") or ""), "", _seconds(row["seen_t"]),
                             error=f"{symbol} is no longer in the scene")
    return ObjectDetails(symbol, "", "", None, error=f"no object {symbol} in the scene")


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None
