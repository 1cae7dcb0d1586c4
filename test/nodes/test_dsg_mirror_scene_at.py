"""The dsg_mirror node's ``scene_at`` service over real DDS: the issue's held-out scenario (a scene, then a second
snapshot a minute later in which objects moved, one disappeared and one appeared), asked at a time between the two
and now, answered as the database path (:mod:`heracles_ros.mirror.as_of`) answers; bad requests are refused by
name and the node goes on."""
from __future__ import annotations

import json
import math
import time
from typing import Any

from heracles_ros.srv import SceneAt
from support.history_scene import MOVED_FROM, MOVED_TO, changed_scene
from support.mirror_node import MirrorHarness, mirror_node
from support.ros import call_service
from support.tiny_scene import tiny_scene

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.as_of import NodeAt, node_at, scene_at
from heracles_ros.mirror.as_of import SceneAt as SceneAtRead

TOPIC = "/test/dsg_scene_at"
T0 = 1_700_000_000.0
BETWEEN = T0 + 30


def _two_loads(mirror: MirrorHarness) -> Any:
    for sequence, graph, stamp in ((1, tiny_scene(), T0), (2, changed_scene(), T0 + 60)):
        mirror.send(graph, sequence, stamp_s=stamp)
    client = mirror.probe.create_client(SceneAt, "/scene_at")
    assert client.wait_for_service(timeout_sec=10.0)
    return client


def _nodes(reply: Any) -> list[dict[str, Any]]:
    assert reply.error == "", reply.error
    return [json.loads(text) for text in reply.nodes]


def _xyz(node: dict[str, Any]) -> tuple[float, float, float]:
    return (node["x"], node["y"], node["z"])


def test_the_scene_between_two_loads_and_now_as_the_database_path_gives_them(
    ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    with mirror_node(ros_domain_id, topic=TOPIC, db_uri=db_uri, graph_name=graph_name) as mirror:
        client = _two_loads(mirror)
        then = _nodes(call_service(client, SceneAt.Request(at_s=BETWEEN)))
        now = _nodes(call_service(client, SceneAt.Request(at_s=0.0)))
        boxes_r1 = _nodes(call_service(client, SceneAt.Request(at_s=BETWEEN, class_name="Box", room="R1")))
        where = {symbol: _nodes(call_service(client, SceneAt.Request(at_s=BETWEEN, symbol=symbol)))
                 for symbol in ("O0", "O3", "O5")}
        gone_now = _nodes(call_service(client, SceneAt.Request(symbol="O3")))
    objects = {o["symbol"]: o for o in then}
    assert list(objects) == ["O0", "O1", "O2", "O3", "O4"]  # O3 still there, O5 not yet
    assert math.dist(_xyz(objects["O0"]), MOVED_FROM) <= 0.01 and objects["O0"]["recorded"]
    assert (_xyz(objects["O3"]), objects["O3"]["room"], objects["O3"]["last_seen"]) == ((5.0, 1.0, 0.5), "R1", T0)
    assert [o["symbol"] for o in now] == ["O0", "O1", "O2", "O4", "O5"] and _xyz(now[0]) == MOVED_TO
    assert [o["symbol"] for o in boxes_r1] == ["O3"]
    assert [(n["present"], n["x"]) for n in where["O5"]] == [(False, None)]  # it appeared later
    assert [(n["present"], n["last_seen"]) for n in gone_now] == [(False, T0)]
    # Exactly what the database path reads, field for field.
    for at, answer in ((BETWEEN, then), (None, now)):
        found = scene_at(store, at)
        assert isinstance(found, SceneAtRead) and answer == [node.to_json() for node in found.objects]
    for symbol, nodes in where.items():
        node = node_at(store, symbol, BETWEEN)
        assert isinstance(node, NodeAt) and nodes == [node.to_json()]


def test_bad_requests_are_refused_by_name_and_the_node_goes_on(
    ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    with mirror_node(ros_domain_id, topic=TOPIC, db_uri=db_uri, graph_name=graph_name) as mirror:
        client = _two_loads(mirror)
        for request, reason in (
            (SceneAt.Request(at_s=T0 - 1), "is before the history began: it answers from 2023-11-14T22:13:20.000Z"),
            (SceneAt.Request(at_s=T0 - 1, symbol="O0"), "is before the history began"),
            (SceneAt.Request(symbol="O99"), "O99: no such node in the scene, nor in the history it keeps"),
            (SceneAt.Request(symbol="O" * 300), "symbol is 300 characters long; at most 256 are taken"),
            (SceneAt.Request(symbol="a box"), "symbol 'a box' is not a scene symbol"),
            (SceneAt.Request(room="R1\nforged log line"), "room must be one line"),
            (SceneAt.Request(class_name="x" * 300), "class_name is 300 characters long; at most 256 are taken"),
            (SceneAt.Request(class_name="box\n"), "class_name must be one line"),
            (SceneAt.Request(at_s=float("nan")), "at_s must be a finite number"),
            (SceneAt.Request(at_s=-1e12), "at_s must be a finite number"),
            (SceneAt.Request(symbol="O0", room="R1"), "with a symbol leave them empty"),
        ):
            reply = call_service(client, request)
            assert reason in reply.error and reply.nodes == [], (request, reply.error)
        # Negative: that many seconds before the node's now, here the time between the loads.
        ago = _nodes(call_service(client, SceneAt.Request(at_s=-(time.time() - BETWEEN))))
    assert [o["symbol"] for o in ago] == ["O0", "O1", "O2", "O3", "O4"]
