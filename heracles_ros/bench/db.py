"""``heracles bench db``: what a restart of the embedded database costs after many loads.

Runs on a throwaway data directory (or ``--data-dir``) with the kilometre-scale
scene, through the same calls as ``heracles load`` and ``heracles db stop|start``:

- ``restart_after_3_loads_s``: the scene mirrored, changed, mirrored again, then
  a clean stop and a start, timed until the server answers; node counts before
  and after must be equal.
- ``disk_mb_after_N_loads``: the persistence files' size as ``--loads`` changing
  snapshots (1 % of the nodes moved or removed, a different 1 % each time) are
  mirrored (``snapshot_mb_*``: the part that is the snapshot); it must not grow
  with the number of loads (FalkorDB itself keeps some space of deleted entities
  in its snapshot: README "Limits and known issues").
- ``restart_after_N_loads_s`` (clean stop) and ``kill9_restart_s`` (kill -9, so
  the start replays whatever tail the server had not yet compacted).
"""
from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from heracles_ros.bench.mirror import _changed_copy
from heracles_ros.errors import ConfigError
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.cypher import admin as q
from heracles_ros.graphdb.embedded import EmbeddedServer
from heracles_ros.graphdb.mirror import Mirror


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--loads", type=int, default=100, help="changing snapshots to mirror (default: 100)")
    parser.add_argument("--seed", type=int, default=0, help="scene seed (default: 0)")
    parser.add_argument("--scale", type=float, default=1.0, help="size factor of the kilometre-scale scene")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="empty directory to use (default: a temporary one, deleted afterwards)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.loads < 3:
        raise ConfigError(f"--loads must be >= 3, got {args.loads}")
    if args.data_dir is not None:
        if args.data_dir.exists() and any(args.data_dir.iterdir()):
            raise ConfigError(f"--data-dir {args.data_dir} is not empty; the benchmark needs a fresh directory")
        return _measure(args.data_dir, args)
    with tempfile.TemporaryDirectory(prefix="heracles-bench-db-") as tmp:
        return _measure(Path(tmp), args)


def _measure(data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    from heracles_ros.scene.synthetic import generate_scene

    scene = generate_scene("large", args.seed, scale=args.scale)
    server = EmbeddedServer(data_dir)
    uri = f"embedded:{data_dir}"
    figures: dict[str, Any] = {"scene": f"large seed {args.seed} scale {args.scale:g}"}
    try:
        store = open_store(uri, timeout_s=120.0)
        mirror = Mirror(store)
        # The Must-show sequence: mirrored, changed, mirrored again; then stop and start.
        for graph in (scene, _changed_copy(scene, fraction=0.01, seed=args.seed), scene):
            mirror.reconcile(graph, force=True)
        before = _count(store)
        store.close()
        figures["nodes"] = before
        figures["restart_after_3_loads_s"], after = _restart(server, uri)
        figures["nodes_equal_after_restart"] = after == before
        store = open_store(uri, timeout_s=120.0)
        mirror = Mirror(store)
        sizes: dict[int, tuple[float, float]] = {}
        largest_tail = 0
        for load in range(3, args.loads + 1):
            mirror.reconcile(_changed_copy(scene, fraction=0.01, seed=args.seed + load), force=True)
            largest_tail = max(largest_tail, server.aof_tail_bytes())
            if load in (10, args.loads // 2, args.loads) or load % 25 == 0:
                sizes[load] = (_disk_mb(server), round(server.files()["snapshot_bytes"] / 1e6, 2))
        store.close()
        for load, (size, snapshot) in sorted(sizes.items()):
            figures[f"disk_mb_after_{load}_loads"] = size
            figures[f"snapshot_mb_after_{load}_loads"] = snapshot
        figures["largest_tail_kb"] = round(largest_tail / 1024, 1)
        figures[f"restart_after_{args.loads}_loads_s"], after = _restart(server, uri)
        figures["nodes_after_restart"] = after
        info = server.running()
        if info is not None:
            os.kill(info.pid, signal.SIGKILL)
            while server.running() is not None:
                time.sleep(0.02)
        figures["tail_kb_at_kill9"] = round(server.aof_tail_bytes() / 1024, 1)
        started = time.perf_counter()
        server.ensure_started()
        figures["kill9_restart_s"] = round(time.perf_counter() - started, 3)
        figures["disk_mb_final"] = _disk_mb(server)
        figures["log_kb_final"] = round((data_dir / "falkordb.log").stat().st_size / 1024, 1)
    finally:
        server.stop()
    return figures


def _restart(server: EmbeddedServer, uri: str) -> tuple[float, int]:
    """``heracles db stop`` then ``heracles db start``: seconds until it answers, and the node count then."""
    server.stop()
    started = time.perf_counter()
    server.ensure_started()
    elapsed = time.perf_counter() - started
    with open_store(uri) as store:
        return round(elapsed, 3), _count(store)


def _count(store: Any) -> int:
    return int(store.query(q.COUNT_ALL_NODES)[0]["n"])


def _disk_mb(server: EmbeddedServer) -> float:
    """The persistence files (snapshot and tail); the log, a few lines per compaction, is reported apart."""
    files = server.files()
    return round((files["snapshot_bytes"] + files["tail_bytes"]) / 1e6, 2)
