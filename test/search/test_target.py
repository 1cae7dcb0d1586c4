"""WHAT by meaning: the real resolver (offline word vectors) over the small scene in FalkorDB ranks the map's
classes for the search and recognises the hidden thing once the mirror holds it."""
from __future__ import annotations

import pytest

from heracles_ros.meaning.embeddings import CachedEmbedder, open_embedder
from heracles_ros.meaning.resolver import Resolver
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.search.target import own_classes, target_of
from heracles_ros.search.worlds import hide_objects

pytestmark = pytest.mark.backends("falkordb")

MAP_CLASSES = {"bag", "bicycle", "box", "chair", "laptop", "plant", "table", "trash can"}


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    return open_embedder()


def test_own_classes_fold_case_and_plural() -> None:
    assert own_classes("Fire  Extinguishers") == {"fire extinguishers", "fire extinguisher"}
    assert own_classes("boxes") >= {"boxes", "box"}


def test_words_for_what_the_map_lacks_find_the_thing_once_it_is_mirrored(small_store, embedder) -> None:
    resolver = Resolver(small_store, embedder)
    target = target_of("something to put out fires", resolver.rank_terms)
    assert not target.which(MAP_CLASSES)  # nothing on the map is it: the search goes and looks
    assert set(target.similarity) <= MAP_CLASSES | own_classes("something to put out fires")
    assert not target.which({"fire extinguisher"})  # not a word of the scene yet: nothing to recognise it by

    world = generate_scene("small", 0)
    hide_objects(world, "fire extinguisher", ["P77"])
    Mirror(small_store).reconcile(world)  # what the mirror writes once the simulated Hydra has seen it
    assert target.which({"fire extinguisher", "plant", "box"}) == {"fire extinguisher"}


def test_a_class_named_word_for_word_is_it_and_the_map_s_unlike_classes_are_not_similar(small_store, embedder):
    resolver = Resolver(small_store, embedder)
    target = target_of("Chairs", resolver.rank_terms)
    assert target.which(MAP_CLASSES) == {"chair"}
    assert target.similarity["chair"] == 1.0
    assert "bicycle" not in target.similarity  # an everyday thing unlike a chair does not lift its rooms
    exact = target_of("something to sit on")
    assert not exact.which(MAP_CLASSES) and exact.rank is None  # without a ranking, words are only themselves
