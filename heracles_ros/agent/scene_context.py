"""The whole scene as text: the reference paper's context-window baseline (``--method context``), whose token
count is the point of the comparison."""
from __future__ import annotations

import json

from heracles_ros.graphdb.cypher import introspection as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.schema import Layer

CONTEXT_NOTES = (
    "<scene_graph_notes>\nObjects are listed as (id, type, pos, parent_places). Places and mesh places as "
    "(id, siblings, parent_rooms). Rooms as (id, type, pos, siblings). Positions are (x, y, z) in metres.\n"
    "</scene_graph_notes>"
)


def serialize_scene(store: GraphStore, *, digits: int = 2) -> str:
    """The whole scene as text, the paper's context-window baseline (its token count is the point)."""

    def pos(row: dict) -> str:
        return "(" + ", ".join(_num(row[k], digits) for k in ("x", "y", "z")) + ")"

    def ids(values: list) -> str:
        return "[" + ", ".join(sorted((str(v) for v in values if v is not None), key=_natural)) + "]"

    lines = [CONTEXT_NOTES, "<objects>"]
    for row in sorted(store.query(q.CONTEXT_OBJECTS), key=lambda r: _natural(r["id"])):
        lines.append(f"({row['id']}, {row['type']}, {pos(row)}, {ids(row['parents'])})")
    lines.append("</objects>")
    for layer, tag in ((Layer.MESH_PLACE, "mesh_places"), (Layer.PLACE, "places")):
        rows = store.query(q.context_places(layer))
        if not rows:
            continue
        lines.append(f"<{tag}>")
        for row in sorted(rows, key=lambda r: _natural(r["id"])):
            lines.append(f"({row['id']}, {ids(row['siblings'])}, {ids(row['parents'])})")
        lines.append(f"</{tag}>")
    lines.append("<rooms>")
    for row in sorted(store.query(q.CONTEXT_ROOMS), key=lambda r: _natural(r["id"])):
        lines.append(f"({row['id']}, {row['type']}, {pos(row)}, {ids(row['siblings'])})")
    lines.append("</rooms>")
    return "\n".join(lines)


def _natural(symbol: str) -> tuple[str, int]:
    """O2 before O10."""
    head, digits = symbol[:1], symbol[1:]
    return (head, int(digits)) if digits.isdigit() else (symbol, -1)


def _num(value: object, digits: int) -> str:
    if not isinstance(value, (int, float)):
        return "nan"
    return json.dumps(round(float(value), digits))
