"""``heracles db start|stop|status|reset|compact``: the embedded server's lifecycle, and a check of any backend."""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from heracles_ros.cli.common import DEFAULT_GRAPH, add_db_options, print_report
from heracles_ros.cli.confirm import EXIT_NOT_CONFIRMED, add_yes_option, confirmed
from heracles_ros.cli.scene import database_counts
from heracles_ros.errors import ConfigError, DatabaseError, DataDirError
from heracles_ros.graphdb import open_store, parse_db_uri
from heracles_ros.graphdb.cypher import admin as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Corrections


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("db", help="start, stop, check or reset the graph database")
    actions = parser.add_subparsers(dest="db_action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start the embedded FalkorDB server (or reuse the running one)")
    stop = actions.add_parser("stop", help="stop the embedded FalkorDB server cleanly (data is kept)")
    status = actions.add_parser(
        "status", help="is the database up, what its data directory holds (size, graphs, nodes, corrections, "
        "last save); exit 1 if down")
    reset = actions.add_parser("reset", help="delete everything the database holds (corrections too, unless kept)")
    compact = actions.add_parser(
        "compact", help="rewrite the append-only file into a snapshot now (a stop does it too); --rebuild also "
        "replaces each graph by a fresh copy of itself first")
    for action, func in ((start, _start), (stop, _stop), (status, _status), (reset, _reset), (compact, _compact)):
        add_db_options(action, graph_help=None)
        action.set_defaults(func=func)
    status.add_argument("--graph", default=DEFAULT_GRAPH, help=f"graph to count in detail (default: {DEFAULT_GRAPH})")
    reset.add_argument("--graph", default=DEFAULT_GRAPH,
                       help="graph to reset on an external server (the embedded one resets all its graphs)")
    reset.add_argument("--keep-corrections", action="store_true",
                       help="keep the operator corrections; they apply again when their nodes are mirrored")
    add_yes_option(reset)
    # docs/known-issues.md#falkordb-graph-copy-deadlock
    compact.add_argument("--rebuild", action="store_true",
                         help="also replace each graph by a fresh copy of itself first (drops the space churn left in "
                         "FalkorDB's matrices); stop the mirror first: FalkorDB 4.16.3 can hang in the copy while the "
                         "graph is written to")


def _embedded_server(uri: str, action: str) -> Any:
    from heracles_ros.embedded.server import EmbeddedServer
    from heracles_ros.graphdb.uri import default_data_dir

    target = parse_db_uri(uri)
    if target.kind != "embedded":
        raise ConfigError(f"'heracles db {action}' manages the embedded server only; {target.description} "
                          "is run by its own service")
    return EmbeddedServer(target.data_dir or default_data_dir(), progress=_progress)


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _start(args: argparse.Namespace) -> int:
    """Start (or reuse) the server, and its read replica if one ran before: running nodes reconnect to both."""
    from heracles_ros.embedded.data_files import REPLICA_DIR
    from heracles_ros.embedded.replica import ensure_read_replica

    server = _embedded_server(args.db, "start")
    reused = server.running() is not None or server.loading()
    info = server.ensure_started(owner="heracles db start")
    if (server.data_dir / REPLICA_DIR).is_dir():
        ensure_read_replica(server)
    report: dict[str, Any] = {"running": True, "reused": reused, "data_dir": str(server.data_dir), "host": info.host,
                              "port": info.port, "pid": info.pid, "uri": f"falkordb://{info.host}:{info.port}"}
    dropped = [] if reused else server.load_warnings()
    if dropped:
        report["data_dropped"] = dropped
        print("warning: the append-only file was cut short (a crash mid-write?); the database loaded it up to "
              f"the cut and dropped the rest: {'; '.join(dropped)}", file=sys.stderr)
    print_report(args, report)
    return 0


def _stop(args: argparse.Namespace) -> int:
    """Stop the server; running nodes fail their requests clearly until 'heracles db start', none restarts it."""
    server = _embedded_server(args.db, "stop")
    print_report(args, {"stopped": server.stop(), "data_dir": str(server.data_dir)})
    return 0


def _compact(args: argparse.Namespace) -> int:
    from heracles_ros.embedded.maintenance import compact, rebuild_graphs

    server = _embedded_server(args.db, "compact")
    server.ensure_started()
    before = server.files()
    started = time.perf_counter()
    graphs = rebuild_graphs(server) if args.rebuild else {}
    compact(server, wait_s=120.0, min_tail_bytes=-1)
    after = server.files()
    print_report(args, {
                 "data_dir": str(server.data_dir), "graphs": graphs, "seconds": round(time.perf_counter() - started, 3),
                 "bytes_before": before["snapshot_bytes"] + before["tail_bytes"],
                "bytes_after": after["snapshot_bytes"] + after["tail_bytes"]})
    return 0


def _status(args: argparse.Namespace) -> int:
    target = parse_db_uri(args.db)
    report: dict[str, Any] = {"database": target.description, "graph": args.graph}
    graphs: list[str] = [args.graph]
    if target.kind == "embedded":
        server = _embedded_server(args.db, "status")
        report.update(data_dir=str(server.data_dir), **(server.files() if server.data_dir.is_dir() else {}))
        info = server.running()
        if info is None:
            print_report(args, {**report, "running": False, "loading": server.loading()})
            return 1
        report.update(pid=info.pid, uri=f"falkordb://{info.host}:{info.port}")
        graphs = server.graphs() or [args.graph]
    try:
        per_graph: dict[str, Any] = {}
        for name in graphs:
            with open_store(args.db, graph=name) as store:
                store.ping()
                per_graph[name] = _graph_summary(store)
                if name == args.graph:
                    report.update(database_counts(store))
    except DatabaseError as exc:
        print_report(args, {**report, "running": False, "error": str(exc)})
        return 1
    print_report(args, {**report, "running": True, "graphs": per_graph})
    return 0


def _graph_summary(store: GraphStore) -> dict[str, Any]:
    rows = store.query(q.COUNT_ALL_NODES)
    return {"nodes": int(rows[0]["n"]) if rows else 0, "corrections": Corrections(store).counts()}


def _reset(args: argparse.Namespace) -> int:
    from heracles_ros.embedded.maintenance import compact

    target = parse_db_uri(args.db)
    graph_words = "every graph" if target.kind == "embedded" else f"graph {args.graph}"
    kept = ", keeping the corrections" if args.keep_corrections else ", corrections too"
    if not confirmed(args, "heracles db reset", f"Delete {graph_words} on {target.description}{kept}?"):
        return EXIT_NOT_CONFIRMED
    report: dict[str, Any] = {"database": target.description, "kept_corrections": args.keep_corrections}
    graphs = [args.graph]
    if target.kind == "embedded":
        server = _embedded_server(args.db, "reset")
        try:
            server.ensure_started()
        except DataDirError as exc:
            if not exc.unreadable:
                raise
            if args.keep_corrections:
                raise DataDirError(f"{exc}; the corrections cannot be kept from files that do not load") from exc
            report["set_aside"] = str(server.set_aside())
            server.ensure_started()
        graphs = server.graphs()
    statement = q.DELETE_ALL_BUT_CORRECTIONS if args.keep_corrections else q.DELETE_ALL_NODES
    removed: dict[str, int] = {}
    for name in graphs:
        with open_store(args.db, graph=name, timeout_s=120.0) as store:
            before = store.query(q.COUNT_ALL_NODES)
            store.write(statement)
            after = store.query(q.COUNT_ALL_NODES)
            removed[name] = int(before[0]["n"] if before else 0) - int(after[0]["n"] if after else 0)
    if target.kind == "embedded":
        compact(server, wait_s=60.0, min_tail_bytes=-1)  # the files shrink now, not at the next rewrite
    print_report(args, {**report, "nodes_removed": removed})
    return 0
