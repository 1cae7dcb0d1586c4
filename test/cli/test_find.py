"""``heracles find`` as an operator runs it: words or --like, JSON or text, after ``heracles load`` of a scene and
of its changed self (moved, relabelled, removed objects), on both backends."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.cli import heracles
from support.tiny_scene import node_id, tiny_scene

KEYS = {"symbol", "class", "name", "score", "x", "y", "z", "room", "matched", "uncertain"}


@pytest.fixture
def db(store, db_uri: str, graph_name: str) -> list[str]:
    return ["--db", db_uri, "--graph", graph_name]


def _load(capsys, db: list[str], graph, path: Path) -> None:
    graph.save(str(path), include_mesh=False)
    status, _, err = heracles(capsys, "load", str(path), *db)
    assert status == 0, err


def test_find_after_a_snapshot_that_moves_relabels_and_removes(capsys, db, tmp_path: Path) -> None:
    """The issue's held-out check, through the command: moved objects at their new positions, never a removed one."""
    _load(capsys, db, tiny_scene(), tmp_path / "before.json")
    status, found, err = heracles(capsys, "find", "a cardboard carton", "--json", *db)
    assert status == 0, err
    assert all(set(item) == KEYS for item in found)
    assert [(f["symbol"], f["class"], f["room"]) for f in found[:2]] == [("O0", "box", "R0"), ("O3", "box", "R1")]
    changed = tiny_scene()
    changed.get_node(node_id("O0")).attributes.position = np.array([4.0, 3.0, 0.5])
    changed.get_node(node_id("O1")).attributes.semantic_label = 0  # the bag is a box
    changed.remove_node(node_id("O3"))
    _load(capsys, db, changed, tmp_path / "after.json")
    status, found, err = heracles(capsys, "find", "a cardboard carton", "--k", "1000", "--json", *db)
    assert status == 0, err
    boxes = {f["symbol"]: (f["x"], f["y"], f["z"]) for f in found if f["class"] == "box"}
    assert boxes == {"O0": (4.0, 3.0, 0.5), "O1": (1.0, 1.0, 0.5)}
    assert "O3" not in {f["symbol"] for f in found}


def test_find_prints_a_table_and_like_uses_hydras_features(capsys, db, tmp_path: Path) -> None:
    graph = tiny_scene()
    for index, vector in enumerate(([1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0])):
        graph.get_node(node_id(f"O{index}")).attributes.semantic_feature = np.array(vector, dtype=np.float32)
    _load(capsys, db, graph, tmp_path / "scene.json")
    status, out, err = heracles(capsys, "find", "something to sit on", "--k", "2", *db)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("best words: chair ") and lines[1].split()[:2] == ["O4", "chair"]
    status, like, err = heracles(capsys, "find", "--like", "O0", "--json", *db)
    assert status == 0, err
    assert [f["symbol"] for f in like] == ["O1", "O3", "O2"] and like[0]["score"] == pytest.approx(0.9939, abs=1e-4)


def test_find_refuses_what_it_cannot_answer_and_says_why(capsys, db, tmp_path: Path) -> None:
    _load(capsys, db, tiny_scene(), tmp_path / "scene.json")
    for argv, words in ((["find", *db], "give either TEXT or --like SYMBOL"),
                        (["find", "a box", "--like", "O0", *db], "give either TEXT or --like SYMBOL"),
                        (["find", "a box", "--k", "0", *db], "k must be 1 to 1,000"),
                        (["find", "--like", "O1", *db], "O1 has no semantic feature"),
                        (["find", "--like", "P0", *db], "'P0' is not an object")):
        status, _, err = heracles(capsys, *argv)
        assert status == 1 and words in err, (argv, err)


@pytest.mark.backends("falkordb")
def test_find_on_a_misspelt_graph_says_so(capsys, db_uri: str, store) -> None:
    status, _, err = heracles(capsys, "find", "a box", "--db", db_uri, "--graph", "no_such_graph_here")
    assert status == 1 and "no_such_graph_here" in err and "does not exist" in err


@pytest.mark.backends("falkordb")  # the node's plumbing; the resolver's reads run on both backends above
def test_find_live_goes_through_the_language_servers_find_service_over_dds(
    capsys, db, ros_domain_id, falkordb_uri: str, graph_name: str, tmp_path: Path
) -> None:
    """``heracles find --live`` answers what the offline form answers, through the running language server's
    ``find`` service (its own resolver); a refused request is the service's error, and the node keeps serving."""
    from rclpy.parameter import Parameter
    from support.ros import ros_session, spinning

    from heracles_ros.nodes.language_server import LanguageServerNode

    graph = tiny_scene()
    for index, vector in enumerate(([1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0])):
        graph.get_node(node_id(f"O{index}")).attributes.semantic_feature = np.array(vector, dtype=np.float32)
    _load(capsys, db, graph, tmp_path / "scene.json")
    params = {"db_uri": falkordb_uri, "graph_name": graph_name, "base_url": "http://127.0.0.1:9/v1",
              "instance_check_s": 0.0}
    live = ["--live", "--namespace", "/finder", "--server-timeout", "10"]
    with ros_session(ros_domain_id):
        node = LanguageServerNode(namespace="/finder",
                                  parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        with spinning(node):
            for argv in (["something to sit on", "--k", "3"], ["a cardboard carton"], ["--like", "O0"]):
                status, found, err = heracles(capsys, "find", *argv, "--json", *live)
                assert status == 0, err
                assert found == heracles(capsys, "find", *argv, "--json", *db)[1] and found, argv
            assert found[0]["symbol"] == "O1"
            status, text, err = heracles(capsys, "find", "something to sit on", "--k", "1", *live)
            assert status == 0 and text.split()[:2] == ["O4", "chair"], (text, err)
            status, _, err = heracles(capsys, "find", "--like", "P0", *live)
            assert status == 1 and "find: ConfigError: 'P0' is not an object of the scene" in err, err
            status, _, err = heracles(capsys, "find", "a chair", "--k", "5000", *live)
            assert status == 1 and "k must be 1 to 1,000" in err, err
            status, found, err = heracles(capsys, "find", "a chair", "--json", *live)
            assert status == 0 and found[0]["class"] == "chair", err
