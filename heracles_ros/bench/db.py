"""``heracles bench db``: what a restart of the embedded database costs after many loads, and its size.

Runs on a throwaway data directory (or ``--data-dir``) with the kilometre-scale
scene, through the same calls as ``heracles load`` and ``heracles db stop|start|compact``:

- ``restart_after_3_loads_s``: the scene mirrored, changed, mirrored again, then
  a clean stop and a start, timed until the server answers; node counts before
  and after must be equal.
- ``snapshot_mb_after_N_loads`` / ``disk_mb_after_N_loads``: as ``--loads``
  changing snapshots (1 % of the nodes moved or removed, a different 1 % each
  time) are mirrored, the snapshot after a rewrite at N = 10, 25, 50, 100, 200,
  400, ... loads (and the persistence files then). ``fresh_snapshot_mb``: the
  same graph (the last snapshot) loaded once into an empty directory. With the
  history on (the default; ``--no-history`` turns it off) the snapshot also
  holds its Change events (``history_changes_after_N_loads``), bounded by its
  limits; with it off the snapshot grows by FalkorDB's matrix slack, flattening
  (docs/known-issues.md#falkordb-server-defaults).
- ``restart_after_N_loads_s`` (clean stop) and ``kill9_restart_s`` (kill -9, so
  the start replays whatever tail the server had not yet compacted).
- ``rebuild_s`` and ``snapshot_mb_after_rebuild``: ``heracles db compact`` (each
  graph replaced by a copy of itself, then the file rewritten), with the node
  count before and after (``nodes_equal_after_rebuild``).

``--wear HZ`` (repeatable) measures the disk wear instead: changing snapshots
(a different 1 % each) mirrored at HZ for ``--wear-seconds``, and what the
server wrote meanwhile, extrapolated to an hour: ``wear_HZhz.disk_mb_per_hour``
(the kernel's count of bytes the server and its rewrite children sent to the
disk, psutil's ``write_bytes``), ``aof_rewrites_per_hour`` (each
writes the whole snapshot, ``base_mb``), at the rate achieved (``achieved_hz``).
"""
from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from heracles_ros.bench.mirror import changed_copy
from heracles_ros.bench.scene_size import add_scale_argument
from heracles_ros.embedded.maintenance import compact, rebuild_graphs
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.errors import ConfigError
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.cypher import admin as q
from heracles_ros.mirror.history import HistorySettings
from heracles_ros.mirror.reconcile import Mirror


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--loads", type=int, default=100, help="changing snapshots to mirror (default: 100)")
    parser.add_argument("--seed", type=int, default=0, help="scene seed (default: 0)")
    add_scale_argument(parser)
    parser.add_argument("--no-history", action="store_true",
                        help="mirror with the history off, to tell its share of the size from FalkorDB's own")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="empty directory to use (default: a temporary one, deleted afterwards)")
    parser.add_argument("--wear", type=float, action="append", default=None, metavar="HZ",
                        help="measure the bytes written per hour while mirroring changing snapshots at HZ instead "
                        "(repeatable: --wear 1 --wear 10)")
    parser.add_argument("--wear-seconds", type=float, default=60.0,
                        help="how long each --wear rate runs (default: 60 s)")
    parser.add_argument("--rewrite-percentage", type=int, default=None,
                        help="with --wear: try this auto-aof-rewrite-percentage instead of the embedded server's")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.wear:
        if any(not 0 < hz <= 100 for hz in args.wear) or not args.wear_seconds > 0:
            raise ConfigError("--wear takes rates in (0, 100] Hz and --wear-seconds a positive number")
        return _measure_wear(args)
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
    history = HistorySettings(enabled=not args.no_history)
    server = EmbeddedServer(data_dir)
    uri = f"embedded:{data_dir}"
    figures: dict[str, Any] = {"scene": f"large seed {args.seed} scale {args.scale:g}", "history": history.enabled}
    try:
        store = open_store(uri, timeout_s=120.0)
        mirror = Mirror(store, history=history)
        # The Must-show sequence: mirrored, changed, mirrored again; then stop and start.
        for graph in (scene, changed_copy(scene, fraction=0.01, seed=args.seed), scene):
            mirror.reconcile(graph, force=True)
        before = _count(store)
        store.close()
        figures["nodes"] = before
        figures["restart_after_3_loads_s"], after = _restart(server, uri)
        figures["nodes_equal_after_restart"] = after == before
        store = open_store(uri, timeout_s=120.0)
        mirror = Mirror(store, history=history)
        checkpoints = _checkpoints(args.loads)
        largest_tail = 0
        last = scene
        for load in range(3, args.loads + 1):
            last = changed_copy(scene, fraction=0.01, seed=args.seed + load)
            mirror.reconcile(last, force=True)
            largest_tail = max(largest_tail, server.aof_tail_bytes())
            if load in checkpoints:
                figures[f"disk_mb_after_{load}_loads"] = _disk_mb(server)  # as the server left it
                compact(server, wait_s=120.0, min_tail_bytes=-1)  # the snapshot of the graph as it is now
                figures[f"snapshot_mb_after_{load}_loads"] = _snapshot_mb(server)
                if history.enabled:
                    figures[f"history_changes_after_{load}_loads"] = mirror.history.size()["changes"]
        store.close()
        figures["largest_tail_kb"] = round(largest_tail / 1024, 1)
        figures["fresh_snapshot_mb"] = _fresh_snapshot_mb(last, history)
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
        # `heracles db compact`: each graph replaced by a copy of itself, then the file rewritten.
        with open_store(uri) as store:
            before = _count(store)
        started = time.perf_counter()
        rebuilt = rebuild_graphs(server)
        compact(server, wait_s=120.0, min_tail_bytes=-1)
        figures["rebuild_s"] = round(time.perf_counter() - started, 3)
        figures["rebuilt"] = rebuilt
        figures["snapshot_mb_after_rebuild"] = _snapshot_mb(server)
        with open_store(uri) as store:
            figures["nodes_equal_after_rebuild"] = _count(store) == before
        figures["log_kb_final"] = round((data_dir / "falkordb.log").stat().st_size / 1024, 1)
    finally:
        server.stop()
    return figures


def _measure_wear(args: argparse.Namespace) -> dict[str, Any]:
    from heracles_ros.scene.synthetic import generate_scene
    from heracles_ros.scene.tables import extract_tables

    scene = generate_scene("large", args.seed, scale=args.scale)
    history = HistorySettings(enabled=not args.no_history)
    snapshots = [extract_tables(changed_copy(scene, fraction=0.01, seed=args.seed + i)) for i in range(20)]
    figures: dict[str, Any] = {"scene": f"large seed {args.seed} scale {args.scale:g}", "history": history.enabled,
                               "seconds_per_rate": args.wear_seconds}
    for hz in args.wear:
        with tempfile.TemporaryDirectory(prefix="heracles-bench-wear-") as tmp:
            server = EmbeddedServer(Path(tmp))
            try:
                figures[f"wear_{hz:g}hz"] = _wear(server, scene, snapshots, hz, args.wear_seconds, history,
                                                  args.rewrite_percentage)
            finally:
                server.stop()
    return figures


def _wear(server: EmbeddedServer, scene: Any, snapshots: list[Any], hz: float, seconds: float,
          history: HistorySettings, percentage: int | None) -> dict[str, Any]:
    """Mirror ``snapshots`` in turn at ``hz`` for ``seconds``; what the server wrote, per hour, and what a
    kill -9 then costs the restart (the tail it replays)."""
    from heracles_ros.embedded.process import redis_client

    info = server.ensure_started()
    with open_store(f"embedded:{server.data_dir}", timeout_s=120.0) as store:
        mirror = Mirror(store, history=history)
        mirror.reconcile(scene, force=True)  # the first load is not wear of the running robot
        compact(server, wait_s=120.0, min_tail_bytes=-1)
        client = redis_client(info)
        if percentage is not None:
            client.config_set("auto-aof-rewrite-percentage", percentage)
        before_io, before = _written_bytes(info.pid), client.info("persistence")
        started = time.monotonic()
        sent = 0
        while time.monotonic() - started < seconds:
            mirror.reconcile(snapshots[sent % len(snapshots)], force=True)
            sent += 1
            time.sleep(max(0.0, started + sent / hz - time.monotonic()))
        elapsed = time.monotonic() - started
        after = client.info("persistence")
        _wait_idle(client)  # a rewrite child still writing counts once it has been reaped
        after_io = _written_bytes(info.pid)
    tail_kb = server.aof_tail_bytes() / 1024
    os.kill(info.pid, signal.SIGKILL)
    while server.running() is not None:
        time.sleep(0.02)
    restart = time.perf_counter()
    server.ensure_started()
    restart_s = time.perf_counter() - restart
    per_hour = 3600.0 / elapsed
    rewrites = int(after.get("aof_rewrites", 0)) - int(before.get("aof_rewrites", 0))
    return {
        "achieved_hz": round(sent / elapsed, 2),
        "disk_mb_per_hour": round((after_io - before_io) * per_hour / 1e6, 1),
        "aof_rewrites_per_hour": round(rewrites * per_hour),
        "base_mb": round(int(after.get("aof_base_size", 0)) / 1e6, 2),
        "tail_kb_at_kill9": round(tail_kb, 1),
        "kill9_restart_s": round(restart_s, 2),
    }


def _written_bytes(pid: int) -> int:
    """Bytes the process (and its reaped children: rewrite forks) caused to be sent to storage."""
    return int(psutil.Process(pid).io_counters().write_bytes)


def _wait_idle(client: Any) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        persistence = client.info("persistence")
        if not (persistence.get("aof_rewrite_in_progress") or persistence.get("aof_rewrite_scheduled")):
            return
        time.sleep(0.05)


def _checkpoints(loads: int) -> set[int]:
    """10, 25, 50, 100, 200, 400, ... up to ``loads``, and ``loads`` itself."""
    points = {10, 25, 50}
    point = 100
    while point <= loads:
        points.add(point)
        point *= 2
    return {p for p in points if 3 < p <= loads} | {loads}


def _fresh_snapshot_mb(graph: Any, history: HistorySettings) -> float:
    """The snapshot of ``graph`` mirrored once into an empty directory: what the size would be without churn."""
    with tempfile.TemporaryDirectory(prefix="heracles-bench-db-fresh-") as tmp:
        server = EmbeddedServer(Path(tmp))
        try:
            with open_store(f"embedded:{tmp}", timeout_s=120.0) as store:
                Mirror(store, history=history).reconcile(graph, force=True)
            compact(server, wait_s=120.0, min_tail_bytes=-1)
            return _snapshot_mb(server)
        finally:
            server.stop()


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


def _snapshot_mb(server: EmbeddedServer) -> float:
    return round(server.files()["snapshot_bytes"] / 1e6, 3)
