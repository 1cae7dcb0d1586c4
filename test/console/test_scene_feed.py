"""The map's diffs on the small real graph (whole reads): what changed in the database is what the page is told, and
only that; the whole map comes rooms and objects first, then the places."""
from __future__ import annotations

import json
from typing import Any

import pytest

from heracles_ros.console import scene_feed
from heracles_ros.console.map_reads import read_whole_map
from heracles_ros.console.scene_feed import SceneFeed

pytestmark = pytest.mark.backends("falkordb")

LAYERS = {"Room": "room", "MeshPlace": "place", "Object": "object"}


def drawn_in_database(store: Any) -> dict[str, tuple[str, str, float, float]]:
    """symbol -> (layer, class, x, y) of every room, mesh place and object, straight from the graph (places are
    drawn without their class: 16k of them travel as one list of positions; positions to the millimetre)."""
    return {row["s"]: (layer, row["c"] if layer != "place" else "", round(row["x"], 3), round(row["y"], 3))
            for label, layer in LAYERS.items()
            for row in store.query(f"MATCH (n:{label}) RETURN n.nodeSymbol AS s, n.class AS c, n.x AS x, n.y AS y")}


def edges_in_database(store: Any) -> set[tuple[str, str]]:
    """Each place edge once, as its places' symbols (stored both ways), the lower first."""
    return {(row["a"], row["b"]) for row in store.query(
        "MATCH (a:MeshPlace)-[:MESH_PLACE_CONNECTED]->(b:MeshPlace) WHERE a.nodeSymbol < b.nodeSymbol "
        "RETURN a.nodeSymbol AS a, b.nodeSymbol AS b")}


def first_object(store: Any) -> str:
    return str(store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")[0]["s"])


@pytest.fixture
def fed(small_store) -> SceneFeed:
    """A feed that has sent the small scene once."""
    feed = SceneFeed()
    feed.apply(read_whole_map(small_store, why="test"))
    return feed


def drawn(diff: Any) -> dict[str, tuple[str, str, float, float]]:
    """symbol -> (layer, class, x, y) of what a diff upserts and places."""
    return {**{i.symbol: (i.layer, i.cls, i.x, i.y) for i in diff.upsert},
            **{symbol: ("place", "", x, y) for symbol, x, y in diff.places}}


def test_the_first_view_is_everything_the_database_draws(small_store):
    feed = SceneFeed()
    first = feed.apply(read_whole_map(small_store, why="test"))
    expected = drawn_in_database(small_store)
    assert drawn(first) == expected
    assert first.remove == () and first.edges_removed == ()
    assert set(first.edges_added) == edges_in_database(small_store)
    head, places, edges = [piece.to_message() for piece in feed.full()]
    assert [(m["full"], m["more"]) for m in (head, places, edges)] == [(True, True), (False, True), (False, False)]
    assert {i["symbol"] for i in head["upsert"]} | set(places["places"]["symbols"]) == set(expected)
    assert head["places"]["symbols"] == [] and head["edges"]["add"] == []  # rooms and objects come first
    assert {tuple(edge) for edge in edges["edges"]["add"]} == edges_in_database(small_store)
    assert edges["edges"]["remove"] == []


def test_the_whole_map_comes_in_pieces_rooms_and_objects_first_then_places_then_edges(small_store, monkeypatch):
    """Places PLACES_PER_MESSAGE at a time (the small scene's 104 in pieces of 30 here), then their edges twice as
    many at a time, all but the last message with more: true; every place and edge once."""
    feed = SceneFeed()
    feed.apply(read_whole_map(small_store, why="test"))
    monkeypatch.setattr(scene_feed, "PLACES_PER_MESSAGE", 30)
    pieces = [json.loads(text) for text in feed.full_texts()[1]]
    assert [len(p["upsert"]) for p in pieces] == [len(feed.items())] + [0] * (len(pieces) - 1)
    assert [len(p["places"]["symbols"]) for p in pieces] == [0, 30, 30, 30, 14, 0, 0, 0]
    assert [len(p["edges"]["add"]) for p in pieces] == [0, 0, 0, 0, 0, 60, 60, 48]
    assert [p["more"] for p in pieces] == [True] * 7 + [False] and pieces[0]["full"]
    edges = [tuple(edge) for p in pieces for edge in p["edges"]["add"]]
    assert len(edges) == len(set(edges)) and set(edges) == edges_in_database(small_store)
    assert sorted(s for p in pieces for s in p["places"]["symbols"]) == sorted(
        s for s, (layer, *_) in drawn_in_database(small_store).items() if layer == "place")


def test_nothing_changed_sends_nothing(small_store, fed):
    assert fed.apply(read_whole_map(small_store, why="test")).empty


def test_a_moved_object_is_one_upsert_at_its_new_position(small_store, fed):
    symbol = first_object(small_store)
    small_store.write("MATCH (o:Object {nodeSymbol: $s}) SET o.x = o.x + 2.5", {"s": symbol})
    diff = fed.apply(read_whole_map(small_store, why="test"))
    layer, cls, x, y = drawn_in_database(small_store)[symbol]
    assert [(i.symbol, i.layer, i.cls, i.x, i.y) for i in diff.upsert] == [
        (symbol, layer, cls, x, y)]
    assert (diff.remove, diff.edges_added, diff.edges_removed) == ((), (), ())
    message = diff.to_message()
    assert message["full"] is False and message["edges"] == {"add": [], "remove": []}
    assert message["upsert"][0]["symbol"] == symbol


def test_an_operator_addition_is_marked(small_store, fed):
    symbol = first_object(small_store)
    small_store.write("MATCH (o:Object {nodeSymbol: $s}) SET o.source = 'operator'", {"s": symbol})
    diff = fed.apply(read_whole_map(small_store, why="test"))
    assert [(i.symbol, i.operator) for i in diff.upsert] == [(symbol, True)]


def test_a_removed_object_is_one_removal(small_store, fed):
    symbol = first_object(small_store)
    small_store.write("MATCH (o:Object {nodeSymbol: $s}) DETACH DELETE o", {"s": symbol})
    diff = fed.apply(read_whole_map(small_store, why="test"))
    assert (diff.upsert, diff.places, diff.remove, diff.edges_added, diff.edges_removed) == ((), (), (symbol,), (), ())
    assert symbol not in {i.symbol for i in fed.full()[0].upsert}


def test_a_removed_and_an_added_connection_are_sent_as_such(small_store, fed):
    before = edges_in_database(small_store)
    small_store.write("MATCH (a:MeshPlace)-[r:MESH_PLACE_CONNECTED]-(b:MeshPlace) "
                      "WITH a, b ORDER BY a.nodeSymbol, b.nodeSymbol LIMIT 1 "
                      "MATCH (a)-[r:MESH_PLACE_CONNECTED]-(b) DELETE r")
    (gone,) = before - edges_in_database(small_store)
    diff = fed.apply(read_whole_map(small_store, why="test"))
    assert (diff.upsert, diff.places, diff.remove, diff.edges_added, diff.edges_removed) == ((), (), (), (), (gone,))
    assert fed.apply(read_whole_map(small_store, why="test")).empty
    small_store.write("MATCH (a:MeshPlace {nodeSymbol: $a}), (b:MeshPlace {nodeSymbol: $b}) "
                      "CREATE (a)-[:MESH_PLACE_CONNECTED]->(b), (b)-[:MESH_PLACE_CONNECTED]->(a)",
                      {"a": gone[0], "b": gone[1]})
    diff = fed.apply(read_whole_map(small_store, why="test"))
    assert (diff.edges_added, diff.edges_removed) == ((gone,), ())
    assert {edge for piece in fed.full() for edge in piece.edges_added} == before


def test_a_moved_place_is_one_upsert_and_no_edge(small_store, fed):
    """The page draws edges between their places wherever they are: a move resends no edge (34k of them on the
    kilometre-scale scene), however far."""
    place = small_store.query("MATCH (p:MeshPlace)-[:MESH_PLACE_CONNECTED]->() RETURN p.nodeSymbol AS s "
                              "ORDER BY s LIMIT 1")[0]["s"]
    for metres in (0.05, 3.0):
        small_store.write("MATCH (p:MeshPlace {nodeSymbol: $s}) SET p.x = p.x + $m", {"s": place, "m": metres})
        diff = fed.apply(read_whole_map(small_store, why="test"))
        x = small_store.query("MATCH (p:MeshPlace {nodeSymbol: $s}) RETURN p.x AS x", {"s": place})[0]["x"]
        assert [(symbol, px) for symbol, px, _ in diff.places] == [(place, round(x, 3))]
        assert (diff.upsert, diff.remove, diff.edges_added, diff.edges_removed) == ((), (), (), ())
