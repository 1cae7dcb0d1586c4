"""The diff of a snapshot against the last one applied, read from the bytes: spark_dsg decodes only the records
that differ.

Hydra's snapshots are full graphs that mostly repeat the one before. The same graph gives the same bytes, so
the payload applied last (the source of the mirror's baseline) tells what is new: identical bytes change
nothing; otherwise the records that differ (found by :func:`~heracles_ros.scene.payload_check.check_changed`
where only records' contents moved, by :func:`~heracles_ros.scene.payload_realign.check_shifted` where records
were added or removed, else by comparing the records of both walks) are decoded alone, from a
payload of the header and those records, and compared with the baseline's rows, and the edges are compared as
sorted numbers. What a snapshot costs follows what changed in it, not the scene's size.

A node's membership is not a byte fact: frontiers and agents are in the records but not mirrored, so a record
that turns a frontier into a place (or a node into another layer) brings its unchanged edges in or out; those
are found among the new payload's edges touching such nodes. Where the bytes cannot answer (edges that are not
plain records, an index past 2^24, a node that changed layer) the diff says so, and the snapshot is decoded whole.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import spark_dsg as dsg

from heracles_ros.errors import SceneDecodeError
from heracles_ros.mirror.scene_diff import SceneDiff
from heracles_ros.scene.payload_check import PayloadLayout, check_changed, check_payload, same_bytes
from heracles_ros.scene.payload_realign import check_shifted
from heracles_ros.scene.payload_records import (
    compare_records,
    edge_delta,
    edges_touching,
    partial_payload,
    plain_edge_keys,
    record_id,
    record_ids,
)
from heracles_ros.scene.tables import EDGE_KINDS, EdgeKey, NodeRow, SceneTables, edge_ends, extract_tables

_UNKNOWN = object()


@dataclass
class AppliedPayload:
    """A payload whose tables the mirror holds as its baseline, with what comparing the next one needs (found
    when first needed, then handed on where the next payload shares it)."""

    data: bytes
    layout: PayloadLayout
    _ids: dict[int, int] | None = None
    _edge_keys: object = field(default=_UNKNOWN)

    def record_ids(self) -> dict[int, int]:
        if self._ids is None:
            self._ids = record_ids(self.data, self.layout)
        return self._ids

    def edge_keys(self) -> np.ndarray | None:
        """Its edges as sorted numbers; None when they cannot be (not plain records, an index past 2^24)."""
        if self._edge_keys is _UNKNOWN:
            self._edge_keys = plain_edge_keys(self.data, self.layout)
        return self._edge_keys  # type: ignore[return-value]


@dataclass
class PayloadDiff:
    """A snapshot's diff against the baseline, the tables it leaves, and its payload to keep once applied."""

    diff: SceneDiff
    tables: SceneTables
    applied: AppliedPayload


def payload_diff(applied: AppliedPayload, baseline: SceneTables, data: bytes) -> PayloadDiff | None:
    """The diff of ``data`` against ``baseline`` (the tables of ``applied``); None when it must be decoded whole.

    Raises SceneDecodeError for a payload the check refuses, or whose changed records spark_dsg cannot read or
    hold a non-finite value, as decoding it whole would.
    """
    if data == applied.data:
        return PayloadDiff(_empty_diff(baseline), baseline, applied)
    changed = check_changed(data, applied.data, applied.layout)
    shifted = None if changed is not None else check_shifted(data, applied.data, applied.layout,
                                                             applied.record_ids())
    if changed is not None:  # the same records at the same places, some with other contents
        current = AppliedPayload(data, changed.layout, applied.record_ids())
        if changed.same_tail:
            current._edge_keys = applied._edge_keys
        added: list[int] = []
        removed: list[int] = []
        differing = [record_id(data, changed.layout, k) for k in changed.records]
        same_tail = changed.same_tail
    elif shifted is not None:  # records added or removed, the others the same bytes shifted
        current = AppliedPayload(data, shifted.layout)
        if shifted.same_tail:
            current._edge_keys = applied._edge_keys
        added = [record_id(data, shifted.layout, k) for k in shifted.added]
        differing = [record_id(data, shifted.layout, k) for k in shifted.differing]
        removed, same_tail = shifted.removed, shifted.same_tail
    else:
        current = AppliedPayload(data, check_payload(data))
        if data[: current.layout.header_end] != applied.data[: applied.layout.header_end]:
            return None  # other labelspaces or layers: every record may read otherwise
        added, removed, differing = compare_records(
            applied.data, applied.layout, applied.record_ids(), data, current.layout, current.record_ids())
        same_tail = same_bytes(data, current.layout.nodes_end, applied.data, applied.layout.nodes_end)
    decoded_ids = [*added, *differing]
    decoded = _decode_records(current, decoded_ids)
    touched: dict[int, NodeRow | None] = {node: decoded.nodes.get(node) for node in decoded_ids}
    touched.update((node, None) for node in removed)
    return _diff(baseline, touched, decoded.features, set(removed), applied, current, same_tail)


def _decode_records(current: AppliedPayload, ids: list[int]) -> SceneTables:
    """The rows (and features) of just these nodes, decoded by spark_dsg from a payload holding only them."""
    if not ids:
        return SceneTables()
    index = current.record_ids()
    partial = partial_payload(current.data, current.layout, (index[i] for i in ids))
    try:
        graph = dsg.DynamicSceneGraph.from_binary(partial)
    except Exception as exc:  # spark_dsg raises ValueError, RuntimeError, IndexError ...
        raise SceneDecodeError(f"payload of {len(current.data)} bytes is not a spark_dsg graph: {exc}") from exc
    return extract_tables(graph)


def _diff(
    baseline: SceneTables, touched: dict[int, NodeRow | None], features: dict[int, np.ndarray],
    removed_records: set[int], applied: AppliedPayload, current: AppliedPayload, same_tail: bool,
) -> PayloadDiff | None:
    """``touched``: the rows now of every node whose record is new, differs or is gone (None: not mirrored)."""
    old = baseline.nodes
    added_nodes: set[int] = set()
    removed_nodes: set[int] = set()
    changed_nodes: list[int] = []
    flipped: set[int] = set()  # in both payloads, in or out of the mirror now (a frontier that became a place)
    for node, row in touched.items():
        before = old.get(node)
        if row is None:
            if before is not None:
                removed_nodes.add(node)
                if node not in removed_records:
                    flipped.add(node)
        elif before is None:
            added_nodes.add(node)
            if node not in removed_records and node in applied.record_ids():
                flipped.add(node)
        elif before != row:
            if before[0] is not row[0]:
                return None  # another layer: decoded whole, the node is removed and added with its edges
            changed_nodes.append(node)
    edges_added: set[EdgeKey] = set()
    edges_removed: set[EdgeKey] = set()
    if not same_tail or flipped:
        before_keys, keys = applied.edge_keys(), current.edge_keys()
        if before_keys is None or keys is None:
            return None
        mirrored = _Mirrored(touched, old)
        if not same_tail:
            new_raw, gone_raw = edge_delta(before_keys, keys)
            edges_added = {key for key in new_raw if mirrored(key)}
            edges_removed = {key for key in gone_raw if key in baseline.edges}
        for key in edges_touching(keys, flipped) if flipped else ():
            held, now = key in baseline.edges, mirrored(key)
            if now and not held:
                edges_added.add(key)
            elif held and not now:
                edges_removed.add(key)
    tables = baseline
    if added_nodes or removed_nodes or changed_nodes or edges_added or edges_removed or _features_differ(
            touched, features, baseline.features):
        rows = {node: row for node, row in touched.items() if row is not None or node in old}
        tables = baseline.changed(rows, features, edges_added, edges_removed)
    diff = SceneDiff(rows=tables.nodes, old_rows=old, added_nodes=added_nodes, changed_nodes=changed_nodes,
                     removed_nodes=removed_nodes, added_edges=edges_added, removed_edges=edges_removed)
    return PayloadDiff(diff, tables, current)


class _Mirrored:
    """Whether an edge is mirrored now: both ends mirrored (as ``touched`` has them, else as before), and their
    layers a pair the mirror stores."""

    def __init__(self, touched: dict[int, NodeRow | None], old: dict[int, NodeRow]):
        self.touched, self.old = touched, old

    def row(self, node: int) -> NodeRow | None:
        return self.touched[node] if node in self.touched else self.old.get(node)

    def __call__(self, key: EdgeKey) -> bool:
        low, high = edge_ends(key)
        a, b = self.row(low), self.row(high)
        return a is not None and b is not None and (a[0], b[0]) in EDGE_KINDS


def _features_differ(touched: dict[int, NodeRow | None], features: dict[int, np.ndarray],
                     held: dict[int, np.ndarray]) -> bool:
    for node in touched:
        new, old = features.get(node), held.get(node)
        if (new is None) != (old is None) or (new is not None and not np.array_equal(new, old)):  # type: ignore[arg-type]
            return True
    return False


def _empty_diff(baseline: SceneTables) -> SceneDiff:
    return SceneDiff(rows=baseline.nodes, old_rows=baseline.nodes, added_nodes=set(), changed_nodes=[],
                     removed_nodes=set(), added_edges=set(), removed_edges=set())
