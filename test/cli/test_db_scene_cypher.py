"""The admin commands (`heracles db|load|summary|generate-scene|cypher|bench mirror`) on real databases."""
from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import heracles
from support.mirror_checks import assert_mirrors
from support.tiny_scene import tiny_scene

from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.scene.io import load_scene


def test_db_start_status_stop(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    uri = f"embedded:{tmp_path / 'db'}"
    status, out, _ = heracles(capsys, "db", "status", "--json", "--db", uri)
    assert (status, out["running"]) == (1, False)
    status, started, _ = heracles(capsys, "db", "start", "--json", "--db", uri)
    try:
        assert (status, started["running"], started["reused"]) == (0, True, False)
        status, again, _ = heracles(capsys, "db", "start", "--json", "--db", uri)
        assert (again["reused"], again["port"], again["pid"]) == (True, started["port"], started["pid"])
        status, out, _ = heracles(capsys, "db", "status", "--json", "--db", uri)
        assert (status, out["running"], out["nodes"], out["pid"]) == (0, True, 0, started["pid"])
    finally:
        status, out, _ = heracles(capsys, "db", "stop", "--json", "--db", uri)
    assert (status, out["stopped"]) == (0, True)
    assert heracles(capsys, "db", "status", "--json", "--db", uri)[0] == 1
    status, _, err = heracles(capsys, "db", "start", "--json", "--db", "falkordb://127.0.0.1:9")
    assert status == 1 and "manages the embedded server only" in err


def test_generate_load_summary_and_cypher(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    db = ("--db", db_uri, "--graph", graph_name)
    scene = tmp_path / "small.json"
    status, out, _ = heracles(capsys, "generate-scene", "--json", "--kind", "small", "--seed", "3", "--out", str(scene))
    assert status == 0 and out["nodes"] > 100 and scene.is_file()

    status, loaded, _ = heracles(capsys, "load", "--json", str(scene), *db)
    graph = load_scene(scene)
    assert status == 0
    assert loaded["nodes_added"] == loaded["nodes"] == loaded["mirrored"]["nodes"]
    assert loaded["edges_added"] == loaded["mirrored"]["edges"]
    assert loaded["mirrored"]["relationships"] == loaded["edges"]  # what the database holds: connections both ways
    assert_mirrors(store, graph)
    objects = store.query("MATCH (o:Object) RETURN count(o) AS n")[0]["n"]
    assert loaded["nodes_by_label"]["Object"] == objects
    status, again, _ = heracles(capsys, "load", "--json", str(scene), *db)
    assert (again["nodes_added"], again["nodes_changed"], again["edges_added"]) == (0, 0, 0)

    status, summary, _ = heracles(capsys, "summary", "--json", *db)
    assert status == 0 and summary["nodes"] == loaded["nodes"]
    assert sum(summary["classes_by_label"]["Object"].values()) == objects
    assert set(summary["classes_by_label"]["Room"]) <= {"kitchen", "lounge", "hallway", "office", "storage"}

    query = "MATCH (r:Room)-[:CONTAINS]->(:MeshPlace)-[:CONTAINS]->(o:Object) RETURN r.class AS room, count(o) AS n"
    status, rows, _ = heracles(capsys, "cypher", "--json", query, *db)
    assert status == 0 and rows and all(set(row) == {"room", "n"} for row in rows)
    assert rows == store.query(query)

    status, _, err = heracles(capsys, "cypher", "--json", "MATCH (n RETURN n", *db)
    # the database's own message: FalkorDB's text, or Neo4j's status code
    assert status == 1 and ("Invalid input" in err or "Neo.ClientError.Statement.SyntaxError" in err)


@pytest.mark.arcadedb_deviation("read_only")
def test_cypher_refuses_writes(
    capsys: pytest.CaptureFixture[str], db_uri: str, graph_name: str, store: GraphStore
) -> None:
    db = ("--db", db_uri, "--graph", graph_name)
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    status, _, err = heracles(capsys, "cypher", "--json", "CREATE (:Object {nodeSymbol: 'O999'})", *db)
    assert status == 1 and "only" in err and "reads" in err
    assert store.query("MATCH (o:Object {nodeSymbol: 'O999'}) RETURN o") == []


def test_load_refuses_a_shrinking_scene_unless_forced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    db = ("--db", db_uri, "--graph", graph_name)
    big, empty = tmp_path / "big.json", tmp_path / "empty.json"
    heracles(capsys, "generate-scene", "--json", "--kind", "small", "--out", str(big))
    tiny = tiny_scene()
    for node in list(tiny.nodes):
        tiny.remove_node(node.id.value)
    tiny.save(str(empty))
    assert heracles(capsys, "load", "--json", str(big), *db)[0] == 0
    status, _, err = heracles(capsys, "load", "--json", str(empty), *db)
    assert status == 1 and "held back" in err
    assert store.query("MATCH (o:Object) RETURN count(o) AS n")[0]["n"] > 0
    status, out, _ = heracles(capsys, "load", "--json", str(empty), "--force", *db)
    assert status == 0 and out["nodes"] == 0
    status, _, err = heracles(capsys, "load", "--json", str(tmp_path / "missing.json"), *db)
    assert status == 1 and "does not exist" in err


def test_bench_mirror_runs_on_the_small_scene(capsys: pytest.CaptureFixture[str], falkordb_uri: str) -> None:
    status, figures, _ = heracles(capsys, "bench", "mirror", "--json", "--kind", "small", "--repeat", "1",
                                  "--db", falkordb_uri)
    assert status == 0
    for key in ("full_load_s", "nochange_ms", "changed_1pct_ms", "peak_rss_mb", "decode_floor_ms", "db_floor_s"):
        assert figures[key] > 0, key
    assert figures["nodes"] > 100 and figures["edges"] > figures["nodes"]
    assert figures["changed_1pct_writes"] > 0


def test_load_of_a_directory_says_so_and_any_suffix_is_binary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    db = ("--db", db_uri, "--graph", graph_name)
    status, _, err = heracles(capsys, "load", "--json", str(tmp_path), *db)
    assert status == 1 and f"{tmp_path} is a directory, not a scene file" in err
    out = tmp_path / "scene.bin"
    status, written, _ = heracles(capsys, "generate-scene", "--json", "--kind", "small", "--out", str(out))
    assert status == 0 and out.read_bytes()[:1] != b"{"  # binary, as the help says
    assert load_scene(out).num_nodes() == written["nodes"]
    status, loaded, _ = heracles(capsys, "load", "--json", str(out), *db)
    assert status == 0 and loaded["nodes"] > 0
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01 not a graph")
    status, _, err = heracles(capsys, "load", "--json", str(junk), *db)
    assert status == 1 and "is not a spark_dsg graph" in err


def test_cypher_prints_at_most_max_rows_and_says_how_many_there_were(
    capsys: pytest.CaptureFixture[str], db_uri: str, graph_name: str, store: GraphStore
) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    db = ("--db", db_uri, "--graph", graph_name)
    many = "UNWIND range(1, 3000000) AS x RETURN x"
    status, rows, err = heracles(capsys, "cypher", "--json", many, "--max-rows", "3", *db)
    assert (status, rows) == (0, [{"x": 1}, {"x": 2}, {"x": 3}])
    assert "3 of 3000000 rows printed (--max-rows 3)" in err
    status, rows, _ = heracles(capsys, "cypher", "--json", "CALL db./**/labels()", *db)
    assert (status, rows) == (0, [{"label": "Object"}])


def test_cypher_on_a_graph_never_written_says_so(
    capsys: pytest.CaptureFixture[str], falkordb_uri: str, graph_name: str
) -> None:
    """FalkorDB answers a query on a missing graph with an error we turn into no rows; without a note a
    count printed [] and the operator could not tell a wrong --graph from an empty scene."""
    db = ("--db", falkordb_uri, "--graph", graph_name)
    status, rows, err = heracles(capsys, "cypher", "--json", "MATCH (n) RETURN count(n) AS n", *db)
    assert (status, rows) == (0, [])
    assert f"graph '{graph_name}' does not exist yet" in err
    with open_store(falkordb_uri, graph=graph_name) as store:
        store.write("CREATE (:Object {nodeSymbol: 'O1'})")
        try:
            status, rows, err = heracles(capsys, "cypher", "--json", "MATCH (n) RETURN count(n) AS n", *db)
            assert (status, rows, err) == (0, [{"n": 1}], "")
        finally:
            store.write("MATCH (n) DETACH DELETE n")


@pytest.mark.backends("falkordb")
def test_summary_names_a_misspelt_graph_and_an_empty_one(
    capsys: pytest.CaptureFixture[str], falkordb_uri: str, graph_name: str, small_store: GraphStore
) -> None:
    """`heracles summary --graph heraclse` printed 0 nodes of every kind; now it names the graph and what
    the server holds instead, and creates nothing."""
    status, out, err = heracles(capsys, "summary", "--json", "--db", falkordb_uri, "--graph", f"{graph_name}_typo")
    assert status == 1 and out == "", out
    assert f"graph '{graph_name}_typo'" in err and "does not exist" in err and f"'{graph_name}'" in err
    assert f"{graph_name}_typo" not in (small_store.graph_names() or [])
    with open_store(falkordb_uri, graph=f"{graph_name}_robot") as robot_only:
        robot_only.write("CREATE (:Robot {nodeSymbol: 'robot'})")
        try:
            status, out, err = heracles(capsys, "summary", "--json", "--db", falkordb_uri,
                                        "--graph", f"{graph_name}_robot")
            assert status == 0 and out["nodes"] == 0 and "holds no scene" in err
        finally:
            robot_only.write("MATCH (n) DETACH DELETE n")
            robot_only.execute_command("GRAPH.DELETE", f"{graph_name}_robot")
