"""The reference system's point queries on the default database (FalkorDB with the ``point`` library)."""
from __future__ import annotations

import pytest
from support.hydra_scene import hydra_scene

from heracles_ros.graphdb.cypher import point_udf
from heracles_ros.graphdb.falkordb_store import FalkorStore
from heracles_ros.graphdb.point_functions import ensure_point_functions, loaded_code
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.scene.synthetic import generate_scene


@pytest.fixture()
def mirrored(store: FalkorStore) -> FalkorStore:
    if store.dialect.has_points:
        pytest.skip("Neo4j has native points; this is FalkorDB's point library")
    Mirror(store).reconcile(hydra_scene())
    return store


def test_point_distance_orders_and_filters_in_read_only_queries(mirrored: FalkorStore) -> None:
    nearest = mirrored.query(  # store.query is GRAPH.RO_QUERY
        "MATCH (x:Object {nodeSymbol: 'O0'}), (b:MeshPlace) "
        "RETURN b.nodeSymbol AS s ORDER BY point.distance(b.center, x.center) LIMIT 3"
    )
    assert [r["s"] for r in nearest] == ["Q2", "Q1", "Q3"] or [r["s"] for r in nearest] == ["Q2", "Q3", "Q1"]
    near = mirrored.query(
        "MATCH (o:Object {nodeSymbol: 'O1'}), (b:MeshPlace) WHERE point.distance(o.center, b.center) < 2.0 "
        "RETURN b.nodeSymbol AS s ORDER BY s"
    )
    assert [r["s"] for r in near] == ["Q5", "Q6", "Q7"]
    value = mirrored.query("MATCH (a:MeshPlace {nodeSymbol: 'Q0'}), (b:MeshPlace {nodeSymbol: 'Q3'}) "
                           "RETURN point.distance(a.center, b.center) AS d")
    assert value == [{"d": pytest.approx(3.0)}]
    assert mirrored.query("RETURN point.distance(null, [1, 2, 3]) AS d") == [{"d": None}]


def test_within_bbox_and_the_bbox_properties(mirrored: FalkorStore) -> None:
    rows = mirrored.query(
        "MATCH (o:Object {nodeSymbol: 'O1'}) RETURN o.bbox_center AS c, o.bbox_dim AS d, "
        "point.withinBBox(o.center, [5.0, 0.0, 0.0], [7.0, 1.0, 1.0]) AS inside, "
        "point.withinBBox(o.center, [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]) AS outside"
    )
    assert rows == [{"c": pytest.approx([6.0, 0.3, 0.5]), "d": pytest.approx([0.4, 0.3, 0.2]),
                     "inside": True, "outside": False}]


def test_directed_connectivity_patterns_reach_what_undirected_ones_do(mirrored: FalkorStore) -> None:
    def reached(arrow: str) -> list[str]:
        rows = mirrored.query(
            f"MATCH (p:MeshPlace {{nodeSymbol: 'Q4'}})-[:MESH_PLACE_CONNECTED*1..5]{arrow}(c:MeshPlace) "
            "RETURN DISTINCT c.nodeSymbol AS s ORDER BY s"
        )
        return [r["s"] for r in rows]

    assert reached("->") == reached("-") == ["Q0", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7"]
    back = mirrored.query(
        "MATCH (c:MeshPlace {nodeSymbol: 'Q7'})<-[:MESH_PLACE_CONNECTED]-(p) RETURN p.nodeSymbol AS s"
    )
    assert back == [{"s": "Q6"}]


def test_loading_the_library_again_is_harmless(mirrored: FalkorStore) -> None:
    ensure_point_functions(mirrored)
    ensure_point_functions(mirrored)
    assert mirrored.query("RETURN point.distance([0, 0, 0], [3, 4, 0]) AS d") == [{"d": 5}]
    listed = mirrored.execute_command("GRAPH.UDF", "LIST", point_udf.LIBRARY, "WITHCODE")
    assert loaded_code(listed, point_udf.LIBRARY) == point_udf.SCRIPT


def test_other_code_under_the_name_is_replaced(mirrored: FalkorStore) -> None:
    stale = "function distance(a, b) { return -1; }\nfalkor.register('distance', distance);"
    mirrored.execute_command("GRAPH.UDF", "LOAD", "REPLACE", point_udf.LIBRARY, stale)
    assert mirrored.query("RETURN point.distance([0, 0, 0], [3, 4, 0]) AS d") == [{"d": -1}]
    ensure_point_functions(mirrored)
    assert mirrored.query("RETURN point.distance([0, 0, 0], [3, 4, 0]) AS d") == [{"d": 5}]


def test_directed_ranges_on_a_cyclic_place_graph_reach_what_a_search_reaches(store: FalkorStore) -> None:
    """A 10 x 10 grid stored both ways: FalkorDB 4.16 alone gets directed ranges wrong here (see falkordb_paths)."""
    if store.dialect.has_points:
        pytest.skip("the rewrite is FalkorDB's")
    graph = generate_scene("small", 0, mesh_prefix="Q")
    Mirror(store).reconcile(graph)
    for start, hops in (("Q0", 4), ("Q0", 5), ("Q44", 3), ("Q57", 6)):
        row, col = divmod(int(start[1:]), 10)
        rows = store.query(
            f"MATCH (p:MeshPlace {{nodeSymbol: '{start}'}})-[:MESH_PLACE_CONNECTED*1..{hops}]->(c:MeshPlace) "
            "RETURN DISTINCT c.nodeSymbol AS s"
        )
        undirected = store.query(
            f"MATCH (p:MeshPlace {{nodeSymbol: '{start}'}})-[:MESH_PLACE_CONNECTED*1..{hops}]-(c:MeshPlace) "
            "RETURN DISTINCT c.nodeSymbol AS s"
        )
        reached = {r["s"] for r in rows}
        assert reached == {r["s"] for r in undirected}
        # Within the start's quadrant (no walls) every place within ``hops`` steps is reached.
        quadrant = {f"Q{r * 10 + c}" for r in range(10) for c in range(10)
                    if r // 5 == row // 5 and c // 5 == col // 5 and abs(r - row) + abs(c - col) <= hops}
        assert quadrant <= reached
