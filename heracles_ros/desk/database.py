"""The embedded database as one process of ``heracles up``: start (or reuse) it, watch it, stop it on SIGTERM.

The FalkorDB server runs detached (its own session, see :mod:`heracles_ros.embedded.server`), so
this process owns its lifetime for the runner: it exits 1 when the server dies under it (a crash:
the runner then stops the nodes and names this process), follows an operator's ``heracles db
stop`` and ``heracles db start`` from another terminal (the nodes follow the database through
both), and on SIGINT/SIGTERM stops the server cleanly, bounded by ``--stop-timeout``. The runner
sends that signal only after the nodes have exited, so none of them loses the database while it
finishes its work.

``python -m heracles_ros.desk.database DATA_DIR [--stop-timeout S]``
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

#: How often the server's state is looked at (its state file and log only: no connection is opened).
WATCH_PERIOD_S = 1.0


def serve(data_dir: Path, stop_timeout_s: float) -> int:
    from heracles_ros.embedded.server import EmbeddedServer
    from heracles_ros.errors import HeraclesError

    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    server = EmbeddedServer(data_dir, progress=lambda line: print(line, flush=True))
    try:
        info = server.ensure_started()
    except HeraclesError as exc:
        print(f"error: {exc}", flush=True)
        return 1
    print(f"embedded FalkorDB at falkordb://{info.host}:{info.port} (pid {info.pid}), data in {data_dir}",
          flush=True)
    stopped_by_operator = False
    while not stopping.wait(WATCH_PERIOD_S):
        up = server.current() is not None or server.loading()
        if not up and server.stopped_by_operator():
            if not stopped_by_operator:
                print("the database was stopped with 'heracles db stop'; 'heracles db start' brings it back",
                      flush=True)
            stopped_by_operator = True
        elif not up:
            print(f"the database server exited; its log is in {data_dir}", flush=True)
            _stop_replica(server, stop_timeout_s)  # it would outlive the system, serving a primary that is gone
            return 1
        elif stopped_by_operator:
            stopped_by_operator = False
            print("the database is back", flush=True)
    server.stop(timeout_s=stop_timeout_s)
    print("database stopped", flush=True)
    return 0


def _stop_replica(server: Any, timeout_s: float) -> None:
    from heracles_ros.embedded.replica import REPLICA_DIR, ReadReplica

    if (server.data_dir / REPLICA_DIR).is_dir():
        ReadReplica(server).stop(timeout_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the embedded database for heracles up until SIGTERM.")
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--stop-timeout", type=float, default=5.0, metavar="S",
                        help="seconds the clean stop may take before the server is killed (default 5)")
    args = parser.parse_args(argv)
    return serve(args.data_dir, args.stop_timeout)


if __name__ == "__main__":
    sys.exit(main())
