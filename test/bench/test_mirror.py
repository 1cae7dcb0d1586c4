"""``heracles bench mirror``: never empties a database that holds a scene; measures behind the read replica."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from heracles_ros.cli import main
from heracles_ros.embedded.replica import ReadReplica
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import extract_tables
from heracles_ros.schema import Layer

COUNT_ALL = "MATCH (n) RETURN count(n) AS n"


@pytest.mark.backends("bolt")  # FalkorDB: the benchmark always gets a graph of its own
def test_the_mirror_benchmark_refuses_a_neo4j_database_that_holds_data(
    small_store: GraphStore, db_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = small_store.query(COUNT_ALL)
    assert main(["bench", "mirror", "--kind", "small", "--repeat", "1", "--db", db_uri]) == 1
    assert "is not empty" in capsys.readouterr().err
    assert small_store.query(COUNT_ALL) == before


def test_the_small_scene_is_measured_with_the_read_replica_attached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"embedded:{tmp_path}"
    try:
        argv = ["bench", "mirror", "--kind", "small", "--repeat", "1", "--read-replica", "--json", "--db", uri]
        assert main(argv) == 0
        figures = json.loads(capsys.readouterr().out)
        assert figures["read_replica"] is True and figures["nodes"] > 100
        assert figures["full_load_s"] > 0 and figures["changed_1pct_writes"] > 0
        # Both kinds of unchanged snapshot were mirrored with zero writes (the run refuses otherwise), and the
        # mirror's own process was measured.
        assert figures["nochange_ms"] > 0 and figures["nochange_identical_ms"] > 0
        assert 50 < figures["mirror_peak_rss_mb"] < figures["peak_rss_mb"] * 4
        assert ReadReplica(EmbeddedServer(tmp_path)).running() is not None  # the replica followed the writes
    finally:
        EmbeddedServer(tmp_path).stop()
    assert main(["bench", "mirror", "--kind", "small", "--read-replica", "--db", "neo4j://127.0.0.1:1"]) == 1
    assert "--read-replica needs an embedded database" in capsys.readouterr().err


def test_the_large_scene_is_measured_at_the_scale_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "mirror", "--scale", "0.05", "--repeat", "1", "--no-rss", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    tables = extract_tables(generate_scene("large", 0, scale=0.05))
    layers = [row[0] for row in tables.nodes.values()]
    assert figures["scene"] == "large seed 0 scale 0.05"
    assert (figures["nodes"], figures["edges"]) == (len(tables.nodes), len(tables.edges))
    assert figures["places"] == layers.count(Layer.MESH_PLACE) + layers.count(Layer.PLACE)
    # 1 % of the nodes changed: three in four moved, one in four removed (each removal also drops its edges).
    assert figures["changed_1pct_writes"] >= round(0.01 * len(tables.nodes))
    assert "mirror_peak_rss_mb" not in figures
