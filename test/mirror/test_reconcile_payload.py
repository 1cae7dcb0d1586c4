"""Mirroring a snapshot's payload by comparing it with the one applied before leaves the database and the
history exactly as decoding every snapshot whole does (on both backends)."""
from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import astuple

import numpy as np
import spark_dsg as dsg
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from support.hydra_scene import hydra_scene
from support.mirror_checks import assert_mirrors, database_contents
from support.scene_churn import KINDS, draw_edit, edit

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.history import ChangeEvent, read_changes
from heracles_ros.mirror.loop import MirrorLoop, Snapshot
from heracles_ros.mirror.reconcile import Mirror, ReconcileReport
from heracles_ros.scene.io import SnapshotDecoder
from heracles_ros.scene.synthetic import generate_scene

CONTENTS = "MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN n.nodeSymbol AS s, n.name AS name, n.bbox_dim AS d"


@contextlib.contextmanager
def _graph(backend: object) -> Iterator[GraphStore]:
    name = f"test_{uuid.uuid4().hex[:12]}"
    backend.create(name)  # type: ignore[attr-defined]
    store: GraphStore = backend.open(name)  # type: ignore[attr-defined]
    try:
        yield store
    finally:
        store.close()
        backend.drop(name)  # type: ignore[attr-defined]


def _events(changes: list[ChangeEvent]) -> list[tuple[object, ...]]:
    return sorted(astuple(e) for e in changes)


def _counts(report: ReconcileReport) -> tuple[int, ...]:
    return (report.nodes_added, report.nodes_changed, report.nodes_removed, report.edges_added,
            report.edges_removed, report.nodes, report.edges, report.relationships)


def _extras(store: GraphStore) -> dict[str, tuple[object, object]]:
    """What database_contents leaves out: names, and boxes as numbers."""
    return {r["s"]: (r["name"], list(np.round(list(r["d"]), 6)) if r["d"] is not None else None)
            for r in store.query(CONTENTS)}


class _Pair:
    """One mirror comparing payloads, one decoding every snapshot whole, each on a graph of its own."""

    def __init__(self, compared: GraphStore, whole: GraphStore):
        self.stores = (compared, whole)
        self.compared, self.whole, self.decoder = Mirror(compared), Mirror(whole), SnapshotDecoder()
        self.step = 0

    def mirror(self, graph: dsg.DynamicSceneGraph) -> None:
        """Both mirror the graph's payload, and leave the same database, report and history events."""
        payload = graph.to_binary(include_mesh=False)
        stamp = 1_000_000.0 + self.step
        a = self.compared.reconcile_payload(payload, self.decoder, sequence=self.step, stamp_s=stamp, force=True)
        b = self.whole.reconcile(dsg.DynamicSceneGraph.from_binary(payload), sequence=self.step, stamp_s=stamp,
                                 force=True)
        self.step += 1
        compared, whole = self.stores
        assert _counts(a) == _counts(b)
        assert _events(a.changes) == _events(b.changes)
        assert database_contents(compared) == database_contents(whole)
        assert _extras(compared) == _extras(whole)

    def check_history(self, graph: dsg.DynamicSceneGraph) -> None:
        compared, whole = self.stores
        assert_mirrors(compared, graph)
        assert _events(read_changes(compared, since=0)) == _events(read_changes(whole, since=0))


def test_every_kind_of_edit_leaves_what_decoding_the_snapshot_whole_leaves(backend: object) -> None:
    with _graph(backend) as compared, _graph(backend) as whole:
        pair = _Pair(compared, whole)
        graph = hydra_scene()
        pair.mirror(graph)
        for kind in dict.fromkeys(KINDS):
            edit(graph, kind, lambda ids: ids[len(ids) // 2] if ids else None, 3.0, 1)
            pair.mirror(graph)
        pair.check_history(graph)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.data())
def test_the_payload_path_leaves_what_decoding_every_snapshot_whole_leaves(backend: object, data: st.DataObject
                                                                          ) -> None:
    """Random runs of edits, several per snapshot."""
    with _graph(backend) as compared, _graph(backend) as whole:
        pair = _Pair(compared, whole)
        graph = hydra_scene()
        for _ in range(data.draw(st.integers(2, 5))):
            for _ in range(data.draw(st.integers(0, 3))):
                note(draw_edit(data, graph))
            pair.mirror(graph)
        pair.check_history(graph)


def test_an_unchanged_snapshot_is_compared_not_decoded_and_a_gap_decodes_the_next_whole(store: GraphStore
                                                                                        ) -> None:
    """Hydra's next snapshot with only update times changed writes nothing and is never decoded whole; after
    a gap in the numbers the next one is (the comparison is the fast path, never the only one)."""
    decoded: list[int] = []

    class Counting(SnapshotDecoder):
        def decode(self, payload: bytes | bytearray | memoryview) -> dsg.DynamicSceneGraph:
            decoded.append(len(payload))
            return super().decode(payload)

    graph = generate_scene("small", 0)
    loop = MirrorLoop(Mirror(store))
    loop._decoder = Counting()
    loop.start()
    try:
        loop.submit(Snapshot(graph.to_binary(include_mesh=False), sequence=1))
        assert loop.wait_idle(10.0) and len(decoded) == 1
        for place in sorted(n.id.value for n in graph.get_layer(3, 1).nodes)[::5]:
            graph.get_node(place).attributes.last_update_time_ns = 42
        loop.submit(Snapshot(graph.to_binary(include_mesh=False), sequence=2))
        assert loop.wait_idle(10.0)
        assert len(decoded) == 1 and loop.state.nodes_changed == 0 and loop.state.last_error == ""
        loop.submit(Snapshot(graph.to_binary(include_mesh=False), sequence=4))  # 3 never arrived
        assert loop.wait_idle(10.0)
        assert len(decoded) == 2 and loop.state.snapshots_missed == 1
        loop.submit(Snapshot(graph.to_binary(include_mesh=False), sequence=5))
        assert loop.wait_idle(10.0) and len(decoded) == 2
    finally:
        loop.stop()
    assert loop.state.snapshots_applied == 4
    assert_mirrors(store, graph)
