"""``heracles bench as-of``: the scene as of a time at the kilometre-scale scene after an hour of churn.

One snapshot a second for ``--snapshots`` seconds (default 3600), each changing 1 % of all nodes as
``heracles bench mirror --history-snapshots`` does (a move of 1 m, a removal, a return), plus three objects
drifting 0.2 m (below the 0.5 m move threshold) and one relabelled, with the history's default retention.
Then ``scene --at`` (every object at T) is read ``--reads`` times at T = 10 s, 5 min, 15 min, 30 min before
the newest snapshot and at the objects' horizon (the earliest T answered exactly), and ``where`` for random
objects at random times in that range: median, p95 and slowest read. What was read is checked against the
objects of the snapshot current at T, kept by the benchmark itself (every 60th snapshot): presence and
class must match, positions within twice the move threshold.
"""
from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from heracles_ros.bench.mirror import _database, _fresh_graph
from heracles_ros.bench.scene_size import add_scale_argument, scene_name
from heracles_ros.errors import ConfigError, HeraclesError
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.as_of import NodeAt, OutOfRange, node_at, read_range, scene_at
from heracles_ros.mirror.history import HistorySettings
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.scene.tables import EdgeKey, NodeRow, SceneTables, extract_tables, symbol_of
from heracles_ros.schema import Layer

#: The issue's target for one as-of read of the whole scene.
TARGET_P95_MS = 200.0
#: Seconds before the newest snapshot at which the scene is read (those the history reaches).
AGES_S = (10, 300, 900, 1800)
#: Every this many snapshots the benchmark keeps the objects' truth to check the reads against.
TRUTH_EVERY = 60
_LOW64 = (1 << 64) - 1
#: An object's truth: class and position.
_Truth = dict[str, tuple[str, tuple[float, float, float]]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=("small", "large"), default="large",
                        help="synthetic scene (default: large, the kilometre-scale one)")
    parser.add_argument("--seed", type=int, default=0, help="scene and churn seed (default: 0)")
    add_scale_argument(parser)
    parser.add_argument("--snapshots", type=int, default=3600, metavar="N",
                        help="snapshots of churn, one a second (default: 3600, an hour)")
    parser.add_argument("--reads", type=int, default=20, metavar="N", help="reads at each time (default: 20)")
    parser.add_argument("--db", default=None, metavar="URI",
                        help="database to measure on (default: a throwaway embedded FalkorDB in a temp dir); "
                        "graphs named bench_* are created and dropped")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.snapshots < 1 or args.reads < 1:
        raise ConfigError(f"--snapshots and --reads must be >= 1, got {args.snapshots} and {args.reads}")
    from heracles_ros.scene.synthetic import generate_scene

    tables = extract_tables(generate_scene(args.kind, args.seed, scale=args.scale))
    figures: dict[str, Any] = {"scene": scene_name(args.kind, args.seed, args.scale), "nodes": len(tables.nodes),
                               "objects": sum(row[0] is Layer.OBJECT for row in tables.nodes.values())}
    with _database(args.db) as uri, _fresh_graph(uri) as store:
        mirror = Mirror(store, history=HistorySettings())
        churn = _Churn(tables, args.seed)
        started = time.perf_counter()
        truths = churn.run(mirror, args.snapshots)
        figures["churn_s"] = round(time.perf_counter() - started, 1)
        figures.update(_history_figures(store, mirror))
        figures.update(_read_figures(store, truths, args.reads, random.Random(args.seed)))
    return figures


class _Churn:
    """The benchmark's snapshots, changed in place: 1 % of the nodes a second, and drifts and relabels of
    objects; the edges of a removed node go with it and come back with it."""

    def __init__(self, tables: SceneTables, seed: int):
        self.tables = tables
        self.rng = random.Random(seed + 3)
        self.ids = sorted(tables.nodes)
        self.objects = [i for i in self.ids if tables.nodes[i][0] is Layer.OBJECT]
        self.classes = sorted({tables.nodes[i][1] for i in self.objects})
        self.removed: dict[int, NodeRow] = {}
        self.incident: dict[int, list[EdgeKey]] = {}
        for key in tables.edges:
            self.incident.setdefault(key >> 64, []).append(key)
            self.incident.setdefault(key & _LOW64, []).append(key)

    def run(self, mirror: Mirror, snapshots: int) -> dict[float, _Truth]:
        """Mirror the scene, then ``snapshots`` changed ones a second apart; the objects' truth every
        TRUTH_EVERY snapshots (and at the last), by snapshot time."""
        # Whole seconds: FalkorDB returns a double with 15 significant digits, so a fractional start could read
        # back later than the first snapshot's truth and leave that truth unchecked.
        start = float(int(time.time()) - snapshots - 1)
        truths: dict[float, _Truth] = {}
        for n in range(snapshots + 1):
            if n:
                self._step()
            mirror.reconcile(self.tables, sequence=n, force=True, stamp_s=start + n)
            if n % TRUTH_EVERY == 0 or n == snapshots:
                truths[start + n] = self._truth()
        return truths

    def _step(self) -> None:
        nodes = self.tables.nodes
        rows: dict[int, NodeRow | None] = {}
        for node in self.rng.sample(self.ids, max(1, round(0.01 * len(self.ids)))):
            row = nodes.get(node)
            if row is None:
                rows[node] = self.removed.pop(node)  # back where it was
            elif self.rng.random() < 0.25 and row[0] is not Layer.BUILDING:
                self.removed[node] = row
                rows[node] = None
            else:
                rows[node] = (*row[:3], row[3] + 1.0, *row[4:])
        there = {node for node, row in rows.items() if row is not None}
        gone = set(rows) - there
        removed = [key for node in gone for key in self.incident.get(node, ()) if key in self.tables.edges]
        added = [key for node in there - set(nodes) for key in self.incident.get(node, ())
                 if (other := self._other(key, node)) not in gone and (other in nodes or other in there)]
        present = [i for i in self.objects if i in nodes and i not in rows]
        for node in self.rng.sample(present, min(4, len(present))):
            row = nodes[node]
            rows[node] = (*row[:4], row[4] + 0.2, *row[5:])  # a drift below the threshold
        if present:
            node = self.rng.choice(present)
            row = rows.get(node) or nodes[node]
            assert row is not None
            rows[node] = (row[0], self.rng.choice([c for c in self.classes if c != row[1]] or self.classes),
                          *row[2:])
        self.tables = self.tables.changed(rows, {}, added, removed)

    @staticmethod
    def _other(key: EdgeKey, node: int) -> int:
        low, high = key >> 64, key & _LOW64
        return high if low == node else low

    def _truth(self) -> _Truth:
        return {symbol_of(i): (str(row[1]), (float(row[3]), float(row[4]), float(row[5])))
                for i, row in self.tables.nodes.items() if row[0] is Layer.OBJECT}


def _history_figures(store: GraphStore, mirror: Mirror) -> dict[str, Any]:
    size = mirror.history.size()
    history = read_range(store)
    if history is None:
        raise HeraclesError("the benchmark's history recorded nothing")
    return {
        "history_changes": size["changes"], "history_object_changes": size["object_changes"],
        "history_seen": size["seen"],
        "objects_horizon_s": round(history.newest_t - history.earliest(objects=True), 1),
        "places_horizon_s": round(history.newest_t - history.earliest(objects=False), 1),
    }


def _read_figures(store: GraphStore, truths: dict[float, _Truth], reads: int, rng: random.Random
                  ) -> dict[str, Any]:
    history = read_range(store)
    assert history is not None
    earliest, newest = history.earliest(objects=True), history.newest_t
    ats = {f"{age}s": newest - age for age in AGES_S if newest - age > earliest}
    ats["horizon"] = earliest
    figures: dict[str, Any] = {}
    everything: list[float] = []
    for name, at in ats.items():
        times = [_timed(partial(scene_at, store, at)) for _ in range(reads)]
        everything += times
        figures[f"scene_at_{name}_p50_ms"] = round(statistics.median(times), 1)
        figures[f"scene_at_{name}_max_ms"] = round(max(times), 1)
    figures["scene_at_p95_ms"] = round(_p95(everything), 1)
    symbols = sorted({symbol for truth in truths.values() for symbol in truth})
    where = [_timed(lambda: node_at(store, rng.choice(symbols), rng.uniform(earliest, newest)))
             for _ in range(reads * len(ats))]
    figures["where_p50_ms"] = round(statistics.median(where), 1)
    figures["where_p95_ms"] = round(_p95(where), 1)
    figures.update(_checked(store, truths, earliest))
    figures["target_p95_ms"] = TARGET_P95_MS
    figures["target_met"] = figures["scene_at_p95_ms"] <= TARGET_P95_MS
    return figures


def _checked(store: GraphStore, truths: dict[float, _Truth], earliest: float) -> dict[str, Any]:
    """Presence and class errors and the largest position error of the reads at the kept truths' times."""
    presence = classes = 0
    worst = 0.0
    checked = 0
    for at, truth in truths.items():
        if at < earliest:
            continue
        found = scene_at(store, at)
        if isinstance(found, OutOfRange):
            raise HeraclesError(f"the as-of read refused a time it should answer: {found.message}")
        checked += 1
        got: dict[str, NodeAt] = {node.symbol: node for node in found.objects}
        presence += len(set(got) ^ set(truth))
        for symbol in set(got) & set(truth):
            cls, position = truth[symbol]
            classes += got[symbol].cls != cls
            worst = max(worst, math.dist(got[symbol].position or position, position))
    return {"checked_times": checked, "presence_errors": presence, "class_errors": classes,
            "max_position_error_m": round(worst, 3)}


def _timed(read: Callable[[], object]) -> float:
    started = time.perf_counter()
    read()
    return 1000 * (time.perf_counter() - started)


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, math.ceil(0.95 * len(values)) - 1)]
