"""What changed between the mirror's baseline and a new snapshot: nodes added, changed and removed, edges added
and removed, each as the tables' ids and keys. A node that moved to another layer counts as removed from its old
label and added to its new one."""
from __future__ import annotations

import math
from dataclasses import dataclass

from heracles_ros.scene.tables import EdgeKey, NodeRow, SceneTables, edge_ends
from heracles_ros.schema import Layer


@dataclass
class SceneDiff:
    rows: dict[int, NodeRow]
    old_rows: dict[int, NodeRow]
    added_nodes: set[int]
    changed_nodes: list[int]
    removed_nodes: set[int]
    added_edges: set[EdgeKey]
    removed_edges: set[EdgeKey]

    @property
    def rows_written(self) -> int:
        """Rows the diff's statements carry (about: an edge whose node goes is not written apart)."""
        return (len(self.removed_edges) + len(self.removed_nodes) + len(self.changed_nodes) + len(self.added_nodes)
                + len(self.added_edges))

    @property
    def upserted_ids(self) -> list[int]:
        return [*self.added_nodes, *self.changed_nodes]

    @property
    def any(self) -> bool:
        return bool(
            self.added_nodes or self.changed_nodes or self.removed_nodes or self.added_edges or self.removed_edges
        )


def scene_diff(old: SceneTables, new: SceneTables, *, tolerant: bool = False) -> SceneDiff:
    """What changed from ``old`` to ``new``.

    ``tolerant`` compares floats to 1e-12 relative: a baseline read back from
    FalkorDB carries 15 significant digits, not the 17 of the snapshot. A node
    that moved to another layer is removed from its old label and added to its
    new one, with its edges written again (DETACH DELETE took them).
    """
    old_nodes, new_nodes = old.nodes, new.nodes
    added = set(new_nodes.keys() - old_nodes.keys())
    removed = set(old_nodes.keys() - new_nodes.keys())
    get = old_nodes.get
    if tolerant:
        changed = [k for k, row in new_nodes.items() if k in old_nodes and not _same_row(old_nodes[k], row)]
    else:
        changed = [k for k, row in new_nodes.items() if get(k, row) != row]
    added_edges = new.edges - old.edges
    moved = {k for k in changed if old_nodes[k][0] is not new_nodes[k][0]}
    if moved:
        changed = [k for k in changed if k not in moved]
        added |= moved
        removed |= moved
        added_edges |= {e for e in new.edges if touches(e, moved)}
    return SceneDiff(
        rows=new_nodes,
        old_rows=old_nodes,
        added_nodes=added,
        changed_nodes=changed,
        removed_nodes=removed,
        added_edges=added_edges,
        removed_edges=old.edges - new.edges,
    )


def _same_row(a: NodeRow, b: NodeRow) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, float) and isinstance(y, float):
            if not math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12):
                return False
        elif x != y:
            return False
    return True


def empty_layers(tables: SceneTables) -> frozenset[Layer]:
    present = {row[0] for row in tables.nodes.values()}
    return frozenset(layer for layer in Layer if layer not in present)


def touches(key: EdgeKey, ids: set[int]) -> bool:
    a, b = edge_ends(key)
    return a in ids or b in ids


def within(key: EdgeKey, ids: set[int]) -> bool:
    a, b = edge_ends(key)
    return a in ids and b in ids
