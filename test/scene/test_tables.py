"""Scene tables: what each node and edge becomes in the database."""
from __future__ import annotations

import numpy as np
import pytest
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.errors import SceneDecodeError
from heracles_ros.scene.tables import EDGE_KINDS, edge_key, extract_tables, group_edges, relation_of


def test_rows_and_edge_orientation() -> None:
    tables = extract_tables(tiny_scene())
    bbox = (0.5, pytest.approx(0.4), pytest.approx(0.3))  # spark_dsg keeps extents as float32
    assert tables.nodes[node_id("O2")] == ("bicycle", 4.0, 1.0, 0.5, "bicycle 2", *bbox)
    assert tables.nodes[node_id("P3")] == ("mesh place", 3.0, 0.0, 0.0)  # no labelspace: fallback class
    assert tables.nodes[node_id("R1")][0] == "lounge"
    groups = {
        (k.source.value, k.target.value, k.relation): sorted(rows) for k, rows in group_edges(tables.edges).items()
    }
    assert groups[("MeshPlace", "Object", "CONTAINS")] == [["P0", "O0"], ["P1", "O1"], ["P4", "O2"], ["P5", "O3"]]
    assert groups[("Building", "Room", "CONTAINS")] == [["B0", "R0"], ["B0", "R1"]]
    assert groups[("Room", "Room", "ROOM_CONNECTED")] == [["R0", "R1"]]
    assert len(groups[("MeshPlace", "MeshPlace", "MESH_PLACE_CONNECTED")]) == 5


def test_relation_of_follows_the_hierarchy_whichever_way_round() -> None:
    room, place, obj = node_id("R0"), node_id("P0"), node_id("O0")
    assert relation_of(obj, room) == (room, obj, "CONTAINS")
    assert relation_of(place, obj) == (place, obj, "CONTAINS")
    assert relation_of(node_id("p1"), node_id("P1")) is None  # 3D and mesh places are not parent and child
    assert relation_of(node_id("a1"), obj) is None  # agents are not mirrored
    assert edge_key(room, obj) == edge_key(obj, room)
    assert all(kind.relation for kind in EDGE_KINDS.values())


def test_a_non_finite_position_is_refused() -> None:
    graph = tiny_scene()
    graph.get_node(node_id("O1")).attributes.position = np.array([np.nan, 0.0, 0.0])
    with pytest.raises(SceneDecodeError, match="O1 has a non-finite position"):
        extract_tables(graph)
