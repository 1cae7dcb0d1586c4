"""The dsg_mirror draws what it mirrored on ``scene_markers``, over real DDS and a real database.

The oracle is the scene graph sent (spark_dsg attributes and labelspaces), not the marker code.
"""
from __future__ import annotations

from typing import Any

import pytest
from support.mirror_node import mirror_node
from support.ros import Collector, qos, wait_until
from support.tiny_scene import OBJECT_CLASSES, ROOM_CLASSES, node_id, tiny_scene
from visualization_msgs.msg import Marker, MarkerArray

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Corrections

pytestmark = pytest.mark.backends("falkordb")

TOPIC = "/test/dsg_scene_markers"
ROOMS, PLACES, OBJECTS = "heracles/scene/rooms", "heracles/scene/places", "heracles/scene/objects"


def _position(graph: Any, symbol: str) -> tuple[float, float, float]:
    x, y, z = graph.get_node(node_id(symbol)).attributes.position
    return (float(x), float(y), float(z))


def _class(graph: Any, symbol: str, classes: list[list[Any]]) -> str:
    return str(dict(classes)[graph.get_node(node_id(symbol)).attributes.semantic_label])


def _added(array: MarkerArray, ns: str) -> dict[int, Marker]:
    return {m.id: m for m in array.markers if m.ns == ns and m.action == Marker.ADD}


def _at(marker: Marker) -> tuple[float, float, float]:
    return (marker.pose.position.x, marker.pose.position.y, marker.pose.position.z)


def test_the_mirrored_scene_is_drawn_and_what_is_removed_is_deleted(
    ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    graph = tiny_scene()
    with mirror_node(ros_domain_id, topic=TOPIC, db_uri=db_uri, graph_name=graph_name, scene_markers_period_s=0.2,
                     marker_frame="map_b") as mirror:
        probe = mirror.probe
        scene: Collector[MarkerArray] = Collector(probe, MarkerArray, "/scene_markers", qos(1, transient_local=True))
        history: Collector[MarkerArray] = Collector(probe, MarkerArray, "/history_markers", qos(1))
        wait_until(lambda: mirror.node.count_subscribers("/history_markers") >= 1, 10.0, "the markers' subscriber")
        mirror.send(graph, 1, stamp_s=1_700_000_001)
        first = scene.wait(lambda a: _added(a, OBJECTS), 10.0, what="the scene's markers")

        # A console started later gets the whole scene (latched).
        late: Collector[MarkerArray] = Collector(probe, MarkerArray, "/scene_markers",
                                                 qos(1, transient_local=True))
        late_first = late.wait(lambda a: True, 10.0, what="the scene for a late subscriber")

        # The operator adds a chair; the next snapshot lacks O3.
        Corrections(store).propose([], [{"add": "chair", "at": [2.0, 2.0, 0.5], "near": "O2"}])
        graph.remove_node(node_id("O3"))
        after = scene.count
        mirror.send(graph, 2, stamp_s=1_700_000_002)
        second = scene.wait(lambda a: True, 10.0, after=after, what="the scene after O3 went")
        drawn_added = history.wait(lambda a: any(m.ns == "heracles/added" and m.action == Marker.ADD
                                                 for m in a.markers), 10.0, what="the addition drawn")

    assert {m.header.frame_id for m in first.markers} == {"map_b"}
    # Counts per namespace: two rooms and five objects, two markers each; mesh places and their connections.
    assert [len(_added(first, ns)) for ns in (ROOMS, PLACES, OBJECTS)] == [4, 2, 10]
    rooms = _added(first, ROOMS)
    for index in (0, 1):
        symbol = f"R{index}"
        assert (rooms[2 * index].type, _at(rooms[2 * index])) == (Marker.CYLINDER, _position(graph, symbol))
        assert rooms[2 * index + 1].text == _class(graph, symbol, ROOM_CLASSES)
    places = _added(first, PLACES)
    assert places[0].type == Marker.POINTS
    assert {(p.x, p.y, p.z) for p in places[0].points} == {_position(graph, f"P{i}") for i in range(6)}
    assert places[1].type == Marker.LINE_LIST
    lines = {frozenset({(a.x, a.y, a.z), (b.x, b.y, b.z)}) for a, b in zip(places[1].points[::2],
                                                                          places[1].points[1::2], strict=True)}
    assert lines == {frozenset({_position(graph, f"P{i}"), _position(graph, f"P{i + 1}")}) for i in range(5)}
    objects = _added(first, OBJECTS)
    for index in (0, 2, 4):
        symbol = f"O{index}"
        cube, label = objects[2 * index], objects[2 * index + 1]
        assert (cube.type, _at(cube)) == (Marker.CUBE, _position(graph, symbol))
        assert label.text == _class(graph, symbol, OBJECT_CLASSES)
    o3 = tiny_scene()  # O3 is a box, as O0: the same class, the same colour; a bag another
    assert _class(o3, "O3", OBJECT_CLASSES) == _class(o3, "O0", OBJECT_CLASSES) == "box"
    assert objects[6].color == objects[0].color != objects[2].color
    assert _at(objects[6]) == _position(o3, "O3")

    assert [m for m in late_first.markers if m.action == Marker.ADD] == [m for m in first.markers
                                                                         if m.action == Marker.ADD]

    # O3's markers are deleted; the rest stays, and the operator's chair is not drawn as a perceived object.
    deleted = {(m.ns, m.id) for m in second.markers if m.action == Marker.DELETE}
    assert deleted == {(OBJECTS, 6), (OBJECTS, 7)}
    assert sorted(_added(second, OBJECTS)) == [0, 1, 2, 3, 4, 5, 8, 9]
    assert all(m.text != "chair" or m.id == 9 for m in _added(second, OBJECTS).values())  # O4 is the one chair
    # It is drawn in its own style on the history markers: a translucent magenta cube where it was added.
    cube = next(m for m in drawn_added.markers if m.ns == "heracles/added" and m.type == Marker.CUBE)
    assert _at(cube) == (2.0, 2.0, 0.5)
    assert (cube.color.r, cube.color.g, cube.color.b) == pytest.approx((0.9, 0.2, 0.9))
    assert all(_at(m) != (2.0, 2.0, 0.5) for m in second.markers if m.ns == OBJECTS)
