"""``heracles bench mirror``: what a snapshot costs the mirror, next to the floors it cannot beat.

Everything is measured in one run on one machine, so the ratios are
meaningful even where the absolute figures depend on the hardware:

- ``decode_floor_ms``: spark_dsg's own ``update_from_binary`` of the payload.
- ``db_floor_s``: the database's raw bulk insert of the same node and edge rows
  into an empty graph (index, UNWIND CREATE nodes, UNWIND MATCH/CREATE edges),
  with the same batch size and client as the mirror.
- ``full_load_s``: payload bytes to a fully mirrored empty database.
- ``nochange_ms``: the same scene again: decode + diff, zero writes.
- ``changed_1pct_ms``: 1 % of the nodes moved or removed (and back): decode,
  diff, write, corrections.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import resource
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import spark_dsg as dsg

from heracles_ros.errors import ConfigError, HeraclesError
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.cypher import bench as q
from heracles_ros.graphdb.mirror import Mirror, node_params
from heracles_ros.graphdb.store import GraphStore, Params
from heracles_ros.scene.io import SnapshotDecoder
from heracles_ros.scene.tables import extract_tables, group_edges, layer_of_id

#: Targets from the issue: ratios to the floors measured in the same run.
TARGETS = {"full_load_vs_db_floor": 1.5, "nochange_vs_decode_floor": 3.0, "changed_1pct_vs_decode_floor": 4.0}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=("small", "large"), default="large",
                        help="synthetic scene to measure (default: large, the kilometre-scale one)")
    parser.add_argument("--seed", type=int, default=0, help="scene seed (default: 0)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each timed step; medians are reported")
    parser.add_argument("--batch-size", type=int, default=5000, help="rows per statement (mirror and floor)")
    parser.add_argument("--db", default=None, metavar="URI",
                        help="database to measure on (default: a throwaway embedded FalkorDB in a temp dir); "
                        "graphs named bench_* are created and dropped")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.repeat < 1:
        raise ConfigError(f"--repeat must be >= 1, got {args.repeat}")
    from heracles_ros.scene.synthetic import generate_scene

    scene = generate_scene(args.kind, args.seed)
    payload = scene.to_binary(include_mesh=False)
    changed = _changed_copy(scene, fraction=0.01, seed=args.seed)
    changed_payload = changed.to_binary(include_mesh=False)
    tables = extract_tables(scene)
    figures: dict[str, Any] = {
        "scene": f"{args.kind} seed {args.seed}",
        "nodes": len(tables.nodes),
        "edges": len(tables.edges),
        "payload_mb": round(len(payload) / 1e6, 2),
    }
    decoded = dsg.DynamicSceneGraph.from_binary(payload)
    figures["decode_floor_ms"] = 1000 * _median(args.repeat, lambda: decoded.update_from_binary(payload))

    with _database(args.db) as uri:
        floor_store = open_store(uri, graph=f"bench_floor_{uuid.uuid4().hex[:8]}", timeout_s=300.0)
        mirror_store = open_store(uri, graph=f"bench_mirror_{uuid.uuid4().hex[:8]}", timeout_s=300.0)
        try:
            figures["db_floor_s"] = _timed(lambda: _raw_insert(floor_store, tables, args.batch_size))
            _drop(floor_store)
            figures.update(_mirror_figures(mirror_store, payload, changed_payload, args))
        finally:
            _drop(mirror_store)
            _drop(floor_store)
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    ratios = {
        "full_load_vs_db_floor": figures["full_load_s"] / figures["db_floor_s"],
        "nochange_vs_decode_floor": figures["nochange_ms"] / figures["decode_floor_ms"],
        "changed_1pct_vs_decode_floor": figures["changed_1pct_ms"] / figures["decode_floor_ms"],
    }
    for name, value in ratios.items():
        figures[name] = round(value, 2)
    figures["targets_met"] = all(ratios[name] <= limit for name, limit in TARGETS.items())
    for key in ("decode_floor_ms", "nochange_ms", "changed_1pct_ms"):
        figures[key] = round(figures[key], 1)
    for key in ("db_floor_s", "full_load_s"):
        figures[key] = round(figures[key], 3)
    return figures


def _mirror_figures(store: GraphStore, payload: bytes, changed_payload: bytes, args: argparse.Namespace
                    ) -> dict[str, Any]:
    mirror = Mirror(store, batch_size=args.batch_size)
    decoder = SnapshotDecoder()

    def apply(data: bytes) -> int:
        return mirror.reconcile(decoder.decode(data)).writes

    started = time.perf_counter()
    loaded = apply(payload)
    full_load_s = time.perf_counter() - started
    nochange, nochange_writes = _median_with(args.repeat, lambda: apply(payload))
    if any(nochange_writes):
        raise HeraclesError(f"an unchanged snapshot caused writes: {nochange_writes}")
    # Alternate between the changed scene and the original: every step is a 1 % change.
    flip = [changed_payload, payload]
    steps = iter(range(2 * args.repeat))
    changed, changed_writes = _median_with(2 * args.repeat, lambda: apply(flip[next(steps) % 2]))
    return {
        "full_load_s": full_load_s,
        "full_load_writes": loaded,
        "nochange_ms": 1000 * nochange,
        "changed_1pct_ms": 1000 * changed,
        "changed_1pct_writes": int(statistics.median(changed_writes)),
    }


def _raw_insert(store: GraphStore, tables: Any, batch_size: int) -> None:
    """The floor: the same rows as plain CREATEs into an empty graph, no diff, no MERGE."""
    from heracles_ros.graphdb.cypher.mirror import create_index

    rows_by_layer: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for node_id, row in tables.nodes.items():
        layer = layer_of_id(node_id)
        if layer is not None:
            rows_by_layer[layer].append(node_params(node_id, row, layer))
    statements: list[tuple[str, Params]] = []
    for layer, rows in rows_by_layer.items():
        store.write(create_index(store.dialect, layer.value, "nodeSymbol"))
        statements += [(q.create_nodes(store.dialect, layer), {"rows": rows[i : i + batch_size]})
                       for i in range(0, len(rows), batch_size)]
    for (source, target, relation), rows in group_edges(tables.edges).items():
        statements += [(q.create_edges(source, target, relation), {"rows": rows[i : i + batch_size]})
                       for i in range(0, len(rows), batch_size)]
    for statement, params in statements:
        store.write(statement, params, timeout_s=300.0)


def _changed_copy(scene: dsg.DynamicSceneGraph, *, fraction: float, seed: int) -> dsg.DynamicSceneGraph:
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
            attrs.position = attrs.position + np.array([0.25, -0.25, 0.0])
    return copy


@contextlib.contextmanager
def _database(uri: str | None) -> Iterator[str]:
    if uri is not None:
        yield uri
        return
    from heracles_ros.graphdb.embedded import EmbeddedServer

    with tempfile.TemporaryDirectory(prefix="heracles-bench-") as tmp:
        server = EmbeddedServer(Path(tmp))
        server.ensure_started()
        try:
            yield f"embedded:{tmp}"
        finally:
            server.stop()


def _drop(store: GraphStore) -> None:
    with contextlib.suppress(HeraclesError):
        store.write(q.DROP_ALL, timeout_s=300.0)
    store.close()


def _timed(step: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def _median(repeat: int, step: Callable[[], object]) -> float:
    return statistics.median(_timed(step) for _ in range(repeat))


def _median_with(repeat: int, step: Callable[[], int]) -> tuple[float, list[int]]:
    times: list[float] = []
    results: list[int] = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        results.append(step())
        times.append(time.perf_counter() - started)
    return statistics.median(times), results
