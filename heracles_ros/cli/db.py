"""``heracles db start|stop|status``: the embedded server's lifecycle, and a health check of any backend."""
from __future__ import annotations

import argparse
from typing import Any

from heracles_ros.cli.common import add_db_option, print_json
from heracles_ros.cli.scene import database_counts
from heracles_ros.errors import ConfigError, DatabaseError
from heracles_ros.graphdb import open_store, parse_db_uri


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("db", help="start, stop or check the graph database")
    actions = parser.add_subparsers(dest="db_action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start the embedded FalkorDB server (or reuse the running one)")
    stop = actions.add_parser("stop", help="stop the embedded FalkorDB server cleanly (data is kept)")
    status = actions.add_parser("status", help="is the database up, and what does the graph hold (exit 1 if down)")
    for action, func in ((start, _start), (stop, _stop), (status, _status)):
        add_db_option(action)
        action.set_defaults(func=func)
    status.add_argument("--graph", default="heracles", help="graph to count (default: heracles)")


def _embedded_server(uri: str, action: str) -> Any:
    from heracles_ros.graphdb.embedded import EmbeddedServer
    from heracles_ros.graphdb.uri import default_data_dir

    target = parse_db_uri(uri)
    if target.kind != "embedded":
        raise ConfigError(f"'heracles db {action}' manages the embedded server only; {target.description} "
                          "is run by its own service")
    return EmbeddedServer(target.data_dir or default_data_dir())


def _start(args: argparse.Namespace) -> int:
    server = _embedded_server(args.db, "start")
    reused = server.running() is not None
    info = server.ensure_started()
    print_json({"running": True, "reused": reused, "data_dir": str(server.data_dir), "host": info.host,
                "port": info.port, "pid": info.pid, "uri": f"falkordb://{info.host}:{info.port}"})
    return 0


def _stop(args: argparse.Namespace) -> int:
    server = _embedded_server(args.db, "stop")
    print_json({"stopped": server.stop(), "data_dir": str(server.data_dir)})
    return 0


def _status(args: argparse.Namespace) -> int:
    target = parse_db_uri(args.db)
    report: dict[str, Any] = {"database": target.description, "graph": args.graph}
    if target.kind == "embedded":
        server = _embedded_server(args.db, "status")
        info = server.running()
        if info is None:
            print_json({**report, "running": False})
            return 1
        report.update(pid=info.pid, uri=f"falkordb://{info.host}:{info.port}")
    try:
        with open_store(args.db, graph=args.graph) as store:
            store.ping()
            counts = database_counts(store)
    except DatabaseError as exc:
        print_json({**report, "running": False, "error": str(exc)})
        return 1
    print_json({**report, "running": True, **counts})
    return 0
