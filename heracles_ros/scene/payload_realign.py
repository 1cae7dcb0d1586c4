"""Check a payload whose node records were added or removed against the one checked before, walking only the
records that differ.

:func:`~.payload_check.check_changed` answers when every record kept its place; a snapshot that gained or lost a
node shifts every record after it, and walking all of them costs about a decode at 10^5 nodes. spark_dsg writes
the records in a fixed order, and a record is read from its own bytes alone, so a run of records that is byte for
byte a run of the last payload's is the same records, already checked, whatever its offset. The two payloads are
compared a growing window at a time from each record boundary; where they differ, the record there is walked and
its id says whether it is new, the old one changed, or follows old records that are gone.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from heracles_ros.errors import SceneDecodeError
from heracles_ros.scene.binary_format import DYNAMIC_END
from heracles_ros.scene.payload_check import (
    _NODE_HEAD,
    _NODE_KEY_END,
    PayloadLayout,
    _element,
    _header,
    _unchecked_tail,
    _Walk,
    same_bytes,
)
from heracles_ros.scene.payload_records import record_id, record_layers
from heracles_ros.scene.payload_shapes import Type

#: Bytes compared first from a record boundary; the window grows fourfold while the bytes agree, up to the most.
_FIRST_WINDOW, _MOST_WINDOW = 4096, 1 << 22
#: Where a node record's id is.
_ID_AT = 15


class Realigned(NamedTuple):
    """What :func:`check_shifted` found."""

    layout: PayloadLayout
    #: The indexes (in the new payload) of the records of nodes the last payload had, with other bytes.
    differing: list[int]
    #: The indexes of the records of nodes the last payload did not have.
    added: list[int]
    #: The ids of the nodes whose records are gone.
    removed: list[int]
    #: The edges and the mesh are the same bytes.
    same_tail: bool


def check_shifted(data: bytes, before: bytes, layout: PayloadLayout, before_ids: dict[int, int]) -> Realigned | None:
    """Check ``data`` against ``before`` (checked, its parts at ``layout``, ``before_ids``: node id -> record index).

    None where the bytes cannot answer: the header differs, a node changed layer or order, a walked record holds
    metadata to judge or fails its walk, or a new layer appears; then :func:`~.payload_check.check_payload` walks it
    all and names what is wrong.
    """
    header_end = layout.header_end
    if data[: header_end + 1] != before[: header_end + 1]:
        return None
    walk = _Walk(data)
    node_types, edge_types = _header(walk)
    walk.json.clear()  # the header is the one checked before
    declared = set(walk.layers)
    realign = _Realign(data, before, layout, before_ids)
    try:
        if not realign.nodes(walk, node_types):
            return None
    except SceneDecodeError:
        return None
    new_layers = walk.layers - declared
    if walk.json or (new_layers and not new_layers <= realign.old_layers()):
        return None  # metadata to judge, or maybe more layers than the check allows: walked whole
    nodes_end, shift = realign.pos, realign.pos - layout.nodes_end
    starts = np.concatenate(realign.starts).tolist() if realign.starts else []
    if same_bytes(data, nodes_end, before, layout.nodes_end):
        new_layout = PayloadLayout(header_end, starts, nodes_end, layout.edges_end + shift, layout.plain_edges)
        return Realigned(new_layout, realign.differing, realign.added, realign.removed, True)
    tail = _unchecked_tail(walk, nodes_end, edge_types)
    if tail is None:
        return None
    return Realigned(PayloadLayout(header_end, starts, nodes_end, *tail), realign.differing, realign.added,
                     realign.removed, False)


class _Realign:
    """The walk along both payloads' node records: ``pos`` in ``data``, ``k`` the last payload's next record."""

    def __init__(self, data: bytes, before: bytes, layout: PayloadLayout, before_ids: dict[int, int]):
        self.data, self.before, self.layout, self.before_ids = data, before, layout, before_ids
        self.old_starts = np.asarray([*layout.node_starts, layout.nodes_end], dtype=np.int64)
        self.pos = layout.header_end + 1
        self.k = 0
        self.count = 0  # records of the new payload so far
        self.starts: list[np.ndarray] = []
        self.differing: list[int] = []
        self.added: list[int] = []
        self.removed: list[int] = []

    def nodes(self, walk: _Walk, node_types: list[Type | None]) -> bool:
        """Walk to the new payload's node end marker; False where the bytes cannot answer."""
        old_count = len(self.layout.node_starts)
        while True:
            at = _first_difference(self.data, self.pos, self.before, int(self.old_starts[self.k]),
                                   self.layout.nodes_end)
            j = old_count if at is None else int(np.searchsorted(self.old_starts, at, "right")) - 1
            self._keep(j)
            if self.pos >= len(self.data):
                return False
            if self.data[self.pos] == DYNAMIC_END:
                self.removed += [record_id(self.before, self.layout, i) for i in range(self.k, old_count)]
                return True
            if not self._record(walk, node_types):
                return False

    def _keep(self, j: int) -> None:
        """The last payload's records k..j-1 are the next ones here, byte for byte."""
        if j > self.k:
            shift = self.pos - int(self.old_starts[self.k])
            self.starts.append(self.old_starts[self.k : j] + shift)
            self.pos = int(self.old_starts[j]) + shift
            self.count += j - self.k
            self.k = j

    def _record(self, walk: _Walk, node_types: list[Type | None]) -> bool:
        """Walk the record at ``pos``: a new node, the next old one changed, or one after old records now gone."""
        start = self.pos
        node = int.from_bytes(self.data[start + _ID_AT : start + _ID_AT + 8], "little")
        walk.pos = start
        _element(walk, "node", _NODE_HEAD, node_types, self.count)
        end = walk.pos
        j = self.before_ids.get(node)
        if j is not None and j < self.k:
            return False  # records in another order: spark_dsg's order changed (a node moved to another layer)
        if j is not None:
            old_start = int(self.old_starts[j])
            if self.data[start : start + _NODE_KEY_END] != self.before[old_start : old_start + _NODE_KEY_END]:
                return False  # another layer or partition
            self.removed += [record_id(self.before, self.layout, i) for i in range(self.k, j)]
            if self.data[start:end] != self.before[old_start : int(self.old_starts[j + 1])]:
                self.differing.append(self.count)
            self.k = j + 1
        else:
            self.added.append(self.count)
        self.starts.append(np.asarray([start], dtype=np.int64))
        self.count += 1
        self.pos = end
        return True

    def old_layers(self) -> set[tuple[int, int]]:
        """Every (layer, partition) the last payload's records are in."""
        keys = np.unique(record_layers(self.before, self.layout)[1])
        return {(int(key) >> 32, int(key) & 0xFFFFFFFF) for key in keys.tolist()}


def _first_difference(data: bytes, pos: int, before: bytes, start: int, end: int) -> int | None:
    """The offset in ``before`` of the first byte of ``before[start:end]`` that ``data`` from ``pos`` does not
    repeat (the end of ``data`` counts as one); None when it repeats them all."""
    window = _FIRST_WINDOW
    while start < end:
        size = min(window, end - start)
        new, old = data[pos : pos + size], before[start : start + size]
        if new != old:
            same = min(len(new), len(old))
            unequal = np.flatnonzero(np.frombuffer(new, np.uint8, same) != np.frombuffer(old, np.uint8, same))
            return start + (int(unequal[0]) if len(unequal) else same)
        pos, start, window = pos + size, start + size, min(4 * window, _MOST_WINDOW)
    return None
