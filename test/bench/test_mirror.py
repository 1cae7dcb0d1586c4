"""``heracles bench mirror`` never empties a database that holds a scene."""
from __future__ import annotations

import pytest

from heracles_ros.cli import main
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
