"""``heracles bench mirror``: never empties a database that holds a scene; measures behind the read replica."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from heracles_ros.cli import main
from heracles_ros.embedded.replica import ReadReplica
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.graphdb.store import GraphStore

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
