"""The diff read from the bytes equals the diff of the decoded graph, whatever Hydra's next snapshot did."""
from __future__ import annotations

import numpy as np
import spark_dsg as dsg
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from support.hydra_scene import hydra_scene
from support.scene_churn import draw_edit
from support.tiny_scene import node_id

from heracles_ros.mirror.payload_diff import AppliedPayload, payload_diff
from heracles_ros.mirror.scene_diff import SceneDiff, scene_diff
from heracles_ros.scene.payload_check import check_payload
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import SceneTables, extract_tables


def _decoded(payload: bytes) -> SceneTables:
    return extract_tables(dsg.DynamicSceneGraph.from_binary(payload))


def _sets(diff: SceneDiff) -> tuple[object, ...]:
    return (diff.added_nodes, set(diff.changed_nodes), diff.removed_nodes, diff.added_edges, diff.removed_edges)


def _assert_same_tables(kept: SceneTables, fresh: SceneTables) -> None:
    assert kept.nodes == fresh.nodes
    assert kept.edges == fresh.edges
    assert kept.relationships() == fresh.relationships()
    assert kept.features.keys() == fresh.features.keys()
    assert all(np.array_equal(kept.features[k], fresh.features[k]) for k in fresh.features)
    assert {k: sorted(v) for k, v in kept.parent_index().items()} == {
        k: sorted(v) for k, v in fresh.parent_index().items()}
    assert kept.rooms(fresh.nodes) == fresh.rooms(fresh.nodes)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_diff_of_the_bytes_is_the_diff_of_the_decoded_graph(data: st.DataObject) -> None:
    """Snapshot after snapshot, each compared with the one applied before it (the tables it left carried on,
    with their relationship count and parent index): the same diff and the same tables as decoding it whole,
    or no answer (then the whole decode is what the mirror uses)."""
    graph = hydra_scene()
    payload = graph.to_binary(include_mesh=False)
    baseline = _decoded(payload)
    baseline.parent_index()
    applied = AppliedPayload(payload, check_payload(payload))
    for _ in range(data.draw(st.integers(1, 5))):
        for _ in range(data.draw(st.integers(0, 3))):
            note(draw_edit(data, graph))
        payload = graph.to_binary(include_mesh=False)
        whole = _decoded(payload)
        expected = scene_diff(baseline, whole)
        fast = payload_diff(applied, baseline, payload)
        if fast is None:
            event("decoded whole")
            baseline, applied = whole, AppliedPayload(payload, check_payload(payload))
            continue
        assert _sets(fast.diff) == _sets(expected)
        assert {k: fast.diff.rows[k] for k in fast.diff.upserted_ids} == {k: whole.nodes[k] for k in
                                                                          expected.upserted_ids}
        _assert_same_tables(fast.tables, whole)
        event("from the bytes" if fast.diff.any else "from the bytes, nothing to write")
        baseline, applied = fast.tables, fast.applied


def _applied(graph: dsg.DynamicSceneGraph) -> tuple[AppliedPayload, SceneTables]:
    payload = graph.to_binary(include_mesh=False)
    return AppliedPayload(payload, check_payload(payload)), _decoded(payload)


def test_hydras_common_snapshots_are_read_from_the_bytes() -> None:
    """Update times only, moves, nodes gone and added, a frontier that became a place: all answered from the
    bytes (none left to the whole decode), identical bytes with nothing decoded at all."""
    graph = generate_scene("small", 0)
    applied, baseline = _applied(graph)
    same = payload_diff(applied, baseline, bytes(bytearray(applied.data)))
    assert same is not None and not same.diff.any and same.tables is baseline
    places = sorted(n.id.value for n in graph.get_layer(3, 1).nodes)
    for place in places[::9]:
        graph.get_node(place).attributes.last_update_time_ns = 99
    hydra_like = payload_diff(applied, baseline, graph.to_binary(include_mesh=False))
    assert hydra_like is not None and not hydra_like.diff.any and hydra_like.tables is baseline
    graph.get_node(places[3]).attributes.position = np.array([50.0, 50.0, 0.0])
    graph.remove_node(places[40])
    frontier = next(n.id.value for n in graph.get_layer(3).nodes if not n.attributes.real_place)
    graph.get_node(frontier).attributes.real_place = True
    changed = payload_diff(hydra_like.applied, baseline, graph.to_binary(include_mesh=False))
    assert changed is not None
    assert (changed.diff.changed_nodes, changed.diff.removed_nodes, changed.diff.added_nodes) == (
        [places[3]], {places[40]}, {frontier})
    assert any(frontier in (key >> 64, key & ((1 << 64) - 1)) for key in changed.diff.added_edges)
    _assert_same_tables(changed.tables, _decoded(graph.to_binary(include_mesh=False)))


def test_what_the_bytes_cannot_answer_is_decoded_whole() -> None:
    graph = hydra_scene()
    applied, baseline = _applied(graph)
    place = node_id("p0")
    position = graph.get_node(place).attributes.position
    graph.remove_node(place)
    mesh_place = dsg.Place2dNodeAttributes()
    mesh_place.position = position
    graph.add_node(3, place, mesh_place, 1)  # the same node in another layer
    assert payload_diff(applied, baseline, graph.to_binary(include_mesh=False)) is None
