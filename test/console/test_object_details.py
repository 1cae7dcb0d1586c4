"""A clicked object's details on a real mirrored graph with its history: class, room, when it was last seen."""
from __future__ import annotations

import pytest

from heracles_ros.console.object_details import read_object
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.scene.tables import id_of

pytestmark = pytest.mark.backends("falkordb")

T0 = 1_700_000_000.0


def test_an_object_in_the_scene_was_seen_in_the_newest_snapshot_in_its_room(store, small_scene):
    mirror = Mirror(store)
    mirror.reconcile(small_scene, stamp_s=T0)
    mirror.reconcile(small_scene, stamp_s=T0 + 60)
    row = store.query("MATCH (r:Room)-[:CONTAINS]->(:MeshPlace)-[:CONTAINS]->(o:Object) "
                      "RETURN o.nodeSymbol AS s, o.class AS c, r.nodeSymbol AS room ORDER BY s LIMIT 1")[0]
    details = read_object(store, row["s"])
    assert (details.symbol, details.cls, details.room, details.last_seen_s, details.error) == (
        row["s"], row["c"], row["room"], T0 + 60, "")
    assert details.to_message() == {"type": "object", "symbol": row["s"], "cls": row["c"], "room": row["room"],
                                    "last_seen_s": T0 + 60, "error": ""}


def test_an_object_gone_from_the_scene_keeps_when_it_was_last_seen(store, small_scene):
    mirror = Mirror(store)
    mirror.reconcile(small_scene, stamp_s=T0)
    symbol, cls = next((r["s"], r["c"]) for r in store.query(
        "MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c ORDER BY s LIMIT 1"))
    small_scene.remove_node(id_of(symbol))
    mirror.reconcile(small_scene, stamp_s=T0 + 60)
    details = read_object(store, symbol)
    assert (details.cls, details.last_seen_s) == (cls, T0)  # the snapshot before the one it was missing from
    assert details.error == f"{symbol} is no longer in the scene"


def test_an_operator_addition_was_never_seen_and_an_unknown_symbol_says_so(small_store):
    symbol = small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")[0]["s"]
    small_store.write("MATCH (o:Object {nodeSymbol: $s}) SET o.source = 'operator'", {"s": symbol})
    assert read_object(small_store, symbol).last_seen_s is None
    unknown = read_object(small_store, "O99999")
    assert (unknown.cls, unknown.last_seen_s, unknown.error) == ("", None, "no object O99999 in the scene")

