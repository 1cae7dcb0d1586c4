"""The map as of a past time: the read against the map shown now, and the ``scene_at`` op through the real
console server (a page's socket, the database the mirror wrote: the tiny scene, then the changed one with O0 moved
3 m, O1 nudged 0.1 m, O3 gone and O5 new)."""
from __future__ import annotations

import json
import time
import uuid

import pytest
from support.console_server import console_server, receive_until
from support.history_scene import MOVED_FROM, changed_scene
from support.tiny_scene import tiny_scene

from heracles_ros.console.as_of_view import read_as_of
from heracles_ros.console.map_reads import read_whole_map
from heracles_ros.console.scene_feed import SceneFeed
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.mirror.reconcile import Mirror

pytestmark = pytest.mark.backends("falkordb")

NOW = 1_800_000_000.0
HOSTILE = '<img src=x onerror="window.__hostile=1">'


@pytest.fixture
def two_loads(store: GraphStore) -> GraphStore:
    """The tiny scene 400 s before NOW, the changed one 200 s before; O2's class corrected to markup."""
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=NOW - 400)
    mirror.reconcile(changed_scene(), stamp_s=NOW - 200)
    Corrections(store).apply([("O2", "class", HOSTILE)], author="mallory")
    return store


def _shown(store: GraphStore) -> SceneFeed:
    feed = SceneFeed()
    feed.apply(read_whole_map(store, why="test"))
    return feed


def test_the_objects_then_are_marked_against_the_map_now(two_loads: GraphStore) -> None:
    shown = _shown(two_loads).items()
    then = read_as_of(two_loads, 300.0, shown, now_s=NOW)
    assert (then["error"], then["at_s"], then["ago_s"], then["kept_from_s"]) == ("", NOW - 300, 300.0, NOW - 400)
    objects = {item["symbol"]: item for item in then["objects"]}
    assert list(objects) == ["O0", "O1", "O2", "O3", "O4"]
    assert (objects["O0"]["x"], objects["O0"]["y"], objects["O0"]["moved"], objects["O0"]["gone"]) == (
        MOVED_FROM[0], MOVED_FROM[1], True, False)  # drawn where it was, 3 m from where the map has it
    assert not objects["O1"]["moved"]  # a 0.1 m nudge is no move: the map's position stands
    assert (objects["O3"]["gone"], objects["O3"]["moved"], objects["O3"]["room"]) == (True, False, "R1")
    assert objects["O2"]["cls"] == HOSTILE  # the text as it is: the page shows it as text
    assert then["hidden"] == ["O5"]  # on the map now, not there then
    assert [o for o in then["objects"] if o["moved"] or o["gone"]] == [objects["O0"], objects["O3"]]
    recent = read_as_of(two_loads, 100.0, shown, now_s=NOW)  # after the second load: the map as it is
    assert [(o["symbol"], o["moved"], o["gone"]) for o in recent["objects"]] == [
        (s, False, False) for s in ("O0", "O1", "O2", "O4", "O5")] and recent["hidden"] == []


def test_a_time_before_the_history_is_said_plainly(two_loads: GraphStore) -> None:
    early = read_as_of(two_loads, 401.0, _shown(two_loads).items(), now_s=NOW)
    assert early["error"] == ("2027-01-15T07:53:19.000Z is before the history began: it answers from "
                              "2027-01-15T07:53:20.000Z to 2027-01-15T07:56:40.000Z (and the present)")
    assert (early["objects"], early["hidden"], early["kept_from_s"]) == ([], [], NOW - 400)


def test_the_op_through_the_console_server(ros_domain_id: int, falkordb_uri: str, graph_name: str,
                                           store: GraphStore) -> None:
    """Times relative to the server's clock: the loads 400 s and 200 s ago, asked 300 s ago, then a week ago (before
    the history), and a second read while the first is in flight is refused, the socket staying open."""
    now = time.time()
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=now - 400)
    mirror.reconcile(changed_scene(), stamp_s=now - 200)
    with console_server(f"/asof_{uuid.uuid4().hex[:6]}", falkordb_uri, graph_name) as served, \
            served.socket() as ws:
        receive_until(ws, lambda m: m["type"] == "scene" and m["upsert"], 30.0)
        ws.send(json.dumps({"op": "scene_at", "ago_s": 300}))
        ws.send(json.dumps({"op": "scene_at", "ago_s": 250}))  # the first is not answered yet
        busy = receive_until(ws, lambda m: m["type"] == "error", 30.0)
        then = receive_until(ws, lambda m: m["type"] == "scene_at", 30.0)
        ws.send(json.dumps({"op": "scene_at", "ago_s": 7 * 86400}))
        early = receive_until(ws, lambda m: m["type"] == "scene_at", 30.0)
        ws.send(json.dumps({"op": "scene_at", "ago_s": 0}))
        zero = receive_until(ws, lambda m: m["type"] == "error", 30.0)
    assert busy == {"type": "error", "about": "scene_at", "message": (
        "scene_at: this page's last as-of read has not been answered yet; ask again once it is")}
    assert then["ago_s"] == 300 and then["error"] == "" and then["hidden"] == ["O5"]
    assert [(o["symbol"], o["moved"], o["gone"]) for o in then["objects"]] == [
        ("O0", True, False), ("O1", False, False), ("O2", False, False), ("O3", False, True), ("O4", False, False)]
    assert "is before the history began: it answers from" in early["error"] and early["objects"] == []
    assert zero["message"] == "scene_at: ago_s must be seconds in (0, 604800]"
