"""``heracles load | summary | generate-scene``: scene files in and out of the database."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from heracles_ros.cli.common import add_db_options, print_report
from heracles_ros.errors import ConfigError
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.cypher import admin as q
from heracles_ros.graphdb.cypher.mirror import READ_META
from heracles_ros.graphdb.store import GraphStore


def register(sub: argparse._SubParsersAction) -> None:
    load = sub.add_parser("load", help="mirror a spark_dsg scene file into the database and print the counts")
    load.add_argument("scene", type=Path, help="scene graph file (.json, or spark_dsg binary under any other name)")
    load.add_argument("--force", action="store_true",
                      help="apply even if the scene would remove most of what the database mirrors")
    load.add_argument("--time", default=None, metavar="TIME",
                      help="the snapshot's time in the history: an ISO time (UTC unless it names a zone) or epoch "
                      "seconds (default: the file's modification time)")
    summary = sub.add_parser("summary", help="print what the database mirrors: counts by layer, class and relation")
    for parser in (load, summary):
        add_db_options(parser)
    load.set_defaults(func=_load)
    summary.set_defaults(func=_summary)

    generate = sub.add_parser("generate-scene", help="write a seeded synthetic Hydra-like scene graph to a file")
    generate.add_argument("--kind", choices=("small", "large"), required=True,
                          help="small: an indoor floor; large: a kilometre-scale outdoor graph")
    generate.add_argument("--seed", type=int, default=0, help="random seed (same seed, same graph)")
    generate.add_argument("--scale", type=float, default=1.0,
                          help="size factor of the large kind, 0.01 .. 100 (default 1: 15,945 places; 6.272: 10^5; "
                          "62.72: 10^6, a 542 MB payload, over the mirror's default max_snapshot_bytes)")
    generate.add_argument("--mesh-prefix", default="P", metavar="LETTER",
                          help="symbol prefix of the mesh places (default: P, as Hydra's dataset configs; "
                          "Hydra's code default is Q)")
    generate.add_argument("--out", type=Path, required=True, metavar="FILE",
                          help="output file: .json for JSON, .sparkdsg for spark_dsg's binary file, any other name "
                          "(x.bin, ...) for the bare binary payload of a DsgUpdate")
    generate.set_defaults(func=_generate)


def database_counts(store: GraphStore) -> dict[str, Any]:
    """Nodes by label, relationships by type, and the mirror's generation and last sequence."""
    nodes = {str(r["label"]): int(r["n"]) for r in store.query(q.COUNT_NODES)}
    edges = {str(r["type"]): int(r["n"]) for r in store.query(q.COUNT_EDGES)}
    meta = store.query(READ_META)
    return {
        "nodes": sum(nodes.values()),
        "edges": sum(edges.values()),
        "nodes_by_label": nodes,
        "edges_by_type": dict(sorted(edges.items())),
        "generation": int(meta[0]["generation"] or 0) if meta else 0,
        "sequence": meta[0]["sequence"] if meta else None,
    }


def _load(args: argparse.Namespace) -> int:
    from heracles_ros.mirror.reconcile import Mirror
    from heracles_ros.mirror.time_text import parse_time
    from heracles_ros.scene.io import load_scene

    started = time.perf_counter()
    graph = load_scene(args.scene)
    stamp = parse_time(args.time, what="--time") if args.time is not None else args.scene.stat().st_mtime
    with open_store(args.db, graph=args.graph, timeout_s=120.0) as store:
        report = Mirror(store).reconcile(graph, force=args.force, stamp_s=stamp)
        counts = database_counts(store)
    print_report(args, {
        "scene": str(args.scene),
        "database": store.description,
        "nodes_added": report.nodes_added,
        "nodes_changed": report.nodes_changed,
        "nodes_removed": report.nodes_removed,
        "edges_added": report.edges_added,
        "edges_removed": report.edges_removed,
        "corrections_reapplied": report.corrections_reapplied,
        "corrections_retired": report.corrections_retired,
        "history_events": len(report.changes),
        "mirrored": {"nodes": report.nodes, "edges": report.edges, "relationships": report.relationships},
        **counts,
        "seconds": round(time.perf_counter() - started, 3),
    })
    return 0


def _summary(args: argparse.Namespace) -> int:
    from heracles_ros.graphdb.scene_presence import HOW_TO_FILL, require_graph

    with open_store(args.db, graph=args.graph) as store:
        require_graph(store, reader="heracles summary")  # a misspelt --graph is not an empty scene
        counts = database_counts(store)
        classes: dict[str, dict[str, int]] = {}
        for row in store.query(q.SUMMARY_CLASSES):
            classes.setdefault(str(row["label"]), {})[str(row["class"])] = int(row["n"])
    print_report(args, {"database": store.description, **counts, "classes_by_label": classes})
    if not counts["nodes"]:
        print(f"note: {store.description} holds no scene (no mirrored node); {HOW_TO_FILL}", file=sys.stderr)
    return 0


def _generate(args: argparse.Namespace) -> int:
    from heracles_ros.scene.io import SPARK_DSG_SUFFIXES
    from heracles_ros.scene.synthetic import generate_scene

    graph = generate_scene(args.kind, args.seed, scale=args.scale, mesh_prefix=args.mesh_prefix)
    out: Path = args.out
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix.lower() in SPARK_DSG_SUFFIXES:  # spark_dsg's own files (.sparkdsg: a header, then the bytes)
            graph.save(str(out), include_mesh=False)
        else:  # spark_dsg's save refuses other suffixes: the bare bytes, as in a DsgUpdate (what load_scene reads)
            out.write_bytes(graph.to_binary(include_mesh=False))
    except Exception as exc:  # spark_dsg raises RuntimeError / ValueError on unwritable paths
        raise ConfigError(f"cannot write scene file {out}: {exc}") from exc
    print_report(args, {"out": str(out), "kind": args.kind, "seed": args.seed, "nodes": graph.num_nodes(),
                "edges": graph.num_edges()})
    return 0
