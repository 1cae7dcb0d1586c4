"""The payload check walks spark_dsg's binary as spark_dsg 1.1.3 reads it.

Real payloads (every attribute type, a mesh, metadata) pass; a declared length its bytes cannot
hold is refused, naming the field. Where Python cannot fill a field (a place's nearest mesh
vertices, a Khronos object's vectors, traversability states), the bytes are written by hand and
spark_dsg itself reads them back: the check's idea of the format is spark_dsg's.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
import spark_dsg as dsg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hydra_scene import hydra_scene
from support.rich_scene import rich_scene, sym
from support.tiny_scene import tiny_scene

from heracles_ros.errors import SceneDecodeError
from heracles_ros.scene import payload_check, payload_shapes
from heracles_ros.scene.payload_check import check_payload
from heracles_ros.scene.synthetic import fill_uninitialised, generate_scene


def length(n: int) -> bytes:
    """An ARR32 header: how spark_dsg writes a string's or a vector's length."""
    return b"\xdd" + struct.pack("<I", n)


def u64(value: int) -> bytes:
    return b"\xcf" + struct.pack("<Q", value)


def f32(value: float) -> bytes:
    return b"\xca" + struct.pack("<f", value)


EMPTY = length(0)
VECTOR3F = f32(1.0) + f32(2.0) + f32(3.0)


SCENES = {
    "hydra": hydra_scene,
    "tiny": tiny_scene,
    "small": lambda: generate_scene("small"),
    "rich": rich_scene,
    "empty": dsg.DynamicSceneGraph,
}


@pytest.mark.parametrize("mesh", [False, True])
@pytest.mark.parametrize("name", sorted(SCENES))
def test_real_payloads_pass(name: str, mesh: bool) -> None:
    check_payload(SCENES[name]().to_binary(include_mesh=mesh))


def test_the_check_knows_every_attribute_type_spark_dsg_registers() -> None:
    """A spark_dsg with a new attribute type fails here before the check refuses payloads that use it."""
    assert payload_check._registered() == (frozenset(payload_check.NODE_FIELDS), frozenset(payload_check.EDGE_FIELDS))


def test_a_type_spark_dsg_reads_but_the_check_does_not_know_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """As with a newer spark_dsg: guessing its fields could put the walk out of step with spark_dsg's reader."""
    known = {name: f for name, f in payload_check.NODE_FIELDS.items() if name != "TraversabilityNodeAttributes"}
    monkeypatch.setattr(payload_check, "NODE_FIELDS", known)
    check_payload(hydra_scene().to_binary(include_mesh=False))
    with pytest.raises(SceneDecodeError, match="'TraversabilityNodeAttributes' is one spark_dsg reads but this check"):
        check_payload(rich_scene().to_binary(include_mesh=False))


def nearest_vertex(label: int | None) -> bytes:
    """One NearestVertexInfo as spark_dsg writes it: block, voxel position, vertex, optional label."""
    block = b"".join(b"\xd2" + struct.pack("<i", v) for v in (1, -2, 3))
    voxel = b"".join(b"\xcb" + struct.pack("<d", v) for v in (0.5, 1.5, 2.5))
    tail = b"\xc0" if label is None else b"\xce" + struct.pack("<I", label)
    return length(4) + length(3) + block + length(3) + voxel + u64(77) + tail


def spliced(graph: dsg.DynamicSceneGraph, marker: bytes, replacement: bytes) -> bytes:
    data = graph.to_binary(include_mesh=False)
    assert data.count(marker) == 1
    return data.replace(marker, replacement)


def test_nearest_vertices_are_walked_as_spark_dsg_reads_them() -> None:
    graph = dsg.DynamicSceneGraph()
    place = dsg.PlaceNodeAttributes()
    place.pcl_mesh_connections = [0xABCDEF]  # right after voxblox_mesh_connections: a marker
    graph.add_node(3, sym("p", 1), place)
    after = length(1) + u64(0xABCDEF)
    data = spliced(graph, EMPTY + after, length(2) + nearest_vertex(None) + nearest_vertex(9) + after)
    check_payload(data)
    read = dsg.DynamicSceneGraph.from_binary(data).get_node(sym("p", 1)).attributes
    assert [(c.vertex, c.label) for c in read.voxblox_mesh_connections] == [(77, None), (77, 9)]
    assert list(read.pcl_mesh_connections) == [0xABCDEF]  # the walk and spark_dsg end the list at the same byte

    overrun = spliced(graph, EMPTY + after, length(3) + nearest_vertex(None) + nearest_vertex(9) + after)
    with pytest.raises(SceneDecodeError, match="node 0 voxblox_mesh_connections"):
        check_payload(overrun)


def test_khronos_vectors_and_its_mesh_are_walked_as_spark_dsg_reads_them() -> None:
    graph = dsg.DynamicSceneGraph()
    graph.add_node(2, sym("K", 1), dsg.KhronosObjectAttributes())
    graph.add_node(3, sym("p", 1), dsg.PlaceNodeAttributes())  # after it, so a wrong walk ends elsewhere
    defaults = EMPTY * 6 + b"\xc3\xc2\xc2\xc2" + EMPTY * 6  # six empty vectors, then the mesh: flags, six vectors
    filled = (
        length(2) + u64(1) + u64(2)  # first_observed_ns
        + length(1) + u64(3)  # last_observed_ns
        + length(1) + VECTOR3F  # trajectory_positions
        + length(1) + u64(4)  # trajectory_timestamps
        + length(2) + length(1) + VECTOR3F + EMPTY  # dynamic_object_points
        + length(1) + length(1) + b"x" + length(2) + u64(5) + u64(6)  # details
        + b"\xc3\xc2\xc2\xc2" + length(1) + VECTOR3F + length(1) + b"\xcc\x01\xcc\x02\xcc\x03\xcc\x04"
        + EMPTY * 3 + length(1) + length(3) + u64(0) * 3  # mesh: one vertex, one colour, one face
    )  # fmt: skip
    data = spliced(graph, defaults, filled)
    check_payload(data)
    read = dsg.DynamicSceneGraph.from_binary(data)
    khronos = read.get_node(sym("K", 1)).attributes
    assert (list(khronos.first_observed_ns), list(khronos.last_observed_ns), list(khronos.trajectory_timestamps)) == (
        [1, 2], [3], [4]
    )
    assert len(khronos.dynamic_object_points) == 2 and dict(khronos.details) == {"x": [5, 6]}
    assert (khronos.mesh().num_vertices(), khronos.mesh().num_faces()) == (1, 1)
    assert read.has_node(sym("p", 1))

    with pytest.raises(SceneDecodeError, match=r"node 0 details at byte [0-9]+: declares 268435456 elements"):
        check_payload(data.replace(length(2) + u64(5), length(2**28) + u64(5)))


def test_traversability_states_are_walked_as_spark_dsg_reads_them() -> None:
    graph = dsg.DynamicSceneGraph()
    graph.add_node(6, sym("T", 1), dsg.TraversabilityNodeAttributes())
    data = spliced(graph, EMPTY * 4 + b"\x01", length(2) + b"\xcc\x01\xcc\x02" + EMPTY * 3 + b"\x01")
    check_payload(data)
    states = dsg.DynamicSceneGraph.from_binary(data).get_node(sym("T", 1)).attributes.boundary.states
    assert [len(s) for s in states] == [2, 0, 0, 0]


def test_a_type_spark_dsg_does_not_know_reads_nothing_more_in_both() -> None:
    """spark_dsg skips a node whose type byte names no attributes and reads the next node right after it."""
    graph = tiny_scene()
    data = graph.to_binary(include_mesh=False)
    building = struct.pack("<q", 5) + b"\xcf" + struct.pack("<Q", sym("B", 0)) + b"\xce" + struct.pack("<I", 0)
    start = data.index(building) + len(building)
    assert data[start] == 0xCC  # the building's type byte, then its metadata and fields
    end = data.index(b"\xdd\x04\x00\x00\x00\xd3", start)  # the next node
    unknown = data[: start + 1] + b"\xc8" + data[end:]  # type 200: none
    check_payload(unknown)
    read = dsg.DynamicSceneGraph.from_binary(unknown)
    assert not read.has_node(sym("B", 0)) and read.num_nodes() == graph.num_nodes() - 1


def overrun_at(data: bytes, marker: bytes, by: int = 1) -> bytes:
    """``data`` with the length just before ``marker`` made ``by`` bytes longer than what remains."""
    at = data.index(marker) - 4
    assert data[at - 1] in (0xDB, 0xDD)
    return data[:at] + struct.pack("<I", len(data) - at - 4 + by) + data[at + 4 :]


@pytest.mark.parametrize(
    ("marker", "field"),
    [
        ("layer keys", "layer keys"),
        ("node names", "node attribute names"),
        ("labelspaces", "graph metadata"),
        ("chaise", r"node \d+ name"),
        ("mesh_connections", r"node \d+ mesh_connections"),
        ("boundary", r"node \d+ boundary"),
        ("dbow_ids", r"node \d+ dbow_ids"),
        ("edge metadata", r"edge \d+ metadata"),
        ("mesh points", "mesh points"),
    ],
)
def test_a_length_beyond_the_payload_is_refused_naming_its_field(marker: str, field: str) -> None:
    data = rich_scene().to_binary(include_mesh=True)
    at = {
        "layer keys": lambda: 5,
        "node names": lambda: data.index(b"NodeAttributes") - 5,
        "labelspaces": lambda: data.index(b'{"labelspaces"'),
        "chaise": lambda: data.index(b"chaise"),
        "mesh_connections": lambda: data.index(u64(1) + u64(2) + u64(3)),
        "boundary": lambda: data.index(length(3) + b"\xcb" + struct.pack("<d", 0.0)) + 5,
        "dbow_ids": lambda: data.index(length(5) + b"\xd3" + struct.pack("<q", 3)) + 5,
        "edge metadata": lambda: data.index(b'{"w":1}'),
        "mesh points": lambda: data.rindex(b"\xc3\xc3\xc3\xc3") + 9,
    }[marker]()
    bad = data[: at - 4] + struct.pack("<I", len(data) - at + 1) + data[at:]
    with pytest.raises(SceneDecodeError, match=f"{field} at byte {at - 5}: declares"):
        check_payload(bad)
    with pytest.raises(SceneDecodeError, match=field):
        check_payload(data[: at - 4] + b"\xf0\xff\xff\x7f" + data[at:])  # the 2 GB of the report


def test_a_matrix_whose_rows_and_cols_do_not_make_its_length_is_refused() -> None:
    data = rich_scene().to_binary(include_mesh=False)
    feature = data.index(length(8) + b"\xd3" + struct.pack("<q", 2) + b"\xd3" + struct.pack("<q", 3))
    rows = feature + 6
    for bad_rows in (3, -2, 2**62):
        bad = data[:rows] + struct.pack("<q", bad_rows) + data[rows + 8 :]
        with pytest.raises(SceneDecodeError, match=r"node \d+ semantic_feature .* do not make a matrix of length 8"):
            check_payload(bad)
    # A column vector (dbow_ids) holds rows values whatever cols says: 3 x 2 would put the walk 3 values ahead.
    ids = data.index(length(5) + b"\xd3" + struct.pack("<q", 3) + b"\xd3" + struct.pack("<q", 1))
    as_matrix = length(8) + b"\xd3" + struct.pack("<q", 3) + b"\xd3" + struct.pack("<q", 2)
    values = data[ids + 23 : ids + 38]
    bad = data[:ids] + as_matrix + values + values + data[ids + 38 :]
    with pytest.raises(SceneDecodeError, match=r"node \d+ dbow_ids .* a column vector of 3 x 2 values"):
        check_payload(bad)


@pytest.mark.parametrize("cut", [1, 4, 5, 100, 700, 2000, -200, -30, -2])
def test_a_truncated_payload_is_refused_or_whole(cut: int) -> None:
    data = rich_scene().to_binary(include_mesh=True)
    with pytest.raises(SceneDecodeError, match="refused before decoding"):
        check_payload(data[:cut])


def test_a_payload_without_its_last_byte_is_one_without_a_mesh() -> None:
    """spark_dsg reads a missing mesh flag as "no mesh": the walk agrees (the graph is whole)."""
    data = tiny_scene().to_binary(include_mesh=False)
    assert data[-1] == 0xC2
    check_payload(data[:-1])
    assert dsg.DynamicSceneGraph.from_binary(data[:-1]).num_nodes() == tiny_scene().num_nodes()


def test_more_attribute_names_than_a_type_byte_tells_apart_are_refused() -> None:
    data = dsg.DynamicSceneGraph().to_binary(include_mesh=False)
    names_at = data.index(b"NodeAttributes") - 10
    names = [f"Type{i}".encode() for i in range(payload_check.MAX_ATTRIBUTE_NAMES + 1)]
    listed = length(len(names)) + b"".join(length(len(n)) + n for n in names)
    count = struct.unpack_from("<I", data, names_at + 1)[0]
    end = names_at + 5
    for _ in range(count):
        end += 5 + struct.unpack_from("<I", data, end + 1)[0]
    with pytest.raises(SceneDecodeError, match="257 names, more than a type byte tells apart"):
        check_payload(data[:names_at] + listed + data[end:])


def test_more_layers_than_allowed_are_refused() -> None:
    """About 470 bytes of spark_dsg's memory each for 19 bytes of payload: 4,000 took 1.9 MB for a 76 KB payload."""
    data = dsg.DynamicSceneGraph().to_binary(include_mesh=False)
    count = struct.unpack_from("<I", data, 1)[0]
    keys = [length(2) + b"\xd3" + struct.pack("<q", 2) + b"\xce" + struct.pack("<I", p) for p in range(4000)]
    many = length(len(keys)) + b"".join(keys) + data[5 + 19 * count :]
    with pytest.raises(SceneDecodeError, match=r"fills 400\d layers and partitions, more than 256"):
        check_payload(many)
    few = length(250) + b"".join(keys[:250]) + data[5 + 19 * count :]
    check_payload(few)


def with_node_metadata(text: bytes) -> bytes:
    data = tiny_scene().to_binary(include_mesh=False)
    empty = length(2) + b"{}"
    return data.replace(empty, length(len(text)) + text, 1)


def test_deeply_nested_metadata_is_refused() -> None:
    """Nested 100,000 deep, a node's metadata overflowed spark_dsg's stack (the process died of SIGSEGV)."""
    deep = b'{"a":' * 100_000 + b"0" + b"}" * 100_000
    with pytest.raises(SceneDecodeError, match=r"node 0 metadata .* nested 100000 deep, more than 64"):
        check_payload(with_node_metadata(deep))
    at_limit = b"[" * 64 + b"]" * 64
    check_payload(with_node_metadata(at_limit))
    dsg.DynamicSceneGraph.from_binary(with_node_metadata(at_limit))
    brackets_in_strings = b'["' + b"[" * 500 + b'"]'  # text, not nesting
    check_payload(with_node_metadata(brackets_in_strings))


def test_metadata_that_would_parse_far_larger_than_the_payload_is_refused() -> None:
    """A list of 20,000 empty objects (60 KB) took spark_dsg 2.4 MB to hold."""
    many = b"[" + b"{}," * 19_999 + b"{}]"
    with pytest.raises(SceneDecodeError, match=r"metadata JSON has 400\d\d brackets and separators"):
        check_payload(with_node_metadata(many))
    labels = str({"labelspaces": {"_l2p0": [[i, f"class {i}"] for i in range(500)]}}).replace("'", '"').encode()
    check_payload(with_node_metadata(labels))  # 500 classes: within the allowance


def one_node_payload(graph: dsg.DynamicSceneGraph, keep: int) -> tuple[bytes, int, int]:
    """``graph`` left with node ``keep`` alone: its payload, and where the node's fields start (after its type byte)
    and end."""
    for node in [n.id.value for n in graph.nodes if n.id.value != keep]:
        graph.remove_node(node)
    data = graph.to_binary(include_mesh=False)
    head = payload_check._NODE_HEAD.search(data, data.index(b"\x00\xdd\x04\x00\x00\x00") + 1)
    assert head is not None and data.endswith(b"\x01\x00\x01\xc2")  # the node, then no edges and no mesh
    return data, head.end(), len(data) - 4


@pytest.mark.parametrize("name", sorted(payload_check.NODE_FIELDS))
def test_a_small_node_is_matched_whole_by_its_shape(name: str) -> None:
    """The one-match path the walk takes for most nodes ends exactly where spark_dsg's reader does."""
    rich = rich_scene()
    keep = next(n.id.value for n in rich.nodes if type(n.attributes).__name__ == name)
    data, start, end = one_node_payload(rich, keep)
    small = payload_shapes.shape(payload_check.NODE_FIELDS[name]).match(data, start)
    assert small is not None and small.end() == end
    check_payload(data)


def test_a_node_with_long_fields_is_walked_field_by_field() -> None:
    graph = dsg.DynamicSceneGraph()
    place = dsg.Place2dNodeAttributes()
    fill_uninitialised(place)
    place.boundary = [np.array([float(i), 0.0, 0.0]) for i in range(payload_shapes.SHAPE_COUNTS)]
    place.semantic_feature = np.ones((512, 1), dtype=np.float32)
    graph.add_node(3, sym("P", 1), place, 1)
    data, start, _ = one_node_payload(graph, sym("P", 1))
    assert payload_shapes.shape(payload_check.NODE_FIELDS["Place2dNodeAttributes"]).match(data, start) is None
    check_payload(data)
    at = data.index(length(payload_shapes.SHAPE_COUNTS) + b"\xcb")
    with pytest.raises(SceneDecodeError, match=r"node 0 boundary at byte \d+: declares 100000 elements"):
        check_payload(data[: at + 1] + struct.pack("<I", 100_000) + data[at + 5 :])


# --- where the parts are, and the check of what differs from a payload checked before -------------------
_ID = struct.Struct("<Q")


@pytest.mark.parametrize("name", ["rich", "small", "empty"])
def test_the_layout_names_each_node_record_and_the_edges(name: str) -> None:
    graph = SCENES[name]()
    data = graph.to_binary(include_mesh=True)
    layout = check_payload(data)
    ids = [_ID.unpack_from(data, start + 15)[0] for start in layout.node_starts]
    assert sorted(ids) == sorted(n.id.value for n in graph.nodes)
    assert data[layout.header_end] == 0x00 and data[layout.nodes_end] == 0x01 and data[layout.edges_end - 1] == 0x01
    edges = graph.num_edges()
    assert layout.plain_edges == (name != "rich")  # the rich scene's edges carry metadata (no edges: all plain)
    if layout.plain_edges:
        assert layout.edges_end - layout.nodes_end - 3 == edges * payload_shapes.PLAIN_EDGE_BYTES


def _hydra_like(graph: dsg.DynamicSceneGraph, every: int) -> tuple[bytes, list[int]]:
    """Hydra's active window: every ``every``-th mesh place gets a new update time, nothing the mirror keeps."""
    data = graph.to_binary(include_mesh=False)
    places = sorted(n.id.value for n in graph.get_layer(3, 1).nodes)[::every]
    for place in places:
        graph.get_node(place).attributes.last_update_time_ns = 123_456_789
    return data, places


def test_only_the_records_that_differ_are_walked_again() -> None:
    graph = generate_scene("small")
    before, touched = _hydra_like(graph, 7)
    after = graph.to_binary(include_mesh=False)
    layout = check_payload(before)
    again = payload_check.check_changed(after, before, layout)
    assert again is not None and again.same_tail
    assert again.layout == check_payload(after)
    assert sorted(_ID.unpack_from(after, layout.node_starts[k] + 15)[0] for k in again.records) == touched
    assert payload_check.check_changed(bytes(before), before, layout) == (layout, [], True)


def test_a_payload_that_differs_in_shape_is_left_to_the_whole_walk() -> None:
    graph = tiny_scene()
    before = graph.to_binary(include_mesh=False)
    layout = check_payload(before)
    graph.get_node(sym("O", 1)).attributes.name = "a longer name than before"  # the record grows
    assert payload_check.check_changed(graph.to_binary(include_mesh=False), before, layout) is None
    graph = tiny_scene()
    graph.metadata.add({"labelspaces": {"_l2p0": [[0, "crate"]]}})  # the header
    assert payload_check.check_changed(graph.to_binary(include_mesh=False), before, layout) is None
    for start in layout.node_starts[1:]:  # a record's first bytes share their eight with the record before
        broken = before[:start] + b"\x00" + before[start + 1 :]
        with pytest.raises(SceneDecodeError):
            check_payload(broken)
        assert payload_check.check_changed(broken, before, layout) is None


def test_edge_metadata_after_unchanged_nodes_is_left_to_the_whole_walk() -> None:
    """The short check walks the edges but does not judge their metadata: a payload whose nodes are unchanged and
    whose one edge's metadata now nests past the limit goes to the whole walk, which refuses it."""
    before = rich_scene().to_binary(include_mesh=False)
    layout = check_payload(before)
    weight = b'{"w":1}'
    deep = b"[" * 65 + b"]" * 65
    after = before.replace(length(len(weight)) + weight, length(len(deep)) + deep, 1)
    assert after != before and after[: layout.nodes_end] == before[: layout.nodes_end]
    assert payload_check.check_changed(after, before, layout) is None
    with pytest.raises(SceneDecodeError, match=r"metadata .* nested 65 deep, more than 64"):
        check_payload(after)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_check_of_what_differs_agrees_with_the_whole_walk(data: st.DataObject) -> None:
    """Any bytes overwritten anywhere: either both checks refuse, or the short one gives the whole walk's layout
    and exactly the records whose bytes differ (or leaves the payload to the whole walk)."""
    before = _RICH
    layout = _RICH_LAYOUT
    changed = bytearray(before)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(before) - 1))
        piece = data.draw(st.binary(min_size=1, max_size=9))
        changed[at : at + len(piece)] = piece[: len(before) - at]
    after = bytes(changed)
    try:
        whole = check_payload(after)
    except SceneDecodeError:
        whole = None
    short = payload_check.check_changed(after, before, layout)
    if short is None:
        return
    assert whole is not None and short.layout == whole
    ends = [*layout.node_starts[1:], layout.nodes_end]
    assert short.records == [k for k, (s, e) in enumerate(zip(layout.node_starts, ends, strict=True))
                             if after[s:e] != before[s:e]]
    assert short.same_tail == (after[layout.nodes_end :] == before[layout.nodes_end :])


_RICH = rich_scene().to_binary(include_mesh=True)
_RICH_LAYOUT = check_payload(_RICH)
