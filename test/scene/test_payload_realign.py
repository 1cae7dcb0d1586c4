"""A payload whose records were added or removed is checked against the last one by walking only what differs:
the layout it finds is the whole walk's, and what the bytes cannot answer is left to the whole walk."""
from __future__ import annotations

import numpy as np
import spark_dsg as dsg
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from support.hydra_scene import hydra_scene
from support.scene_churn import draw_edit

from heracles_ros.scene.payload_check import PayloadLayout, check_payload
from heracles_ros.scene.payload_realign import check_shifted
from heracles_ros.scene.payload_records import record_id, record_ids
from heracles_ros.scene.synthetic import generate_scene


def _checked(graph: dsg.DynamicSceneGraph) -> tuple[bytes, PayloadLayout]:
    payload = bytes(graph.to_binary(include_mesh=False))
    return payload, check_payload(payload)


def _records(payload: bytes, layout: PayloadLayout) -> dict[int, bytes]:
    ends = [*layout.node_starts[1:], layout.nodes_end]
    return {record_id(payload, layout, k): payload[s:e] for k, (s, e) in enumerate(zip(layout.node_starts, ends,
                                                                                       strict=True))}


def test_records_added_removed_and_changed_are_found_with_the_whole_walks_layout() -> None:
    graph = generate_scene("large", 0, scale=0.05)
    before, layout = _checked(graph)
    places = sorted(n.id.value for n in graph.get_layer(3, 1).nodes)
    for gone in places[5::50]:
        graph.remove_node(gone)
    moved = places[7::50]
    for node in moved:
        attrs = graph.get_node(node).attributes
        attrs.position = attrs.position + np.array([1.0, 0.0, 0.0])
    place = dsg.Place2dNodeAttributes()
    place.position = np.array([1.0, 2.0, 0.0])
    graph.add_node(3, dsg.NodeSymbol("P", 900_000).value, place, 1)  # after every old record
    thing = dsg.ObjectNodeAttributes()
    thing.position = np.array([1.0, 2.0, 0.5])
    graph.add_node(2, dsg.NodeSymbol("O", 900_000).value, thing)  # between the objects and the places
    data, whole = _checked(graph)
    found = check_shifted(data, before, layout, record_ids(before, layout))
    assert found is not None
    assert found.layout == whole
    old, now = _records(before, layout), _records(data, whole)
    assert sorted(found.removed) == sorted(set(old) - set(now)) and len(found.removed) == len(places[5::50])
    assert {record_id(data, whole, k) for k in found.added} == set(now) - set(old)
    assert {record_id(data, whole, k) for k in found.differing} == {
        node for node in set(old) & set(now) if old[node] != now[node]} == set(moved)
    assert found.same_tail is False  # the removed places' edges went


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_whatever_changed_the_answer_is_the_whole_walks_or_none(data: st.DataObject) -> None:
    graph = hydra_scene()
    before, layout = _checked(graph)
    for _ in range(data.draw(st.integers(1, 4))):
        note(draw_edit(data, graph))
    payload, whole = _checked(graph)
    found = check_shifted(payload, before, layout, record_ids(before, layout))
    if found is None:
        event("left to the whole walk")
        return
    event("realigned")
    assert found.layout == whole
    old, now = _records(before, layout), _records(payload, whole)
    assert set(found.removed) == set(old) - set(now)
    assert {record_id(payload, whole, k) for k in found.added} == set(now) - set(old)
    assert {record_id(payload, whole, k) for k in found.differing} == {
        node for node in set(old) & set(now) if old[node] != now[node]}
    assert found.same_tail == (payload[whole.nodes_end:] == before[layout.nodes_end:])


def test_what_the_bytes_cannot_answer_is_left_to_the_whole_walk() -> None:
    graph = generate_scene("small", 0)
    before, layout = _checked(graph)
    ids = record_ids(before, layout)
    places = sorted(n.id.value for n in graph.get_layer(3, 1).nodes)
    graph.remove_node(places[2])
    data, whole = _checked(graph)
    assert check_shifted(data, before, layout, ids) is not None
    # A record that no longer reads as one: the whole walk refuses it and names the field.
    broken = bytearray(data)
    broken[whole.node_starts[4] + 1] ^= 0xFF
    assert check_shifted(bytes(broken), before, layout, ids) is None
    # Another header (a labelspace): every record may read otherwise.
    graph.metadata.add({"labelspaces": {"_l2p0": [[0, "something else"]]}})
    relabelled, _ = _checked(graph)
    assert check_shifted(relabelled, before, layout, ids) is None
