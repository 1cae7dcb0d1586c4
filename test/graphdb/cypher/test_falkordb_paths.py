"""Directed variable-length connectivity patterns are sent to FalkorDB undirected (its 4.16 loses endpoints)."""
from __future__ import annotations

import pytest

from heracles_ros.graphdb.cypher.falkordb_paths import undirected_connectivity


@pytest.mark.parametrize(
    "query,expected",
    [
        ("MATCH (p)-[:MESH_PLACE_CONNECTED*1..5]->(c:MeshPlace) RETURN c",
         "MATCH (p)-[:MESH_PLACE_CONNECTED*1..5]-(c:MeshPlace) RETURN c"),
        ("MATCH (c)<-[r:PLACE_CONNECTED*..3]-(p) RETURN c", "MATCH (c)-[r:PLACE_CONNECTED*..3]-(p) RETURN c"),
        ("MATCH (a)-[:ROOM_CONNECTED|OBJECT_CONNECTED*]->(b) RETURN b",
         "MATCH (a)-[:ROOM_CONNECTED|OBJECT_CONNECTED*]-(b) RETURN b"),
    ],
)
def test_directed_ranges_over_connectivity_become_undirected(query: str, expected: str) -> None:
    assert undirected_connectivity(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (r:Room)-[:CONTAINS*]->(o:Object) RETURN o",  # containment has one direction
        "MATCH (a)-[:MESH_PLACE_CONNECTED]->(b) RETURN b",  # one hop: FalkorDB gets it right
        "MATCH (a)-[:MESH_PLACE_CONNECTED*1..5]-(b) RETURN b",  # already undirected
        "MATCH (a)-[:MESH_PLACE_CONNECTED|CONTAINS*1..3]->(b) RETURN b",  # mixed types: direction matters
        "MATCH (n) RETURN n.class",
    ],
)
def test_everything_else_is_left_alone(query: str) -> None:
    assert undirected_connectivity(query) == query
