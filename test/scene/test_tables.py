"""Scene tables: what each node and edge becomes in the database."""
from __future__ import annotations

import numpy as np
import pytest
import spark_dsg as dsg
from support.hydra_scene import hydra_scene
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.errors import SceneDecodeError
from heracles_ros.scene.tables import EDGE_KINDS, edge_key, extract_tables, group_edges, relation_of, symbol_of
from heracles_ros.schema import Layer


def _groups(graph: dsg.DynamicSceneGraph) -> dict[tuple[str, str, str], list[list[str]]]:
    tables = extract_tables(graph)
    return {
        (k.source.value, k.target.value, k.relation): sorted(rows)
        for k, rows in group_edges(tables.edges, tables.nodes).items()
    }


def test_rows_and_edge_orientation() -> None:
    tables = extract_tables(tiny_scene())
    bbox = (0.5, pytest.approx(0.4), pytest.approx(0.3))  # spark_dsg keeps extents as float32
    assert tables.nodes[node_id("O2")] == (
        Layer.OBJECT, "bicycle", "bicycle 2", 4.0, 1.0, 0.5, 4.0, 1.0, 0.5, *bbox
    )
    assert tables.nodes[node_id("P3")] == (Layer.MESH_PLACE, "mesh place", "", 3.0, 0.0, 0.0)  # fallback class
    assert tables.nodes[node_id("R1")][1] == "lounge"  # from the room labelspace
    groups = _groups(tiny_scene())
    assert groups[("MeshPlace", "Object", "CONTAINS")] == [["P0", "O0"], ["P1", "O1"], ["P4", "O2"], ["P5", "O3"]]
    assert groups[("Building", "Room", "CONTAINS")] == [["B0", "R0"], ["B0", "R1"]]
    assert groups[("Room", "Room", "ROOM_CONNECTED")] == [["R0", "R1"]]
    assert len(groups[("MeshPlace", "MeshPlace", "MESH_PLACE_CONNECTED")]) == 5
    assert tables.relationships() == len(tables.edges) + 5 + 1  # connectivity is stored both ways


def test_relation_of_follows_the_hierarchy_whichever_way_round() -> None:
    nodes = extract_tables(tiny_scene()).nodes
    room, place, obj = node_id("R0"), node_id("P0"), node_id("O0")
    assert relation_of(obj, room, nodes) == (room, obj, "CONTAINS")
    assert relation_of(place, obj, nodes) == (place, obj, "CONTAINS")
    assert relation_of(node_id("a1"), obj, nodes) is None  # not a mirrored node
    assert edge_key(room, obj) == edge_key(obj, room)
    assert all(kind.relation for kind in EDGE_KINDS.values())
    assert (Layer.PLACE, Layer.MESH_PLACE) not in EDGE_KINDS  # 3D and mesh places are not parent and child


def test_hydra_conventions_decode_by_layer_not_by_prefix() -> None:
    tables = extract_tables(hydra_scene())
    by_symbol = {symbol_of(i): row for i, row in tables.nodes.items()}
    # Q mesh places are mesh places; rooms take their class from their name; labelspace spelling is kept.
    assert {s for s, row in by_symbol.items() if row[0] is Layer.MESH_PLACE} == {f"Q{i}" for i in range(8)}
    assert by_symbol["R0"][1:3] == ("kitchen", "kitchen") and by_symbol["R1"][1] == "lounge"
    assert by_symbol["O0"][1] == "Box" and by_symbol["O1"][1] == "Door"
    assert by_symbol["O1"][6:9] == pytest.approx((6.0, 0.3, 0.5))  # bbox centre, not the position
    # Frontiers and agent poses are not mirrored, nor are their edges.
    assert "f0" not in by_symbol and not any(s.startswith("a") for s in by_symbol)
    assert len(tables.nodes) == 1 + 2 + 8 + 2 + 2
    groups = _groups(hydra_scene())
    assert len(groups[("MeshPlace", "MeshPlace", "MESH_PLACE_CONNECTED")]) == 7
    assert groups[("Place", "Place", "PLACE_CONNECTED")] == [["p0", "p1"]]
    assert groups[("MeshPlace", "Object", "CONTAINS")] == [["Q2", "O0"], ["Q6", "O1"]]
    assert len(tables.edges) == sum(len(rows) for rows in groups.values())


def test_mesh_places_on_layer_20_are_read() -> None:
    graph = tiny_scene()
    place = dsg.Place2dNodeAttributes()
    place.position = np.array([9.0, 0.0, 0.0])
    graph.add_node(20, node_id("P9"), place)  # where spark_dsg 2024-04..2025-02 kept mesh places
    graph.insert_edge(node_id("P9"), node_id("O4"))
    tables = extract_tables(graph)
    assert tables.nodes[node_id("P9")][0] is Layer.MESH_PLACE
    assert edge_key(node_id("P9"), node_id("O4")) in tables.edges


def test_a_non_finite_position_is_refused() -> None:
    graph = tiny_scene()
    graph.get_node(node_id("O1")).attributes.position = np.array([np.nan, 0.0, 0.0])
    with pytest.raises(SceneDecodeError, match="O1 has a non-finite position"):
        extract_tables(graph)


def test_a_non_finite_bounding_box_is_refused_naming_the_node() -> None:
    graph = tiny_scene()
    attrs = graph.get_node(node_id("O2")).attributes
    box = attrs.bounding_box
    box.dimensions = np.array([1.0, np.inf, 1.0])
    attrs.bounding_box = box
    assert not np.isfinite(graph.get_node(node_id("O2")).attributes.bounding_box.dimensions).all()
    with pytest.raises(SceneDecodeError, match="O2 has a non-finite bounding box"):
        extract_tables(graph)
