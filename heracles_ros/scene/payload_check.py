"""Check a spark_dsg binary's declared lengths against its bytes before spark_dsg reads it.

spark_dsg sizes a vector or a matrix from the length the payload declares before it checks
that the bytes are there (``values.resize(length)`` in binary_serialization.h), so one changed
length in a 76 KB snapshot made the mirror allocate gigabytes. This walks a payload the way
spark_dsg 1.1.3's reader does (``updateGraph`` in graph_binary_serialization.cpp and each
attribute type's ``serialization_info``) and refuses it, naming the field, when a declared length
needs more bytes than remain. A payload that passes makes spark_dsg allocate no more than about its
own size; its values are not judged here (spark_dsg checks every tag as it reads).

Two things cost spark_dsg memory out of proportion to their bytes and are bounded too: layers
(about 470 bytes each, 19 bytes to declare) and metadata JSON (up to 130 bytes per bracket or
separator once parsed; nested 100,000 deep it overflowed spark_dsg's stack).

Most nodes are matched whole by one pattern of their type (:func:`shape`, for small lengths) and
the rest walked field by field: the check costs about a third of spark_dsg's own decode (20 ms
against 60 ms for 16,384 nodes and 50,550 edges).

The format has no version header: the walk is that of the pinned spark_dsg (requirements.txt), its byte
patterns those of :mod:`.binary_format`.
It must never be looser than spark_dsg's reader at any byte, or the two would disagree on where
the next length is; where spark_dsg is lax (a fixed array's length, which its
``checkFixedArrayLength`` does not compare), this walk is strict.
"""
from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple, NoReturn

import numpy as np

from heracles_ros.errors import SceneDecodeError
from heracles_ros.scene.binary_format import (
    ARRAY_TAGS,
    BOOL,
    BOUNDING_BOX,
    COLOR,
    DYNAMIC_END,
    DYNAMIC_START,
    EDGE_HEAD,
    F32,
    F64,
    FACE,
    FIXED,
    I64,
    JSON,
    LAYER_KEY,
    MATRIX,
    NEAREST_VERTEX,
    NEAREST_VERTEX_MIN,
    NODE_HEAD,
    NONE,
    QUATERNIOND,
    ROWS_COLS,
    SIZE,
    SKIP,
    TRUE,
    U8,
    U32,
    U32_LENGTH,
    U64,
    VECTOR3D,
    VECTOR3F,
    WALK,
    Step,
    compile_pattern,
    eigen_fixed,
    fixed,
    matrix,
    string,
    vector,
)
from heracles_ros.scene.payload_shapes import PLAIN_EDGE_BYTES, Type, plain_edges, shape

#: A node's type is one byte, so no writer lists more attribute names (spark_dsg keeps each one it reads).
MAX_ATTRIBUTE_NAMES = 256
#: Most layers and partitions a payload may declare or put nodes in (Hydra uses under ten, plus one per robot).
MAX_LAYERS = 256
#: Deepest nesting of a metadata JSON value (Hydra's labelspaces nest four deep).
MAX_JSON_DEPTH = 64
#: What spark_dsg holds per bracket, comma or colon of metadata once parsed, at most (measured: nested
#: arrays 129 bytes, a list of empty objects 120, of empty strings 117, labelspaces 27).
JSON_BYTES_PER_TOKEN = 130
#: Parsed metadata may take this many times the payload's size, plus JSON_ALLOWANCE_BYTES (labelspaces
#: of about 800 classes fit in the allowance alone).
JSON_FACTOR = 4
JSON_ALLOWANCE_BYTES = 256 * 1024

#: Where a problem is, in words: ("node", 12, "boundary") reads "node 12 boundary" (formatted only on failure).
Where = tuple[object, ...]


class _Walk:
    """One pass over a payload; ``pos`` is the byte spark_dsg's reader would be at."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0
        self.end = len(data)
        #: Where each metadata JSON text longer than an empty object is (start, end, whose): judged after the walk.
        self.json: list[tuple[int, int, Where]] = []
        #: Every (layer, partition) the payload declares or puts a node in.
        self.layers: set[tuple[int, int]] = set()

    def fail(self, where: Where, problem: str) -> NoReturn:
        self.refuse(f"{' '.join(str(part) for part in where)} at byte {self.pos}: {problem}")

    def refuse(self, problem: str) -> NoReturn:
        raise SceneDecodeError(
            f"payload of {self.end} bytes is not a spark_dsg graph (refused before decoding): {problem}"
        )

    def fixed(self, pattern: re.Pattern[bytes], where: Where) -> re.Match[bytes]:
        found = pattern.match(self.data, self.pos)
        if found is None:
            self.fail(where, "not the fields spark_dsg writes there (a wrong tag, or the payload ends)")
        self.pos = found.end()
        return found

    def count(self, where: Where, each: int) -> int:
        """Read a declared length and check that its elements, ``each`` bytes at least, fit in what remains."""
        data, pos = self.data, self.pos
        if pos + 5 > self.end:
            self.fail(where, "the payload ends inside its length")
        if data[pos] not in ARRAY_TAGS:
            self.fail(where, f"expected a length (tag 0xdd), found tag {data[pos]:#04x}")
        (length,) = U32_LENGTH.unpack_from(data, pos + 1)
        remain = self.end - pos - 5
        if length * each > remain:
            self.fail(where, f"declares {length} elements ({length * each} bytes at least), only {remain} remain")
        self.pos = pos + 5
        return length

    def skip(self, where: Where, each: int) -> None:
        """A string, or a vector whose elements all take ``each`` bytes: checked, then stepped over."""
        length = self.count(where, each)  # moves pos past the length first
        self.pos += length * each

    def matrix(self, where: Where, each: int, column: bool) -> None:
        """A dynamic Eigen matrix: its length counts rows and cols too, and rows * cols must make it up."""
        start = self.pos
        length = self.count(where, 1)
        data, pos = self.data, self.pos
        self.pos = start  # errors name the matrix's first byte
        if length < 2 or pos + 18 > self.end or data[pos] != 0xD3 or data[pos + 9] != 0xD3:
            self.fail(where, "a matrix without its rows and cols")
        rows, cols = ROWS_COLS.unpack_from(data, pos)
        if rows < 0 or cols < 0 or rows * cols + 2 != length:
            self.fail(where, f"{rows} x {cols} values do not make a matrix of length {length}")
        if column and cols != 1:  # spark_dsg would read rows values, not rows x cols
            self.fail(where, f"a column vector of {rows} x {cols} values")
        if (length - 2) * each > self.end - pos - 18:
            self.fail(where, f"declares {rows} x {cols} values, only {self.end - pos - 18} bytes remain")
        self.pos = pos + 18 + (length - 2) * each

    def fields(self, steps: tuple[Step, ...], where: Where) -> None:
        """An attribute type's fields after its type byte: the hot loop (once per node and edge).

        The common cases are inlined (16,000 places walked in 30 ms less); anything unusual goes
        to the methods above, which also say what is wrong.
        """
        data, end, pos = self.data, self.end, self.pos
        for op, arg, name in steps:
            if op is SKIP or op is JSON:
                if pos + 5 <= end and data[pos] in ARRAY_TAGS:
                    after = pos + 5 + U32_LENGTH.unpack_from(data, pos + 1)[0] * arg
                    if after <= end:
                        if op is JSON and after - pos > 7:
                            self.json.append((pos + 5, after, (*where, name)))
                        pos = after
                        continue
                self.pos = pos
                self.skip((*where, name), arg)  # raises, saying why
            elif op is FIXED:
                found = arg.match(data, pos)
                if found is None:
                    self.pos = pos
                    self.fixed(arg, (*where, name))  # raises
                pos = found.end()
            elif op is WALK and data.startswith(NONE, pos):  # no elements to walk
                pos += 5
            else:
                self.pos = pos
                if op is MATRIX:
                    self.matrix((*where, name), *arg)
                else:
                    arg(self, (*where, name))
                pos = self.pos
        self.pos = pos


_NEAREST_VERTEX = compile_pattern(NEAREST_VERTEX)
_F64 = compile_pattern(F64)


def _nearest_vertices(walk: _Walk, where: Where) -> None:
    for _ in range(walk.count(where, NEAREST_VERTEX_MIN)):
        walk.fixed(_NEAREST_VERTEX, where)


def _class_probabilities(walk: _Walk, where: Where) -> None:
    for _ in range(walk.count(where, 5 + SIZE[F64])):
        walk.skip(where, 1)
        walk.fixed(_F64, where)


def _details(walk: _Walk, where: Where) -> None:
    for _ in range(walk.count(where, 5 + 5)):
        walk.skip(where, 1)
        walk.skip(where, SIZE[U64])


def _point_lists(walk: _Walk, where: Where) -> None:
    for _ in range(walk.count(where, 5)):
        walk.skip(where, SIZE[VECTOR3F])


#: A mesh (the graph's, or a Khronos object's): four flags, then six vectors (mesh_serialization.cpp).
MESH: tuple[Step, ...] = (
    fixed(BOOL * 4, "mesh flags"),
    vector(VECTOR3F, "mesh points"),
    vector(COLOR, "mesh colors"),
    vector(U64, "mesh stamps"),
    vector(U32, "mesh labels"),
    vector(U64, "mesh first_seen_stamps"),
    vector(FACE, "mesh faces"),
)


_METADATA: Step = (JSON, 1, "metadata")
_NODE_BASE = (_METADATA, fixed(VECTOR3D + U64 + BOOL + BOOL, "position, last_update_time_ns, is_active, is_predicted"))
_SEMANTIC = (
    *_NODE_BASE,
    string("name"),
    fixed(COLOR + BOUNDING_BOX + U32, "color, bounding_box, semantic_label"),
    matrix(F32, "semantic_feature"),
)
_OBJECT = (*_SEMANTIC, vector(U64, "mesh_connections"), fixed(BOOL + QUATERNIOND, "registered, world_R_object"))

#: What every node attribute type spark_dsg 1.1.3 registers reads after its type byte.
NODE_FIELDS: dict[str, tuple[Step, ...]] = {
    "NodeAttributes": _NODE_BASE,
    "SemanticNodeAttributes": _SEMANTIC,
    "ObjectNodeAttributes": _OBJECT,
    "RoomNodeAttributes": (*_SEMANTIC, (WALK, _class_probabilities, "semantic_class_probabilities")),
    "PlaceNodeAttributes": (
        *_SEMANTIC,
        fixed(F64 + U32, "distance, num_basis_points"),
        (WALK, _nearest_vertices, "voxblox_mesh_connections"),
        vector(U64, "pcl_mesh_connections"),
        vector(U8, "mesh_vertex_labels"),
        vector(U64, "deformation_connections"),
        fixed(
            BOOL + BOOL + VECTOR3D + QUATERNIOND + BOOL + U64 + BOOL,
            "real_place, active_frontier, frontier_scale, orientation, need_cleanup, num_frontier_voxels, "
            "anti_frontier",
        ),
    ),
    "Place2dNodeAttributes": (
        *_SEMANTIC,
        vector(VECTOR3D, "boundary"),
        fixed(VECTOR3D + eigen_fixed(2, 2, F64) * 2, "ellipse_centroid, ellipse matrices"),
        vector(U64, "pcl_boundary_connections"),
        (WALK, _nearest_vertices, "voxblox_mesh_connections"),
        vector(U64, "pcl_mesh_connections"),
        vector(U8, "mesh_vertex_labels"),
        vector(U64, "deformation_connections"),
        fixed(BOOL + BOOL, "need_cleanup_splitting, has_active_mesh_indices"),
    ),
    "AgentNodeAttributes": (
        *_NODE_BASE,
        fixed(I64 + QUATERNIOND + U64, "timestamp, world_R_body, external_key"),
        matrix(U32, "dbow_ids", column=True),
        matrix(F32, "dbow_values", column=True),
    ),
    "KhronosObjectAttributes": (
        *_OBJECT,
        vector(U64, "first_observed_ns"),
        vector(U64, "last_observed_ns"),
        vector(VECTOR3F, "trajectory_positions"),
        vector(U64, "trajectory_timestamps"),
        (WALK, _point_lists, "dynamic_object_points"),
        (WALK, _details, "details"),
        *MESH,
    ),
    "TraversabilityNodeAttributes": (
        *_NODE_BASE,
        fixed(U64 + U64 + F64 + eigen_fixed(2, 1, F64) * 2, "first/last_observed_ns, distance, min, max"),
        *(vector(U8, f"states_{i}") for i in range(4)),
    ),
}
EDGE_FIELDS: dict[str, tuple[Step, ...]] = {"EdgeAttributes": (_METADATA, fixed(BOOL + F64, "weighted, weight"))}

_NODE_HEAD = compile_pattern(NODE_HEAD)
_EDGE_HEAD = compile_pattern(EDGE_HEAD)
_LAYER_KEY = compile_pattern(LAYER_KEY)


@dataclass(frozen=True)
class PayloadLayout:
    """Where a checked payload's parts are: the header (layer keys, attribute names, layer names, metadata),
    each node record, the edges, then the mesh, in the order spark_dsg writes them. Its containers are all
    ordered maps, so the same graph always gives the same bytes, and an unchanged node the same record."""

    #: Where the header ends and the node array's start marker (0x00) is.
    header_end: int
    #: Each node record's first byte (its layer), in the payload's order.
    node_starts: list[int]
    #: The node array's end marker (0x01): the last record ends there.
    nodes_end: int
    #: One past the edge array's end marker (the array starts at nodes_end + 1).
    edges_end: int
    #: Every edge is a plain record of PLAIN_EDGE_BYTES (default attributes, empty metadata).
    plain_edges: bool


def check_payload(data: bytes) -> PayloadLayout:
    """Raise SceneDecodeError, naming the field, if ``data`` declares more than its bytes hold.

    Also when it declares more than MAX_LAYERS layers or MAX_ATTRIBUTE_NAMES attribute types, or
    its metadata JSON nests deeper than MAX_JSON_DEPTH or would take more memory than its budget.
    Where its parts are comes back (recording it costs the walk nothing measurable).
    """
    walk = _Walk(data)
    node_types, edge_types = _header(walk)
    header_end = walk.pos
    node_starts: list[int] = []
    _elements(walk, "node", _NODE_HEAD, node_types, starts=node_starts)
    nodes_end = walk.pos - 1
    edges_end, plain = _tail(walk, edge_types)
    if len(walk.layers) > MAX_LAYERS:
        walk.refuse(f"it declares or fills {len(walk.layers)} layers and partitions, more than {MAX_LAYERS}")
    _check_json(walk)
    return PayloadLayout(header_end, node_starts, nodes_end, edges_end, plain)


class Changed(NamedTuple):
    """What :func:`check_changed` found."""

    layout: PayloadLayout
    #: The indexes of the records whose bytes differ.
    records: list[int]
    #: The edges and the mesh are the same bytes.
    same_tail: bool


def check_changed(data: bytes, before: bytes, layout: PayloadLayout) -> Changed | None:
    """Check ``data`` against ``before`` (checked, its parts at ``layout``) walking only what differs.

    Where the two differ only inside node records that keep their length, id and layer (Hydra's active
    window: update times, positions) and after the nodes, those records, and the edges and mesh if they
    differ, are walked again: every other byte is the same byte at the same place, checked already. Returns
    ``data``'s layout and the indexes of the records whose bytes differ; None where that does not hold (the
    header or the nodes' length differ, a record changed shape or gained metadata to judge, or a walk failed):
    then :func:`check_payload` walks it all, and names what is wrong.
    """
    starts, nodes_end = layout.node_starts, layout.nodes_end
    if len(data) <= nodes_end or not starts or data[nodes_end] != DYNAMIC_END:
        return None
    candidates = _differing_records(data, before, starts, layout.header_end, nodes_end)
    if candidates is None:
        return None
    walk = _Walk(data)
    node_types, edge_types = _header(walk)
    walk.json.clear()  # the header is the one checked before
    differing = []
    for k in candidates:
        start = starts[k]
        end = starts[k + 1] if k + 1 < len(starts) else nodes_end
        if data[start:end] == before[start:end]:
            continue  # a word that straddled it differed in its neighbour
        if data[start:start + _NODE_KEY_END] != before[start:start + _NODE_KEY_END]:  # another layer or node
            return None
        walk.pos = start
        try:
            _element(walk, "node", _NODE_HEAD, node_types, k)
        except SceneDecodeError:
            return None
        if walk.pos != end:
            return None
        differing.append(k)
    if walk.json:
        return None
    if same_bytes(data, nodes_end, before, nodes_end):
        return Changed(layout, differing, True)
    tail = _unchecked_tail(walk, nodes_end, edge_types)
    if tail is None:
        return None
    return Changed(PayloadLayout(layout.header_end, starts, nodes_end, *tail), differing, False)


def _differing_records(data: bytes, before: bytes, starts: list[int], header_end: int, nodes_end: int
                       ) -> list[int] | None:
    """Indexes of the records holding a byte that differs (and maybe their neighbours), compared eight bytes at a
    time; None when the header or the array's start marker differs."""
    if data[:header_end + 1] != before[:header_end + 1]:
        return None
    count = (nodes_end - header_end) // 8
    old = np.frombuffer(before, dtype="<u8", count=count, offset=header_end)
    new = np.frombuffer(data, dtype="<u8", count=count, offset=header_end)
    offsets = np.flatnonzero(old != new) * 8 + header_end
    rest = header_end + 8 * count
    if data[rest:nodes_end] != before[rest:nodes_end]:
        offsets = np.append(offsets, rest)
    if not len(offsets):
        return []
    first = np.asarray(starts, dtype=np.int64)
    records = np.union1d(np.searchsorted(first, offsets, "right"), np.searchsorted(first, offsets + 7, "right")) - 1
    if len(records) and records[0] < 0:
        return None
    return [int(k) for k in records if k < len(starts)]


def same_bytes(data: bytes, start: int, before: bytes, before_start: int) -> bool:
    """Whether ``data`` from ``start`` on is ``before`` from ``before_start`` on (eight bytes at a time, copying
    neither: a slice of a 54 MB payload costs more than the comparison)."""
    if len(data) - start != len(before) - before_start:
        return False
    count = (len(data) - start) // 8
    rest = 8 * count
    return data[start + rest:] == before[before_start + rest:] and bool(np.array_equal(
        np.frombuffer(data, dtype="<u8", count=count, offset=start),
        np.frombuffer(before, dtype="<u8", count=count, offset=before_start)))


def _header(walk: _Walk) -> tuple[list[Type | None], list[Type | None]]:
    """The header, up to the nodes: the layers it declares, and what each node and edge type byte reads."""
    for index in range(walk.count(("layer keys",), SIZE[LAYER_KEY])):
        walk.layers.add(_layer(walk.fixed(_LAYER_KEY, ("layer key", index))))
    node_types = _types(_names(walk, "node attribute names"), NODE_FIELDS, _registered()[0])
    edge_types = _types(_names(walk, "edge attribute names"), EDGE_FIELDS, _registered()[1])
    for index in range(walk.count(("layer names",), 5 + SIZE[LAYER_KEY])):
        walk.skip(("layer name", index), 1)
        walk.layers.add(_layer(walk.fixed(_LAYER_KEY, ("layer name", index, "key"))))
    metadata = walk.pos
    walk.skip(("graph metadata",), 1)
    walk.json.append((metadata + 5, walk.pos, ("graph metadata",)))
    return node_types, edge_types


def _tail(walk: _Walk, edge_types: list[Type | None]) -> tuple[int, bool]:
    """The edges and the mesh: where the edges end, and whether all of them are plain."""
    plain = _elements(walk, "edge", _EDGE_HEAD, edge_types, plain_edges(edge_types, EDGE_FIELDS["EdgeAttributes"]))
    edges_end = walk.pos
    if walk.pos < walk.end and walk.data[walk.pos] == TRUE:  # spark_dsg reads anything else as "no mesh"
        walk.pos += 1
        walk.fields(MESH, ("graph",))
    return edges_end, plain


def _unchecked_tail(walk: _Walk, nodes_end: int, edge_types: list[Type | None]) -> tuple[int, bool] | None:
    """:func:`_tail` after the node array ending at ``nodes_end``, for a payload compared with the last one; None
    where the bytes cannot answer (an edge fails its walk, or holds metadata to judge)."""
    walk.pos = nodes_end + 1
    try:
        tail = _tail(walk, edge_types)
    except SceneDecodeError:
        return None
    return None if walk.json else tail


def _layer(key: re.Match[bytes]) -> tuple[int, int]:
    layer, partition = _LAYER_KEY_VALUES.unpack_from(key.string, key.start())
    return layer, partition


_LAYER_KEY_VALUES = struct.Struct("<6xqxI")  # a LayerKey's layer (INT64) and partition (UINT32)
_NODE_LAYER = struct.Struct("<6xq10xI")  # a node's layer and partition, around its id
_NODE_KEY_END = 28  # a node record's layer, id and partition end here (its type byte's tag follows)
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_JSON_TOKENS = bytes(b for b in range(256) if b not in b"[]{},:")


def _check_json(walk: _Walk) -> None:
    """Metadata spark_dsg would parse: bounded nesting (its parser recurses) and bounded parsed size."""
    tokens = 0
    for start, end, where in walk.json:
        structure = _JSON_STRING.sub(b"", walk.data[start:end]).translate(None, _NOT_JSON_TOKENS)
        depth = deepest = 0
        for byte in structure:
            if byte in b"[{":
                depth += 1
                deepest = max(deepest, depth)
            elif byte in b"]}":
                depth -= 1
        walk.pos = start
        if deepest > MAX_JSON_DEPTH:
            walk.fail(where, f"JSON nested {deepest} deep, more than {MAX_JSON_DEPTH}")
        tokens += len(structure) - structure.count(b"]") - structure.count(b"}")
    budget = JSON_FACTOR * walk.end + JSON_ALLOWANCE_BYTES
    if tokens * JSON_BYTES_PER_TOKEN > budget:
        walk.refuse(
            f"its metadata JSON has {tokens} brackets and separators, about {tokens * JSON_BYTES_PER_TOKEN} bytes "
            f"parsed, more than the {budget} allowed for its size"
        )


def _names(walk: _Walk, what: str) -> list[str]:
    count = walk.count((what,), 5)
    if count > MAX_ATTRIBUTE_NAMES:
        walk.fail((what,), f"{count} names, more than a type byte tells apart ({MAX_ATTRIBUTE_NAMES})")
    names = []
    for _ in range(count):
        start = walk.pos
        walk.skip((what,), 1)
        names.append(walk.data[start + 5 : walk.pos].decode("utf-8", "replace"))
    return names


def _types(names: list[str], fields: dict[str, tuple[Step, ...]], registered: frozenset[str]) -> list[Type | None]:
    """What each type byte reads after it: None where spark_dsg knows no such type (it then reads nothing more)."""
    return [
        (fields[name], shape(fields[name])) if name in fields
        else (((WALK, _unchecked(name), "attributes"),), None) if name in registered
        else None
        for name in names
    ]  # fmt: skip


def _unchecked(name: str) -> Callable[[_Walk, Where], None]:
    def refuse(walk: _Walk, where: Where) -> NoReturn:
        walk.fail(where, f"attribute type {name!r} is one spark_dsg reads but this check does not know")

    return refuse


def _elements(
    walk: _Walk,
    kind: str,
    head: re.Pattern[bytes],
    types: list[Type | None],
    run: re.Pattern[bytes] | None = None,
    *,
    starts: list[int] | None = None,
) -> bool:
    """The nodes or the edges: a dynamic array of a fixed head and a type byte, then that type's fields.

    ``run`` matches any number of the commonest elements at once, each ``PLAIN_EDGE_BYTES`` long; True
    when it matched them all. ``starts`` gets each element's first byte.
    """
    data = walk.data
    if walk.pos >= walk.end or data[walk.pos] != DYNAMIC_START:
        walk.fail((f"the {kind}s",), "expected the start of a dynamic array (0x00)")
    walk.pos += 1
    index = 0
    all_run = run is not None
    record = starts.append if starts is not None else None
    while True:
        plain = run.match(data, walk.pos) if run is not None else None
        if plain:
            index += (plain.end() - walk.pos) // PLAIN_EDGE_BYTES
            walk.pos = plain.end()
        if walk.pos >= walk.end:
            walk.fail((f"the {kind}s",), "the payload ends before their end marker")
        if data[walk.pos] == DYNAMIC_END:
            walk.pos += 1
            return all_run
        all_run = False
        if record is not None:
            record(walk.pos)
        _element(walk, kind, head, types, index)
        index += 1


def _element(walk: _Walk, kind: str, head: re.Pattern[bytes], types: list[Type | None], index: int) -> None:
    """One node or edge: its head, then what its type reads, matched whole by the type's shape where it can be."""
    data = walk.data
    found = head.match(data, walk.pos) or walk.fixed(head, (kind, index))  # the second raises, saying why
    if head is _NODE_HEAD:
        walk.layers.add(_NODE_LAYER.unpack_from(data, walk.pos))
    walk.pos = found.end()
    type_id = data[walk.pos - 1]
    known = types[type_id] if type_id < len(types) else None
    if known is not None:
        steps, shape = known
        small = shape.match(data, walk.pos) if shape is not None else None
        if small:
            walk.pos = small.end()
        else:
            walk.fields(steps, (kind, index))


@lru_cache(maxsize=1)
def _registered() -> tuple[frozenset[str], frozenset[str]]:
    """The node and edge attribute names the installed spark_dsg registers (it writes them in every payload)."""
    import spark_dsg as dsg

    walk = _Walk(dsg.DynamicSceneGraph().to_binary(include_mesh=False))
    walk.skip(("layer keys",), SIZE[LAYER_KEY])
    return frozenset(_names(walk, "node attribute names")), frozenset(_names(walk, "edge attribute names"))

