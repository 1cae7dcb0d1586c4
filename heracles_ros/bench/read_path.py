"""``heracles bench read-path``: do expensive model queries on the read replica leave the mirror alone?

On a throwaway embedded database holding the kilometre-scale scene (``--scale`` F: times F), four
threads each run ``MATCH (a),(b),(c) RETURN count(*)`` (the server stops each at
its time limit) through the read path the language layer uses; meanwhile the
mirror reconciles snapshots with one node moved on the primary, and trivial
reads run on the primary and on the replica. ``--compare`` repeats the load on
the primary itself, the set-up before the replica existed.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import spark_dsg as dsg

from heracles_ros.bench.scene_size import add_scale_argument, scene_name
from heracles_ros.embedded.replica import REPLICA_MODULE_ARGS
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.errors import HeraclesError
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.replica_store import open_read_store
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror

CARTESIAN = "MATCH (a),(b),(c) RETURN count(*) AS n"
TRIVIAL = "MATCH (r:Room) RETURN count(r) AS n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scale_argument(parser)
    parser.add_argument("--expensive", type=int, default=4, help="concurrent cartesian-product queries (default 4)")
    parser.add_argument("--seconds", type=float, default=8.0, help="how long the trivial work is measured")
    parser.add_argument("--compare", action="store_true",
                        help="also run the expensive queries on the primary (no isolation), for contrast")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from heracles_ros.scene.synthetic import generate_scene

    scene = generate_scene("large", 0, scale=args.scale)
    figures: dict[str, Any] = {"scene": scene_name("large", 0, args.scale),
                               "replica_limits": " ".join(REPLICA_MODULE_ARGS), "expensive_queries": args.expensive}
    with tempfile.TemporaryDirectory(prefix="heracles-bench-read-") as tmp:
        server = EmbeddedServer(Path(tmp))
        try:
            uri = f"embedded:{tmp}"
            with open_store(uri, timeout_s=120.0) as store:
                mirror = Mirror(store)
                mirror.reconcile(scene)
                figures["nodes"] = int(store.query("MATCH (n) RETURN count(n) AS n")[0]["n"])
                read = open_read_store(Path(tmp))
                figures.update(_prefixed("idle", _trivial_work(mirror, scene, store, read, args.seconds / 2)))
                figures.update(_prefixed("replica_loaded", _under_load(
                    lambda: open_read_store(Path(tmp)), mirror, scene, store, read, args)))
                if args.compare:
                    figures.update(_prefixed("primary_loaded", _under_load(
                        lambda: open_store(uri), mirror, scene, store, read, args)))
                figures["primary_pid_unchanged"] = server.running() is not None
                read.close()
        finally:
            server.stop()
    return figures


def _under_load(open_expensive: Callable[[], GraphStore], mirror: Mirror, scene: dsg.DynamicSceneGraph,
                store: GraphStore, read: GraphStore, args: argparse.Namespace) -> dict[str, Any]:
    outcomes: list[str] = []
    expensive = [open_expensive() for _ in range(args.expensive)]

    def hog(target: GraphStore) -> None:
        started = time.perf_counter()
        try:
            target.query(CARTESIAN)  # the store's (the tool's) 10 s limit
            outcomes.append(f"finished in {time.perf_counter() - started:.1f} s")
        except HeraclesError as exc:
            outcomes.append(f"{type(exc).__name__} after {time.perf_counter() - started:.1f} s")

    threads = [threading.Thread(target=hog, args=(target,), daemon=True) for target in expensive]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # all four running
    figures = _trivial_work(mirror, scene, store, read, args.seconds)
    for thread in threads:
        thread.join(120)
    for target in expensive:
        target.close()
    figures["expensive_outcomes"] = "; ".join(sorted(outcomes))
    return figures


def _trivial_work(mirror: Mirror, scene: dsg.DynamicSceneGraph, store: GraphStore, read: GraphStore,
                  seconds: float) -> dict[str, Any]:
    """One-change reconciles and trivial reads on the primary, trivial reads on the replica (its own thread)."""
    reconciles: list[float] = []
    primary_reads: list[float] = []
    replica_reads: list[float] = []
    node = next(iter(scene.get_layer(dsg.DsgLayers.OBJECTS).nodes))
    deadline = time.perf_counter() + seconds

    def replica_reader() -> None:
        while time.perf_counter() < deadline:
            replica_reads.append(_timed(lambda: read.query(TRIVIAL)))
            time.sleep(0.05)

    reader = threading.Thread(target=replica_reader, daemon=True)
    reader.start()
    while time.perf_counter() < deadline:
        node.attributes.position = node.attributes.position + np.array([0.01, 0.0, 0.0])
        reconciles.append(_timed(lambda: mirror.reconcile(scene)))
        primary_reads.append(_timed(lambda: store.query(TRIVIAL)))
        time.sleep(0.05)
    reader.join(60)
    return {
        "reconcile_1_change_max_s": round(max(reconciles), 3),
        "reconcile_1_change_median_s": round(statistics.median(reconciles), 3),
        "reconciles": len(reconciles),
        "primary_trivial_read_max_s": round(max(primary_reads), 3),
        "replica_trivial_read_max_s": round(max(replica_reads), 3),
        "replica_trivial_read_median_s": round(statistics.median(replica_reads), 3),
        "replica_reads": len(replica_reads),
    }


def _timed(work: Callable[[], Any]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _prefixed(prefix: str, figures: dict[str, Any]) -> dict[str, Any]:
    return {f"{prefix}_{key}": value for key, value in figures.items()}
