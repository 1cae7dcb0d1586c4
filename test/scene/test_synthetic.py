"""Synthetic scenes: reproducible, Hydra-shaped, and as large as the reference paper's."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import spark_dsg as dsg
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from heracles_ros.errors import ConfigError
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import edge_ends, extract_tables, symbol_of
from heracles_ros.schema import Layer


def _census(graph: dsg.DynamicSceneGraph) -> tuple[Counter[str], dict[str, set[str]]]:
    """Mirrored nodes and classes by symbol prefix (the synthetic scenes use one prefix per layer)."""
    tables = extract_tables(graph)
    counts = Counter(symbol_of(i)[0] for i in tables.nodes)
    classes: dict[str, set[str]] = {}
    for node_id, row in tables.nodes.items():
        classes.setdefault(symbol_of(node_id)[0], set()).add(row[1])
    return counts, classes


def _mesh_components(graph: dsg.DynamicSceneGraph) -> int:
    tables = extract_tables(graph)
    places = sorted(i for i, row in tables.nodes.items() if row[0] is Layer.MESH_PLACE)
    index = {p: k for k, p in enumerate(places)}
    pairs = [edge_ends(e) for e in tables.edges]
    pairs = [(index[a], index[b]) for a, b in pairs if a in index and b in index]
    rows, cols = zip(*pairs, strict=True)
    matrix = coo_matrix(([1] * len(rows), (rows, cols)), shape=(len(places), len(places)))
    return int(connected_components(matrix, directed=False)[0])


def test_same_seed_same_scene_other_seed_other_scene() -> None:
    a, b, c = (extract_tables(generate_scene("small", seed)) for seed in (7, 7, 8))
    assert (a.nodes, a.edges) == (b.nodes, b.edges)
    assert a.nodes != c.nodes


@pytest.mark.parametrize("kind", ["small", "large"])
def test_same_seed_writes_the_same_bytes_and_the_file_loads(kind: str, tmp_path: Path) -> None:
    """spark_dsg leaves some pose and ellipse fields as raw memory: unset, the files differ from run
    to run, and a NaN there is saved as JSON null that spark_dsg cannot load (a CI run hit it)."""
    scale = {"scale": 0.02} if kind == "large" else {}
    files = []
    for k in range(3):
        path = tmp_path / f"{kind}{k}.json"
        generate_scene(kind, 5, **scale).save(str(path))
        files.append(path.read_bytes())
        assert dsg.DynamicSceneGraph.load(str(path)).num_nodes() > 0
    assert files[0] == files[1] == files[2]
    # spark_dsg writes empty matrices as null; any other null is a NaN
    assert set(re.findall(rb'"(\w+)":null', files[0])) <= {b"data", b"dbow_ids", b"dbow_values"}
    binaries = {generate_scene(kind, 5, **scale).to_binary() for _ in range(3)}
    assert len(binaries) == 1


def test_small_scene_is_an_indoor_floor_with_hydra_quirks() -> None:
    graph = generate_scene("small", 0)
    counts, classes = _census(graph)
    assert counts["P"] == 104 and counts["p"] == 16 and counts["R"] == 5 and 20 <= counts["O"] <= 60
    assert classes["R"] == {"kitchen", "lounge", "hallway", "office", "storage"}  # from the rooms' names
    assert classes["P"] == {"mesh place"}  # no labelspace for places, as in real Hydra files
    metadata = graph.metadata.get()
    assert set(metadata["labelspaces"]) == {"_l2p0"}  # Hydra writes no room labelspace
    assert {n.attributes.semantic_label for n in graph.get_layer(4).nodes} == {0}
    # Hydra's frontiers and agent layer are there, and not mirrored.
    frontiers = [n for n in graph.get_layer(3).nodes if not n.attributes.real_place]
    assert len(frontiers) == 2 and "f" not in counts
    assert graph.get_layer(2, ord("a")).num_nodes() == 6 and "a" not in counts
    assert _mesh_components(graph) == 2  # the shed is not reachable from the floor
    orphans = [o for o in graph.get_layer(2).nodes if not o.has_parent()]
    assert 0 < len(orphans) < counts["O"] / 3


def test_large_scene_matches_the_reference_papers_graph() -> None:
    graph = generate_scene("large", 0)
    counts, classes = _census(graph)
    assert abs(counts["P"] - 15944) < 100
    assert counts["O"] == 314 and len(classes["O"]) == 12
    assert counts["R"] == 124 and len(classes["R"]) == 4
    metadata = graph.metadata.get()
    assert set(metadata["labelspaces"]) == {"_l2p0"}
    assert all(len(pair) == 2 for pair in metadata["labelspaces"]["_l2p0"])
    xs = [n.attributes.position[0] for n in graph.get_layer(3, 1).nodes]
    assert max(xs) - min(xs) > 900  # kilometre scale
    assert any(not o.has_parent() for o in graph.get_layer(2).nodes)



def test_the_q_variant_names_mesh_places_as_hydras_code_default() -> None:
    p_tables = extract_tables(generate_scene("small", 0))
    q_tables = extract_tables(generate_scene("small", 0, mesh_prefix="Q"))
    q_mesh = {symbol_of(i) for i, row in q_tables.nodes.items() if row[0] is Layer.MESH_PLACE}
    assert q_mesh == {f"Q{i}" for i in range(104)}
    assert len(q_tables.nodes) == len(p_tables.nodes) and len(q_tables.edges) == len(p_tables.edges)
    with pytest.raises(ConfigError, match="mesh place prefix"):
        generate_scene("small", 0, mesh_prefix="O")


def test_scale_shrinks_the_large_scene() -> None:
    counts, _ = _census(generate_scene("large", 1, scale=0.1))
    assert 1400 < counts["P"] < 1800


def _nearest_room_by_brute_force(graph: dsg.DynamicSceneGraph) -> tuple[np.ndarray, np.ndarray]:
    """Each mesh place's room as the scene holds it, and the room whose centre (its region's seed) is nearest."""
    rooms = sorted(graph.get_layer(4).nodes, key=lambda n: n.id.value)
    centres = np.array([n.attributes.position[:2] for n in rooms])
    room_ids = np.array([n.id.value for n in rooms], dtype=np.uint64)
    places = list(graph.get_layer(3, 1).nodes)
    held = np.array([p.get_parent() for p in places], dtype=np.uint64)
    xy = np.array([p.attributes.position[:2] for p in places])
    nearest = np.concatenate([  # in chunks: places x rooms at 10^5 places is 2 GB at once
        np.argmin(((xy[i : i + 4096, None, :] - centres[None, :, :]) ** 2).sum(axis=2), axis=1)
        for i in range(0, len(xy), 4096)
    ])
    return held, room_ids[nearest]


@pytest.mark.parametrize("scale", [0.05, 6.272])
def test_every_place_is_in_the_region_of_its_nearest_seed_at_any_scale(scale: float) -> None:
    """6.272 is 10^5 places, past the old cap of 4 (a places x regions array of 1.9 GB then)."""
    graph = generate_scene("large", 0, scale=scale)
    held, nearest = _nearest_room_by_brute_force(graph)
    assert np.array_equal(held, nearest)
    if scale > 6:
        assert graph.get_layer(3, 1).num_nodes() > 100_000 and graph.get_layer(4).num_nodes() == round(124 * scale)
        assert graph.get_layer(2).num_nodes() == round(314 * scale)


@pytest.mark.parametrize("kind,scale", [("medium", 1.0), ("large", 0.0), ("large", 101.0)])
def test_bad_arguments_are_named(kind: str, scale: float) -> None:
    with pytest.raises(ConfigError, match=r"medium|scale"):
        generate_scene(kind, 0, scale=scale)
