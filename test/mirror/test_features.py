"""Hydra's semantic_feature in the database, both backends: written when it changes, gone with its object, and
"things like this one" ranked by it as numpy ranks the snapshot's own vectors."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.errors import ConfigError
from heracles_ros.meaning.embeddings import open_embedder
from heracles_ros.meaning.resolver import Resolver
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.scene.tables import SceneTables, extract_tables

FEATURES_OF = ("MATCH (f:ObjectFeature) WHERE 'ObjectFeature' IN labels(f) "
               "RETURN f.symbol AS symbol, f.dim AS dim ORDER BY symbol")


def _featured(seed: int = 0, *, dim: int = 16) -> tuple[Any, dict[str, np.ndarray]]:
    """The tiny scene with a random feature on O0..O3 (O4 has none)."""
    graph = tiny_scene()
    rng = np.random.default_rng(seed)
    vectors = {}
    for index in range(4):
        symbol = f"O{index}"
        vectors[symbol] = rng.standard_normal(dim).astype(np.float32)
        graph.get_node(node_id(symbol)).attributes.semantic_feature = vectors[symbol]
    return graph, vectors


def _like(vectors: dict[str, np.ndarray], symbol: str) -> list[tuple[str, float]]:
    unit = {s: v / np.linalg.norm(v) for s, v in vectors.items()}
    scores = [(s, float(unit[s] @ unit[symbol])) for s in unit if s != symbol]
    return sorted(scores, key=lambda p: (-p[1], p[0]))


@pytest.fixture(scope="module")
def embedder():
    return open_embedder()


def test_features_are_mirrored_and_rank_things_like_this_one(store, embedder) -> None:
    graph, vectors = _featured()
    mirror = Mirror(store)
    mirror.reconcile(graph)
    assert [(r["symbol"], r["dim"]) for r in store.query(FEATURES_OF)] == [(s, 16) for s in sorted(vectors)]
    found = Resolver(store, embedder).like("O0", k=3)
    want = _like(vectors, "O0")
    assert [f.symbol for f in found.objects] == [s for s, _ in want]
    assert [f.score for f in found.objects] == pytest.approx([score for _, score in want], abs=1e-5)
    first = found.objects[0]
    assert (first.x, first.y, first.z) == tuple(graph.get_node(node_id(first.symbol)).attributes.position)
    assert Resolver(store, embedder).like("O0", k=1).objects[0].symbol == want[0][0]


def test_only_changed_features_are_written_and_a_removed_objects_goes(store, embedder) -> None:
    graph, vectors = _featured()
    mirror = Mirror(store)
    mirror.reconcile(graph)
    graph, _ = _featured()
    vectors["O1"] = -vectors["O1"]
    graph.get_node(node_id("O1")).attributes.semantic_feature = vectors["O1"]  # changed
    graph.get_node(node_id("O2")).attributes.position = np.array([4.0, 2.0, 0.5])  # moved, same feature
    graph.remove_node(node_id("O3"))
    del vectors["O3"]
    assert mirror.features.write(store, _tables(graph)) == 2  # O1 written, O3 deleted; O0 and O2 untouched
    mirror.reconcile(graph)
    assert [r["symbol"] for r in store.query(FEATURES_OF)] == ["O0", "O1", "O2"]
    found = Resolver(store, embedder).like("O0")
    assert [(f.symbol, round(f.score, 4)) for f in found.objects] == [(s, round(v, 4)) for s, v in _like(vectors, "O0")]
    assert found.objects[[f.symbol for f in found.objects].index("O2")].x == 4.0
    # A restarted mirror reads what the database holds and writes nothing that did not change.
    assert Mirror(store).features.write(store, _tables(graph), reread=True) == 0


def test_snapshots_without_features_change_nothing_and_a_lost_feature_goes(store, embedder) -> None:
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene())
    assert store.query(FEATURES_OF) == []
    graph, _ = _featured()
    mirror.reconcile(graph)
    assert len(store.query(FEATURES_OF)) == 4
    mirror.reconcile(tiny_scene())  # Hydra stopped sending them
    assert store.query(FEATURES_OF) == []
    with pytest.raises(ConfigError, match="O0 has no semantic feature"):
        Resolver(store, embedder).like("O0")


def test_features_of_another_width_are_not_compared(store, embedder) -> None:
    graph, _ = _featured()
    graph.get_node(node_id("O3")).attributes.semantic_feature = np.ones(8, dtype=np.float32)
    Mirror(store).reconcile(graph)
    assert "O3" not in {f.symbol for f in Resolver(store, embedder).like("O0").objects}
    assert Resolver(store, embedder).like("O3").objects == []


def _tables(graph: Any) -> SceneTables:
    return extract_tables(graph)


@pytest.mark.backends("falkordb")
def test_canary_falkordb_keeps_an_old_vector_under_a_plain_set(store) -> None:
    """The bundled FalkorDB's bug that write_features works around (REMOVE before SET): a SET of a vecf32 over
    another often keeps the old one. Fails once a FalkorDB without it is bundled: then the REMOVE can go."""
    rng = np.random.default_rng(0)
    kept = 0
    for _ in range(20):
        old, new = rng.standard_normal((2, 16)).astype(np.float32)
        store.write("MATCH (f:Canary) DELETE f")
        store.write("CREATE (:Canary {v: vecf32($v)})", {"v": old.tolist()})
        store.write("MATCH (f:Canary) SET f.v = vecf32($v)", {"v": new.tolist()})
        kept += np.allclose(store.query("MATCH (f:Canary) RETURN f.v AS v")[0]["v"], old, atol=1e-6)
    assert kept > 0
