"""The dsg_mirror node's history over real DDS: stamped DsgUpdates in, the ``changes`` service out."""
from __future__ import annotations

import json

from heracles_ros.srv import Changes
from support.history_scene import MOVED_FROM, MOVED_TO, changed_scene
from support.mirror_node import mirror_node
from support.ros import Collector, call_service, qos, wait_until
from support.tiny_scene import add_object, tiny_scene
from visualization_msgs.msg import Marker, MarkerArray

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.nodes.markers import NS_ADDED

TOPIC = "/test/dsg_history"
T0 = 1_700_000_000


def test_stamped_snapshots_make_history_the_changes_service_returns(
    ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    with mirror_node(ros_domain_id, topic=TOPIC, db_uri=db_uri, graph_name=graph_name) as mirror:
        client = mirror.probe.create_client(Changes, "/changes")
        markers: Collector[MarkerArray] = Collector(mirror.probe, MarkerArray, "/history_markers", qos(1))
        wait_until(lambda: mirror.node.count_subscribers("/history_markers") >= 1, 10.0, "the markers' subscriber")
        for sequence, graph, stamp in ((1, tiny_scene(), T0 + 0.25), (2, changed_scene(), T0 + 60.25)):
            mirror.send(graph, sequence, stamp_s=stamp)
            if sequence == 1:  # the operator corrects O3, which the next snapshot lacks
                Corrections(store).apply([("O3", "class", "crate")])
        assert client.wait_for_service(timeout_sec=10.0)
        reply = call_service(client, Changes.Request(since_s=float(T0 - 1)))
        room = call_service(client, Changes.Request(since_s=float(T0 - 1), room="R1"))
        recent = call_service(client, Changes.Request(since_s=-3600.0))
        shown = markers.wait(lambda m: any(x.ns == "heracles/moved" and x.action == Marker.ADD
                                           for x in m.markers), 10.0, what="history markers")
    arrows = [m for m in shown.markers if m.type == Marker.ARROW]
    assert [[(p.x, p.y, p.z) for p in m.points] for m in arrows] == [[MOVED_FROM, MOVED_TO]]
    assert [m.text for m in shown.markers if m.type == Marker.TEXT_VIEW_FACING] == ["O0 box 3.0 m"]
    assert reply.error == ""
    events = [json.loads(text) for text in reply.changes]
    assert [(e["kind"], e["symbol"]) for e in events] == [
        ("moved", "O0"), ("disappeared", "O3"), ("appeared", "O5"), ("correction retired", "O3")]
    assert events[3]["correction"] == "O3.class" and events[3]["t"] == T0 + 60.25  # as `heracles changes` lists it
    moved = events[0]
    assert (moved["from_position"], moved["position"]) == (list(MOVED_FROM), list(MOVED_TO))
    assert (moved["t"], moved["seq"]) == (T0 + 60.25, 2)  # the header stamp, not the arrival time
    assert [json.loads(text)["symbol"] for text in room.changes] == ["O3"]
    assert recent.changes == [] and recent.error == ""  # stamps of 2023 are not within the last hour
    # What the database holds now is the present; the history says where O0 was.
    assert store.query("MATCH (o:Object {nodeSymbol: 'O0'}) RETURN o.x AS x") == [{"x": 3.0}]
    assert store.query("MATCH (c:Change {symbol: 'O0', kind: 'moved'}) RETURN c.from_x AS x") == [{"x": 0.0}]


def test_the_operators_additions_are_drawn_in_their_own_namespace_until_perception_replaces_them(
    ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    with mirror_node(ros_domain_id, topic=TOPIC, db_uri=db_uri, graph_name=graph_name) as mirror:
        markers: Collector[MarkerArray] = Collector(mirror.probe, MarkerArray, "/history_markers", qos(1))
        wait_until(lambda: mirror.node.count_subscribers("/history_markers") >= 1, 10.0, "the markers' subscriber")
        graph = tiny_scene()
        mirror.send(graph, 1, stamp_s=T0 + 0.25)
        Corrections(store).propose([], [{"add": "chair", "at": [4.0, 2.0, 0.5], "near": "O2"}])
        shown = markers.wait(lambda m: any(x.ns == NS_ADDED and x.action == Marker.ADD for x in m.markers),
                             10.0, what="the addition's markers")
        added = [m for m in shown.markers if m.ns == NS_ADDED]
        assert [(m.type, m.text) for m in added] == [(Marker.CUBE, ""),
                                                     (Marker.TEXT_VIEW_FACING, "A1 chair (operator-added)")]
        assert (added[0].pose.position.x, added[0].pose.position.y) == (4.0, 2.0)
        add_object(graph, 9, 3, (4.2, 2.0, 0.5), 4)  # Hydra perceives a chair there, in three snapshots over 2 s
        for sequence in (2, 3, 4):
            mirror.send(graph, sequence, stamp_s=T0 + 60.25 + sequence)
        markers.wait(lambda m: any(x.ns == NS_ADDED for x in m.markers)
                     and all(x.action == Marker.DELETE for x in m.markers if x.ns == NS_ADDED),
                     10.0, what="the addition's markers deleted")


def test_a_changes_request_out_of_bounds_is_answered_with_its_reason_and_the_node_goes_on(
    ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    """Issue 39 item 7: since_s NaN or beyond ±1e10, a limit over 10,000 and a room that is not one line are
    refused by name; a good request afterwards is answered."""
    with mirror_node(ros_domain_id, topic=TOPIC, db_uri=db_uri, graph_name=graph_name) as mirror:
        mirror.send(tiny_scene(), 1, stamp_s=T0)
        client = mirror.probe.create_client(Changes, "/changes")
        assert client.wait_for_service(timeout_sec=10.0)
        for request, reason in (
            (Changes.Request(since_s=float("nan")), "since_s must be a finite number"),
            (Changes.Request(since_s=-1e12), "since_s must be a finite number"),
            (Changes.Request(since_s=float(T0 - 1), limit=10_001), "at most 10,000 events"),
            (Changes.Request(since_s=float(T0 - 1), room="R1\nforged log line"), "room must be one line"),
        ):
            reply = call_service(client, request)
            assert reason in reply.error and reply.changes == [], (request, reply.error)
        good = call_service(client, Changes.Request(since_s=float(T0 - 1), limit=10_000))
    assert good.error == "" and [json.loads(t)["kind"] for t in good.changes] == ["appeared"] * len(good.changes)
