"""Readers see the scene before or after a reconcile, never between (issue 16's torn reads)."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.agent.tool import CypherTool
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.cypher import mirror as mirror_q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.mirror.snapshot_reads import DEFAULT_WAIT_S, read_stamp, read_whole
from heracles_ros.planning.planner import Planner
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import SceneTables, extract_tables
from heracles_ros.schema import Layer

#: One statement, so one consistent view on both backends: the snapshot the mirror says it
#: published last, and what the scene layers hold.
FINGERPRINT = (
    "MATCH (m:MirrorMeta {id: 'mirror'}) MATCH (h:HistoryClock) "
    "MATCH (n) WHERE n.nodeSymbol IS NOT NULL "
    "WITH m, h, count(n) AS nodes, sum(n.x) AS sx "
    "MATCH (a)-[e]->() WHERE a.nodeSymbol IS NOT NULL "
    "RETURN m.sequence AS seq, h.seq AS history_seq, nodes, sx, count(e) AS relationships"
)


def _snapshots(base: SceneTables, count: int) -> list[SceneTables]:
    """``count`` scenes, each ``base`` with a different 1 % of its nodes moved 1 m or (one in four) removed."""
    ids = sorted(base.nodes)
    low64 = (1 << 64) - 1
    scenes = []
    for k in range(count):
        rng = np.random.default_rng(k)
        nodes = dict(base.nodes)
        for n, index in enumerate(rng.choice(len(ids), size=max(1, len(ids) // 100), replace=False)):
            row = nodes[ids[index]]
            if n % 4 == 3 and row[0] is not Layer.BUILDING:
                del nodes[ids[index]]
            else:
                nodes[ids[index]] = (*row[:3], row[3] + 1.0, *row[4:])
        edges = {key for key in base.edges if key >> 64 in nodes and key & low64 in nodes}
        scenes.append(SceneTables(nodes=nodes, edges=edges))
    return scenes


def _expected(scene: SceneTables) -> tuple[int, float, int]:
    return len(scene.nodes), sum(row[3] for row in scene.nodes.values()), scene.relationships()


def test_a_reader_during_100_reconciles_never_sees_a_mix(tmp_path: Path) -> None:
    """The model's read path (the replica, through the Cypher tool) while the mirror writes 1 % changes."""
    base = extract_tables(generate_scene("large", 3, scale=0.1))
    scenes = _snapshots(base, 100)
    expected = [_expected(scene) for scene in scenes]
    server = EmbeddedServer(tmp_path)
    primary = open_store(f"embedded:{tmp_path}", timeout_s=60)
    replica = open_store(f"embedded:{tmp_path}", read_replica=True, timeout_s=60)
    mirror = Mirror(primary)
    try:
        mirror.reconcile(scenes[0], sequence=0, stamp_s=1000.0)
        tool = CypherTool(replica, token_budget=400)
        stop = threading.Event()
        failures: list[BaseException] = []

        def write() -> None:
            try:
                for k in range(1, len(scenes)):
                    report = mirror.reconcile(scenes[k], sequence=k, stamp_s=1000.0 + k, force=True)
                    assert report.writes > 0
                    time.sleep(0.05)  # Hydra sends about one snapshot a second; leave readers a gap
            except BaseException as exc:  # reported by the test's thread
                failures.append(exc)
            finally:
                stop.set()

        writer = threading.Thread(target=write)
        writer.start()
        seen: list[dict[str, Any]] = []
        while not stop.is_set() or len(seen) < 20:
            output = tool.run(FINGERPRINT)
            assert not output.error, output.text
            assert "note:" not in output.text, output.text  # never "may mix two snapshots"
            seen.extend(json.loads(output.text))
        writer.join()
        assert not failures, failures
    finally:
        replica.close()
        primary.close()
        server.stop()
    for row in seen:
        seq = row["seq"]
        nodes, sx, relationships = expected[seq]
        assert row["history_seq"] == seq, row  # the history written for the same snapshot as the scene
        assert (row["nodes"], row["relationships"]) == (nodes, relationships), (row, expected[seq])
        assert row["sx"] == pytest.approx(sx, abs=0.01), (row, sx)
    assert len({row["seq"] for row in seen}) >= 5  # the reads spanned the reconciles (8 to 40 seen, by load)


def test_a_read_overlapped_by_a_reconcile_runs_again(store: GraphStore) -> None:
    base = extract_tables(generate_scene("small", 0))
    first, second = _snapshots(base, 2)
    mirror = Mirror(store)
    mirror.reconcile(first, sequence=1)
    calls: list[int] = []

    def read() -> int:
        count = int(store.query("MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN count(n) AS n")[0]["n"])
        if not calls:
            mirror.reconcile(second, sequence=2)  # lands between this read and the stamp after it
        calls.append(count)
        return count

    result = read_whole(store, read)
    assert result.whole and result.attempts == 2
    assert calls == [len(first.nodes), len(second.nodes)]
    assert result.value == len(second.nodes)


def test_a_reconcile_in_progress_holds_readers_back_until_it_ends(store: GraphStore) -> None:
    Mirror(store).reconcile(extract_tables(generate_scene("small", 0)), sequence=1)
    generation = read_stamp(store).generation
    store.write(mirror_q.BEGIN_UPDATE)  # a mirror between its first and last statement
    assert read_stamp(store).writing

    started = time.monotonic()
    stuck = read_whole(store, lambda: "read", wait_s=0.3)
    assert not stuck.whole and stuck.value == "read" and time.monotonic() - started >= 0.3
    assert stuck.attempts == 1  # read once, at the deadline: never while the writer was seen at work

    # The reader looks again every POLL_MAX_S at most, from its first pause on: it is back soon after the
    # reconcile ends, whether that is soon or after a while, not a backoff's second later.
    for sequence, busy_s in ((2, 0.2), (3, 1.3)):
        store.write(mirror_q.BEGIN_UPDATE)
        bumped_at: list[float] = []

        def finish(sequence: int = sequence, busy_s: float = busy_s, bumped_at: list[float] = bumped_at) -> None:
            time.sleep(busy_s)
            store.write(mirror_q.BUMP_GENERATION, {"sequence": sequence, "now": 0.0})
            bumped_at.append(time.monotonic())

        finisher = threading.Thread(target=finish)
        finisher.start()
        waited = read_whole(store, lambda: read_stamp(store).generation, wait_s=10)
        returned_at = time.monotonic()
        finisher.join()
        assert waited.whole and waited.value == generation + sequence - 1
        assert returned_at - bumped_at[0] < 0.5, f"back {returned_at - bumped_at[0]:.2f} s after a {busy_s} s reconcile"


def test_the_tool_says_when_rows_may_mix_two_snapshots(small_store: GraphStore) -> None:
    small_store.write(mirror_q.BEGIN_UPDATE)  # a mirror that died between its statements
    output = CypherTool(small_store, snapshot_wait_s=0.1).run("MATCH (o:Object) RETURN count(o) AS n")
    assert not output.error
    assert "may mix" in output.text and output.rows == 1


def test_the_planner_waits_for_a_mirror_update_only_as_long_as_it_is_told(small_store: GraphStore) -> None:
    small_store.write(mirror_q.BEGIN_UPDATE)  # a mirror stopped between its first and last statement
    planner = Planner(small_store, snapshot_wait_s=0.2)
    started = time.monotonic()
    graph = planner.place_graph()  # the first read waits its bound for the reconcile, then takes what it read
    assert 0.2 <= time.monotonic() - started < DEFAULT_WAIT_S and graph.index
    started = time.monotonic()
    assert planner.place_graph() is graph  # with a graph cached, a plan never waits for a reconcile
    assert time.monotonic() - started < 0.2


def test_an_empty_database_reads_at_once(store: GraphStore) -> None:
    result = read_whole(store, lambda: 7)
    assert (result.value, result.whole, result.attempts) == (7, True, 1)


# -- the guard, by construction: a reconcile stopped between two of its statements ---------------------

#: Nodes and sum of x in one statement: each statement is atomic for readers, so a mix shows in it.
NODES_AND_X = "MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN count(n) AS nodes, sum(n.x) AS sx"


def _fingerprint(store: GraphStore) -> tuple[int, float]:
    [row] = store.query(NODES_AND_X)
    return int(row["nodes"]), round(float(row["sx"]), 6)


class PausedReconcile:
    """A mirror reconcile that stops after its deletions, before its first node upsert, until a reader waits.

    The diff goes statement by statement (``atomic_rows=0``), through ``write_batches``, which this
    wraps on the store instance; it is let go once a reader has looked at the snapshot stamp twice
    while it was stopped (so a guarded reader is known to be waiting, an unguarded one to have read).
    """

    def __init__(self, store: GraphStore, monkeypatch: pytest.MonkeyPatch, scene: Any) -> None:
        self.store = store
        self.paused = threading.Event()
        self.release = threading.Event()
        self.stamp_reads = 0
        self.mirror = Mirror(store, atomic_rows=0)
        self.scene = scene
        self.failures: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="paused-reconcile")
        write_many, query = store.write_many, store.query

        def write_batches(batches: Any, *, timeout_s: float | None = None) -> None:
            for batch in batches:
                if not self.paused.is_set() and any(" MERGE (n:" in cypher for cypher, _ in batch):
                    self.paused.set()
                    assert self.release.wait(20), "no reader looked at the stamp while the reconcile was stopped"
                write_many(batch, timeout_s=timeout_s)

        def counting_query(cypher: str, params: Any = None, **kwargs: Any) -> Any:
            if cypher == mirror_q.READ_STAMP and self.paused.is_set() and not self.release.is_set():
                self.stamp_reads += 1
                if self.stamp_reads >= 2:
                    self.release.set()
            return query(cypher, params, **kwargs)

        monkeypatch.setattr(store, "write_batches", write_batches)
        monkeypatch.setattr(store, "query", counting_query)

    def _run(self) -> None:
        try:
            self.mirror.reconcile(self.scene, sequence=2)
        except BaseException as exc:  # reported by the test's thread
            self.failures.append(exc)

    def start_and_wait_stopped(self) -> None:
        self.thread.start()
        assert self.paused.wait(20), "the reconcile never reached its first node upsert"

    def join(self) -> None:
        self.release.set()  # never leave the writer waiting, whatever the reader did
        self.thread.join(30)
        assert not self.thread.is_alive() and not self.failures, self.failures


def _two_snapshots() -> tuple[Any, Any]:
    """The tiny scene, and it again with O3 gone and O0 one metre further in x."""
    first, second = tiny_scene(), tiny_scene()
    second.remove_node(node_id("O3"))
    second.get_node(node_id("O0")).attributes.position = [1.0, 1.0, 0.5]
    return first, second


def test_a_read_while_a_reconcile_is_stopped_halfway_waits_for_its_end(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _two_snapshots()
    Mirror(store).reconcile(first, sequence=1)
    before = _fingerprint(store)
    writer = PausedReconcile(store, monkeypatch, second)
    try:
        writer.start_and_wait_stopped()
        assert _fingerprint(store) == (before[0] - 1, before[1] - 5.0)  # the half-applied state is there to see
        result = read_whole(store, lambda: _fingerprint(store), wait_s=20)
    finally:
        writer.join()
    after = _fingerprint(store)
    assert after == (before[0] - 1, before[1] - 4.0)
    assert result.whole and result.value == after, (result, before, after)


def test_a_reconcile_that_starts_inside_a_read_makes_it_run_again(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read's two statements straddle the start of a reconcile stopped halfway; the stamp after says so."""
    first, second = _two_snapshots()
    Mirror(store).reconcile(first, sequence=1)
    writer = PausedReconcile(store, monkeypatch, second)
    seen: list[tuple[int, float]] = []

    def read() -> tuple[int, float]:
        [row] = store.query("MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN count(n) AS nodes")
        if not seen:
            writer.start_and_wait_stopped()
        [x] = store.query("MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN sum(n.x) AS sx")
        seen.append((int(row["nodes"]), round(float(x["sx"]), 6)))
        return seen[-1]

    try:
        result = read_whole(store, read, wait_s=20)
    finally:
        writer.join()
    after = _fingerprint(store)
    assert seen[0] != after and seen[0][0] == after[0] + 1  # the first try saw the old count, the new x
    assert result.whole and result.attempts == 2 and result.value == after, (result, seen, after)
