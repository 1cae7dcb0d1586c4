"""The mirror's worker loop on a real database: newest snapshot wins, failures reported, retries."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import spark_dsg as dsg
from support.mirror_checks import assert_mirrors, database_contents
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.graphdb.falkordb_store import FalkorStore
from heracles_ros.mirror.loop import MirrorLoop, MirrorState, Snapshot
from heracles_ros.mirror.reconcile import Mirror


def payload(graph: dsg.DynamicSceneGraph) -> bytes:
    return bytes(graph.to_binary(include_mesh=False))


def without(*symbols: str) -> dsg.DynamicSceneGraph:
    graph = tiny_scene()
    for symbol in symbols:
        graph.remove_node(node_id(symbol))
    return graph


def test_only_the_newest_waiting_snapshot_is_applied(store: FalkorStore) -> None:
    states: list[MirrorState] = []
    loop = MirrorLoop(Mirror(store), on_state=states.append)
    # Three snapshots arrive while the worker is busy (not started yet): two are superseded.
    for sequence, graph in enumerate([tiny_scene(), without("O0"), without("O0", "O1")], start=1):
        loop.submit(Snapshot(payload(graph), sequence=sequence))
    loop.start()
    try:
        assert loop.wait_idle(10.0)
    finally:
        loop.stop()
    state = loop.state
    assert (state.snapshots_received, state.snapshots_dropped, state.snapshots_applied) == (3, 2, 1)
    assert (state.sequence, state.nodes, state.last_error) == (3, 12, "")
    assert [s.sequence for s in states] == [3]  # one status per piece of work handled
    assert_mirrors(store, without("O0", "O1"))


def test_rejected_snapshots_leave_the_database_alone(store: FalkorStore) -> None:
    loop = MirrorLoop(Mirror(store, suspect_min_nodes=5))
    loop.start()
    try:
        loop.submit(Snapshot(payload(tiny_scene()), sequence=1))
        assert loop.wait_idle(10.0)
        before = database_contents(store)
        loop.submit(Snapshot(payload(without("O0")), sequence=2, full_update=False))
        assert loop.wait_idle(10.0)
        assert "full_update=false" in loop.state.last_error and loop.state.sequence == 2
        loop.submit(Snapshot(b"\x00\x01garbage", sequence=3))
        assert loop.wait_idle(10.0)
        assert "is not a spark_dsg graph" in loop.state.last_error
        loop.submit(Snapshot(payload(dsg.DynamicSceneGraph()), sequence=4))
        assert loop.wait_idle(10.0)
        assert loop.state.suspect_held and "held back" in loop.state.last_error
        assert database_contents(store) == before
        loop.submit(Snapshot(payload(without("O4")), sequence=5))
        assert loop.wait_idle(10.0)
        assert (loop.state.last_error, loop.state.suspect_held, loop.state.snapshots_applied) == ("", False, 2)
        assert_mirrors(store, without("O4"))
    finally:
        loop.stop()


def test_database_down_keeps_the_newest_snapshot_and_retries(store: FalkorStore, graph_name: str) -> None:
    dead = FalkorStore("127.0.0.1", 9, graph=graph_name, timeout_s=1.0)
    mirror = Mirror(dead)
    reconnects: list[int] = []
    failed = threading.Event()

    def reconnect() -> None:
        reconnects.append(1)
        if failed.is_set():
            mirror.use_store(store)  # the server is reachable again

    def on_state(state: MirrorState) -> None:
        if "database unavailable" in state.last_error:
            failed.set()

    loop = MirrorLoop(mirror, on_state=on_state, retry_period_s=0.05, reconnect=reconnect)
    loop.submit(Snapshot(payload(tiny_scene()), sequence=1))
    loop.start()
    try:
        assert failed.wait(10.0)
        loop.submit(Snapshot(payload(without("O2")), sequence=2))  # supersedes the one waiting for a retry
        assert loop.wait_idle(10.0)
    finally:
        loop.stop()
    assert reconnects and loop.state.last_error == "" and loop.state.sequence == 2
    assert loop.state.snapshots_applied == 1
    assert_mirrors(store, without("O2"))


def test_scene_file_in_the_worker_and_a_failing_status_callback(store: FalkorStore, tmp_path: Path) -> None:
    path = tmp_path / "scene.json"
    tiny_scene().save(str(path))

    def broken(state: MirrorState) -> None:
        raise RuntimeError("publisher gone")

    loop = MirrorLoop(Mirror(store), on_state=broken)
    loop.start()
    try:
        loop.submit_file(tmp_path / "missing.json")
        assert loop.wait_idle(10.0)
        assert "missing.json does not exist" in loop.state.last_error
        loop.submit_file(path)
        assert loop.wait_idle(10.0)
        assert loop.state.last_error == "" and loop.state.nodes == 14
    finally:
        loop.stop()
    assert_mirrors(store, tiny_scene())


def test_a_snapshot_with_a_non_finite_value_is_skipped_and_reported(store: FalkorStore) -> None:
    loop = MirrorLoop(Mirror(store))
    loop.start()
    try:
        loop.submit(Snapshot(payload(tiny_scene()), sequence=1))
        assert loop.wait_idle(10.0)
        before = database_contents(store)
        broken = without("O4")
        attrs = broken.get_node(node_id("O1")).attributes
        box = attrs.bounding_box
        box.world_P_center = np.array([np.nan, 0.0, 0.0])
        attrs.bounding_box = box
        loop.submit(Snapshot(payload(broken), sequence=2))
        assert loop.wait_idle(10.0)
        assert "O1 has a non-finite bounding box" in loop.state.last_error and loop.state.sequence == 2
        assert database_contents(store) == before
        # The next good snapshot goes through: one bad value does not poison the ones after it.
        loop.submit(Snapshot(payload(without("O4")), sequence=3))
        assert loop.wait_idle(10.0)
        assert (loop.state.last_error, loop.state.snapshots_applied) == ("", 2)
        assert_mirrors(store, without("O4"))
    finally:
        loop.stop()


def test_a_reconcile_report_sets_every_state_field_it_shares_by_name() -> None:
    """The loop's state after a reconcile takes every count the report and the state share."""
    from dataclasses import fields

    from heracles_ros.mirror.loop import REPORTED_FIELDS, MirrorState, report_counts
    from heracles_ros.mirror.reconcile import ReconcileReport

    shared = {f.name for f in fields(ReconcileReport)} & {f.name for f in fields(MirrorState)}
    assert set(REPORTED_FIELDS) == shared
    report = ReconcileReport(nodes_added=1, nodes_changed=2, nodes_removed=3, edges_added=4, edges_removed=5,
                             nodes=6, edges=7, corrections_retired=["O1"])
    state = MirrorState(**report_counts(report))  # type: ignore[arg-type]
    assert (state.nodes_added, state.nodes_changed, state.nodes_removed, state.edges_added, state.edges_removed,
            state.nodes, state.edges, state.corrections_retired) == (1, 2, 3, 4, 5, 6, 7, ("O1",))


def test_a_gap_in_sequence_numbers_is_reported_and_the_next_snapshot_repairs_it(store: FalkorStore) -> None:
    """1, 2, 5, 4, 6: snapshots 3 and 4 are missed when 5 arrives, 4 comes late (older than what is
    mirrored: not applied), 6 goes on; each is a full graph, so the database equals the newest applied."""
    scenes = {1: tiny_scene(), 2: without("O0"), 4: without("O3"), 5: without("O1"), 6: without("O1", "O2")}
    states: list[MirrorState] = []
    loop = MirrorLoop(Mirror(store), on_state=states.append)
    loop.start()
    try:
        for sequence in (1, 2, 5, 4):
            loop.submit(Snapshot(payload(scenes[sequence]), sequence=sequence))
            assert loop.wait_idle(10.0)
        state = loop.state
        assert (state.snapshots_missed, state.snapshots_late, state.gaps_detectable) == (2, 1, True)
        assert "4 arrived after 5" in state.last_gap and state.last_error == ""
        assert any("3..4 never arrived" in s.last_gap for s in states)
        assert_mirrors(store, scenes[5])  # not the late 4
        loop.submit(Snapshot(payload(scenes[6]), sequence=6))
        assert loop.wait_idle(10.0)
    finally:
        loop.stop()
    state = loop.state
    assert (state.sequence, state.snapshots_received, state.snapshots_applied) == (6, 5, 4)
    assert (state.snapshots_missed, state.snapshots_late) == (2, 1)
    assert_mirrors(store, scenes[6])


def test_unnumbered_snapshots_never_report_a_gap(store: FalkorStore) -> None:
    """Hydra-ROS on ROS 2 leaves sequence_number at 0: every snapshot is applied, no gap is claimed."""
    loop = MirrorLoop(Mirror(store))
    loop.start()
    try:
        for graph in (tiny_scene(), without("O0"), without("O0", "O1")):
            loop.submit(Snapshot(payload(graph), sequence=0))
            assert loop.wait_idle(10.0)
    finally:
        loop.stop()
    state = loop.state
    assert (state.snapshots_applied, state.snapshots_missed, state.snapshots_late) == (3, 0, 0)
    assert (state.gaps_detectable, state.last_gap) == (False, "")
    assert_mirrors(store, without("O0", "O1"))
