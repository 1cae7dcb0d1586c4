"""``heracles bench mirror``: what a snapshot costs the mirror, next to the floors it cannot beat.

Everything is measured in one run on one machine, so the ratios are
meaningful even where the absolute figures depend on the hardware:

- ``decode_floor_ms``: spark_dsg's own ``update_from_binary`` of the payload.
- ``--scale F``: the kilometre-scale scene times F (6.272: 10^5 places).
- ``--mesh N``: the snapshots carry an N-vertex mesh, as Hydra sends by default
  (``serialize_dsg_mesh``); the mirror never reads it, but every decode pays for it.
- ``db_floor_s``: the database's raw bulk insert of the same node and edge rows
  into an empty graph (index, UNWIND CREATE nodes, UNWIND MATCH/CREATE edges),
  with the same batch size and client as the mirror.
- ``full_load_s``: payload bytes to a fully mirrored empty database.
- ``nochange_ms``: Hydra's next snapshot when nothing the mirror keeps changed:
  the update times of 1 % of the places differ (Hydra's active window), so the
  bytes differ; zero writes. ``nochange_identical_ms``: the same bytes again (a
  new copy, as a new message is).
- ``changed_1pct_ms``: 1 % of the nodes moved (about 1 m, beyond the history's
  0.5 m move threshold, so every move is a history event) or removed (and
  back): compare, decode what changed, diff, write, corrections, history.
- ``mirror_peak_rss_mb``: the peak memory of a process that only mirrors the
  payloads (a full load, then changed and unchanged snapshots), in a fresh
  process of its own: what the dsg_mirror node needs beyond ROS.
- ``--read-replica``: the same with the embedded database's read replica attached
  (the isolation the model's queries run behind), so the primary also streams
  every write to it.
- ``--history-snapshots N``: N further snapshots, each changing another 1 % of
  the nodes (moved 1 m, or removed, or brought back), then the history's size
  (``history_changes``, ``history_seen``) and the median cost of one of them
  (``history_run_ms``, no decode: the tables are changed directly).
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import spark_dsg as dsg

from heracles_ros.bench.scene_size import add_scale_argument, scene_name
from heracles_ros.embedded.server import temporary_server
from heracles_ros.errors import ConfigError, HeraclesError
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.cypher import bench as q
from heracles_ros.graphdb.cypher import mirror as mirror_q
from heracles_ros.graphdb.store import GraphStore, Params
from heracles_ros.mirror.reconcile import Mirror, node_params
from heracles_ros.scene.io import DEFAULT_MAX_SNAPSHOT_BYTES, SnapshotDecoder
from heracles_ros.scene.tables import SceneTables, extract_tables, group_edges
from heracles_ros.schema import Layer

#: Full loads (and floors) measured; the median is reported.
_LOAD_RUNS = 3
#: Targets from the issue: ratios to the floors measured in the same run.
TARGETS = {"full_load_vs_db_floor": 1.3, "nochange_vs_decode_floor": 0.5, "changed_1pct_vs_decode_floor": 2.0}
#: Share of the mesh places whose update time a Hydra-like unchanged snapshot changes.
ACTIVE_WINDOW = 0.01
#: Seconds the memory run (a full load and three snapshots in a process of its own) may take.
_RSS_TIMEOUT_S = 1800


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=("small", "large"), default="large",
                        help="synthetic scene to measure (default: large, the kilometre-scale one)")
    parser.add_argument("--seed", type=int, default=0, help="scene seed (default: 0)")
    add_scale_argument(parser)
    parser.add_argument("--repeat", type=int, default=4,
                        help="rounds of the steady-state steps (each: 2 changed, 2 unchanged of each kind, 2 decode "
                        "floors); medians are reported")
    parser.add_argument("--batch-size", type=int, default=5000, help="rows per statement (mirror and floor)")
    parser.add_argument("--mesh", type=int, default=0, metavar="VERTICES",
                        help="put a mesh of this many vertices (and as many triangles) into every snapshot, as Hydra "
                        "does by default (default: 0, no mesh; a real 2M-vertex mesh is ~230 MB)")
    parser.add_argument("--history-snapshots", type=int, default=0, metavar="N",
                        help="after the steady state, mirror N more snapshots with 1 %% of the nodes changed each "
                        "and report the history's size (default: 0, skipped)")
    parser.add_argument("--read-replica", action="store_true",
                        help="attach the embedded database's read replica first, as the language_server does: the "
                        "primary then streams every write to it (embedded databases only)")
    parser.add_argument("--db", default=None, metavar="URI",
                        help="database to measure on (default: a throwaway embedded FalkorDB in a temp dir); "
                        "graphs named bench_* are created and dropped")
    parser.add_argument("--no-rss", action="store_true",
                        help="leave out mirror_peak_rss_mb (a second full load in a process of its own)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.repeat < 1:
        raise ConfigError(f"--repeat must be >= 1, got {args.repeat}")
    from heracles_ros.scene.synthetic import generate_scene

    if args.mesh < 0:
        raise ConfigError(f"--mesh must be >= 0 vertices, got {args.mesh}")
    if args.history_snapshots < 0:
        raise ConfigError(f"--history-snapshots must be >= 0, got {args.history_snapshots}")
    scene = generate_scene(args.kind, args.seed, scale=args.scale)
    changed = changed_copy(scene, fraction=0.01, seed=args.seed)
    if args.mesh:
        mesh = _synthetic_mesh(args.mesh, args.seed)
        scene.mesh = mesh
        changed.mesh = mesh
    payloads = _Payloads(
        scene.to_binary(include_mesh=bool(args.mesh)), changed.to_binary(include_mesh=bool(args.mesh)),
        active_window(scene, ACTIVE_WINDOW, mesh=bool(args.mesh)), active_window(changed, ACTIVE_WINDOW,
                                                                                 mesh=bool(args.mesh)))
    tables = extract_tables(scene)
    figures: dict[str, Any] = {
        "scene": scene_name(args.kind, args.seed, args.scale),
        "nodes": len(tables.nodes),
        "places": sum(1 for row in tables.nodes.values() if row[0] in (Layer.MESH_PLACE, Layer.PLACE)),
        "edges": len(tables.edges),
        "relationships": tables.relationships(),
        "mesh_vertices": args.mesh,
        "payload_mb": round(len(payloads.scene) / 1e6, 2),
    }
    del scene, changed
    with _database(args.db) as uri:
        if args.read_replica:
            if not uri.startswith("embedded"):
                raise ConfigError(f"--read-replica needs an embedded database, not {uri}")
            open_store(uri, read_replica=True).close()  # started, in sync, following every write from now on
        figures["read_replica"] = args.read_replica
        figures.update(_database_figures(uri, tables, payloads, args))
        if not args.no_rss:
            figures["mirror_peak_rss_mb"] = _mirror_alone(uri, payloads, args.batch_size)
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    ratios = {
        "full_load_vs_db_floor": figures["full_load_s"] / figures["db_floor_s"],
        "nochange_vs_decode_floor": figures["nochange_ms"] / figures["decode_floor_ms"],
        "changed_1pct_vs_decode_floor": figures["changed_1pct_ms"] / figures["decode_floor_ms"],
    }
    for name, value in ratios.items():
        figures[name] = round(value, 2)
    figures["nochange_identical_vs_decode_floor"] = round(
        figures["nochange_identical_ms"] / figures["decode_floor_ms"], 3)
    figures["targets_met"] = all(ratios[name] <= limit for name, limit in TARGETS.items())
    for key in ("decode_floor_ms", "nochange_ms", "nochange_identical_ms", "changed_1pct_ms"):
        figures[key] = round(figures[key], 1)
    for key in ("db_floor_s", "full_load_s"):
        figures[key] = round(figures[key], 3)
    return figures


@dataclass(frozen=True)
class _Payloads:
    """The scene, the scene with 1 % of its nodes changed, and each with Hydra's active window touched."""

    scene: bytes
    changed: bytes
    scene_active: bytes
    changed_active: bytes


def active_window(scene: dsg.DynamicSceneGraph, share: float, *, mesh: bool) -> bytes:
    """The scene's payload with the update times of ``share`` of its mesh places changed: what Hydra sends
    when nothing the mirror keeps changed (its active window is re-stamped on every snapshot)."""
    copy = dsg.DynamicSceneGraph.from_binary(scene.to_binary(include_mesh=mesh))
    places = sorted(node.id.value for node in copy.get_layer(3, 1).nodes)
    for place in places[:: max(1, round(1 / share))]:
        copy.get_node(place).attributes.last_update_time_ns += 1_000_000_000
    return bytes(copy.to_binary(include_mesh=mesh))


def _database_figures(uri: str, tables: SceneTables, payloads: _Payloads, args: argparse.Namespace
                      ) -> dict[str, Any]:
    """Floor and full load alternate, each into a fresh graph, so both see the same server state."""
    floors: list[float] = []
    loads: list[float] = []
    steady: dict[str, Any] = {}
    for attempt in range(_LOAD_RUNS):
        with _fresh_graph(uri) as store:
            floors.append(_timed(partial(_raw_insert, store, tables, args.batch_size)))
        with _fresh_graph(uri) as store:
            session = _Session(store, args.batch_size, len(payloads.scene))
            loads.append(_timed(partial(session.apply, payloads.scene)))
            if attempt == _LOAD_RUNS - 1:
                steady = _steady_state(session, payloads, args.repeat)
                if args.history_snapshots:
                    steady.update(_history_run(session.mirror, tables, args.history_snapshots, args.seed))
    return {"db_floor_s": statistics.median(floors), "full_load_s": statistics.median(loads), **steady}


class _Session:
    """One mirror and its decoder, as the node runs them: payload bytes in, database written."""

    def __init__(self, store: GraphStore, batch_size: int, max_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES):
        self.mirror = Mirror(store, batch_size=batch_size)
        self.decoder = SnapshotDecoder(max(max_bytes, DEFAULT_MAX_SNAPSHOT_BYTES))

    def apply(self, payload: bytes) -> int:
        return self.mirror.reconcile_payload(payload, self.decoder).writes


def _steady_state(session: _Session, payloads: _Payloads, repeat: int) -> dict[str, Any]:
    """Decode floor, 1 %-changed and unchanged snapshots, interleaved so all see the same machine load.

    Each round sends the changed scene, then it with Hydra's active window re-stamped, then that again (a new
    copy of the same bytes), and the same back to the original scene: a 1 % change each way, each followed
    by the two kinds of unchanged snapshot.
    """
    floor_graph = dsg.DynamicSceneGraph.from_binary(payloads.scene)
    floors: list[float] = []
    nochange: list[float] = []
    identical: list[float] = []
    changed: list[float] = []
    changed_writes: list[int] = []
    for _ in range(repeat):
        for data, active in ((payloads.changed, payloads.changed_active), (payloads.scene, payloads.scene_active)):
            floors.append(_timed(partial(floor_graph.update_from_binary, data)))
            seconds, writes = _timed_with(partial(session.apply, data))
            changed.append(seconds)
            changed_writes.append(writes)
            for kind, payload in ((nochange, active), (identical, bytes(bytearray(active)))):
                seconds, writes = _timed_with(partial(session.apply, payload))
                if writes:
                    raise HeraclesError(f"an unchanged snapshot caused {writes} writes")
                kind.append(seconds)
    return {
        "decode_floor_ms": 1000 * statistics.median(floors),
        "nochange_ms": 1000 * statistics.median(nochange),
        "nochange_identical_ms": 1000 * statistics.median(identical),
        "changed_1pct_ms": 1000 * statistics.median(changed),
        "changed_1pct_writes": int(statistics.median(changed_writes)),
    }


def _mirror_alone(uri: str, payloads: _Payloads, batch_size: int) -> float:
    """Peak RSS (MB) of a fresh process that mirrors the payloads into a graph of its own: a full load, then a
    1 %-changed, a Hydra-like unchanged and a 1 %-changed snapshot back."""
    with tempfile.TemporaryDirectory(prefix="heracles-bench-rss-") as folder:
        files = []
        for n, data in enumerate((payloads.scene, payloads.changed, payloads.changed_active, payloads.scene)):
            path = Path(folder) / f"{n}.bin"
            path.write_bytes(data)
            files.append(str(path))
        # A program of its own (not a multiprocessing child, whose helper processes outlive the pool).
        program = "import sys; from heracles_ros.bench.mirror import peak_rss_of_a_mirror as m; m(sys.argv[1:])"
        done = subprocess.run([sys.executable, "-c", program, uri, str(batch_size), *files], capture_output=True,
                              text=True, timeout=_RSS_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise HeraclesError(f"the mirror's memory run failed: {done.stderr.strip()[-2000:]}")
        return float(done.stdout.split()[-1])


def peak_rss_of_a_mirror(argv: list[str]) -> None:
    """Mirror the payload files (argv: uri, batch size, files) into a fresh graph; print the peak RSS in MB."""
    uri, batch_size, files = argv[0], int(argv[1]), argv[2:]
    with _fresh_graph(uri) as store:
        session = _Session(store, batch_size, max(Path(f).stat().st_size for f in files))
        for file in files:
            session.apply(Path(file).read_bytes())
    print(_own_peak_rss_mb())


def _own_peak_rss_mb() -> float:
    """This process's peak RSS since it started its program: Linux's VmHWM (ru_maxrss would count the parent's
    memory at the fork that started it)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _history_run(mirror: Mirror, tables: SceneTables, snapshots: int, seed: int) -> dict[str, Any]:
    """``snapshots`` reconciles, each changing 1 % of the nodes: a move of 1 m, a removal, or a return."""
    rng = np.random.default_rng(seed + 2)
    nodes = dict(tables.nodes)
    removed: dict[int, tuple[Any, ...]] = {}
    ids = sorted(nodes)
    per_snapshot = max(1, round(0.01 * len(ids)))
    costs: list[float] = []
    started_t = time.time()
    for n in range(snapshots):
        for index in rng.choice(len(ids), size=per_snapshot, replace=False):
            node_id = ids[index]
            row = nodes.get(node_id)
            if row is None:
                nodes[node_id] = removed.pop(node_id)  # back where it was
            elif rng.random() < 0.25 and row[0] is not Layer.BUILDING:
                removed[node_id] = nodes.pop(node_id)
            else:
                nodes[node_id] = (*row[:3], row[3] + 1.0, *row[4:])
        kept = {key for key in tables.edges if (key >> 64) in nodes and (key & ((1 << 64) - 1)) in nodes}
        snapshot = SceneTables(nodes=dict(nodes), edges=kept)
        costs.append(_timed(partial(mirror.reconcile, snapshot, sequence=n, force=True, stamp_s=started_t + n)))
    size = mirror.history.size()
    return {"history_snapshots": snapshots, "history_changes": size["changes"], "history_seen": size["seen"],
            "history_run_ms": round(1000 * statistics.median(costs), 1)}


def _raw_insert(store: GraphStore, tables: SceneTables, batch_size: int) -> None:
    """The floor: the same rows as plain CREATEs into an empty graph, no diff, no MERGE, no bookkeeping."""
    rows_by_layer: dict[Layer, list[list[Any]]] = defaultdict(list)
    for node_id, row in tables.nodes.items():
        rows_by_layer[row[0]].append(node_params(node_id, row))
    statements: list[tuple[str, Params]] = []
    for layer, rows in rows_by_layer.items():
        store.write(mirror_q.create_index(store.dialect, layer.value, "nodeSymbol"))
        statements += [(mirror_q.create_nodes(store.dialect, layer), {"rows": rows[i : i + batch_size]})
                       for i in range(0, len(rows), batch_size)]
    for kind, rows in group_edges(tables.edges, tables.nodes).items():
        statements += [(mirror_q.create_edges(kind.source, kind.target, kind.relation, both_ways=kind.both_ways),
                        {"rows": rows[i : i + batch_size]}) for i in range(0, len(rows), batch_size)]
    for statement, params in statements:
        store.write(statement, params, timeout_s=300.0)


def changed_copy(scene: dsg.DynamicSceneGraph, *, fraction: float, seed: int) -> dsg.DynamicSceneGraph:
    """The scene with ``fraction`` of its mirrored nodes changed: three in four moved, one in four removed."""
    copy = dsg.DynamicSceneGraph.from_binary(scene.to_binary(include_mesh=False))
    ids = sorted(extract_tables(copy).nodes)
    rng = np.random.default_rng(seed + 1)
    picked = rng.choice(len(ids), size=max(1, round(fraction * len(ids))), replace=False)
    for n, index in enumerate(picked):
        node_id = int(ids[index])
        if n % 4 == 3:
            copy.remove_node(node_id)
        else:
            attrs = copy.get_node(node_id).attributes
            attrs.position = attrs.position + np.array([0.75, -0.75, 0.0])  # ~1.06 m: a history event
    return copy


def _synthetic_mesh(vertices: int, seed: int) -> dsg.Mesh:
    """A mesh of ``vertices`` coloured vertices and as many triangles: Hydra's shape (sizes matter, not looks)."""
    rng = np.random.default_rng(seed + 2)
    mesh = dsg.Mesh()
    mesh.set_vertices(rng.random((6, vertices)))
    mesh.set_faces(rng.integers(0, vertices, size=(3, vertices), dtype=np.int32))
    return mesh


@contextlib.contextmanager
def _database(uri: str | None) -> Iterator[str]:
    if uri is not None:
        yield uri
        return
    with temporary_server("heracles-bench-") as temporary:
        yield temporary


@contextlib.contextmanager
def _fresh_graph(uri: str, graph: str = "") -> Iterator[GraphStore]:
    store = open_store(uri, graph=graph or f"bench_{uuid.uuid4().hex[:10]}", timeout_s=300.0)
    # FalkorDB gets a graph of its own; a Neo4j URI names a whole database, which the
    # benchmark empties afterwards, so it must not hold anything (e.g. the robot's scene).
    if store.dialect.name == "neo4j" and store.query(q.COUNT_ALL)[0]["n"]:
        store.close()
        raise ConfigError(
            f"{store.description} is not empty: the benchmark writes to and then empties the whole "
            "database; name an empty one in the URI path (neo4j://HOST:7687/bench)"
        )
    try:
        yield store
    finally:
        with contextlib.suppress(HeraclesError):
            store.write(q.DROP_ALL, timeout_s=300.0)
        store.close()


def _timed(step: Callable[[], object]) -> float:
    """Seconds ``step`` takes, garbage collector paused as the mirror pauses it for a reconcile."""
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        step()
        return time.perf_counter() - started
    finally:
        gc.enable()


def _timed_with(step: Callable[[], int]) -> tuple[float, int]:
    """Seconds ``step`` takes (it pauses the collector itself, as a reconcile does) and what it returned."""
    gc.collect()
    started = time.perf_counter()
    result = step()
    return time.perf_counter() - started, result
