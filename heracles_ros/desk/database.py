"""The embedded database as one process of ``heracles up``: start (or reuse) it, watch it, stop it on SIGTERM.

The FalkorDB server runs detached (its own session, see :mod:`heracles_ros.embedded.server`), so
this process owns its lifetime for the runner: it exits 1 when the server dies under it (a crash:
the runner then stops the nodes and names this process), follows an operator's ``heracles db
stop`` and ``heracles db start`` from another terminal (the nodes follow the database through
both), and on SIGINT/SIGTERM stops the server cleanly, bounded by ``--stop-timeout``, if ``--owner``
started it (a server another process started, e.g. ``heracles db start`` or another system's
``up``, is left running). The runner sends that signal only after the nodes have exited, so none of
them loses the database while it finishes its work.

``python -m heracles_ros.desk.database DATA_DIR [--stop-timeout S] [--owner WHO]``
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

#: How often the server's state is looked at (its state file and log only: no connection is opened).
WATCH_PERIOD_S = 1.0


def serve(data_dir: Path, stop_timeout_s: float, owner: str) -> int:
    from heracles_ros.embedded.server import EmbeddedServer
    from heracles_ros.errors import HeraclesError

    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    server = EmbeddedServer(data_dir, progress=lambda line: print(line, flush=True))
    try:
        info = server.ensure_started(owner=owner)
    except HeraclesError as exc:
        print(f"error: {exc}", flush=True)
        return 1
    print(f"embedded FalkorDB at falkordb://{info.host}:{info.port} (pid {info.pid}), data in {data_dir}, "
          f"started by {server.owner() or 'another process'}", flush=True)
    announced: str | None = None  # who stopped it, once said
    while not stopping.wait(WATCH_PERIOD_S):
        up = server.current() is not None or server.loading()
        by = None if up else server.stopped_by()
        if by is not None:
            if by != announced:
                print(_stopped_line(by), flush=True)
            announced = by
        elif not up:
            print(f"the database server exited; its log is in {data_dir}", flush=True)
            server.stop_replica(stop_timeout_s)  # it would outlive the system, serving a primary that is gone
            return 1
        elif announced is not None:
            announced = None
            print("the database is back", flush=True)
    if server.stop_if_started_by(owner, timeout_s=stop_timeout_s):
        print("database stopped", flush=True)
    elif server.current() is not None:
        print(f"database left running: {server.owner() or 'another process'} started it", flush=True)
    return 0


def _stopped_line(by: str) -> str:
    from heracles_ros.embedded.server import OPERATOR_STOP

    how = f"with '{OPERATOR_STOP}'" if by == OPERATOR_STOP else f"by {by}, which had started it"
    return f"the database was stopped {how}; 'heracles db start' brings it back"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the embedded database for heracles up until SIGTERM.")
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--stop-timeout", type=float, default=5.0, metavar="S",
                        help="seconds the clean stop may take before the server is killed (default 5)")
    parser.add_argument("--owner", default="heracles up", metavar="WHO",
                        help="who starts the server; it is stopped at the end only if WHO started it")
    args = parser.parse_args(argv)
    return serve(args.data_dir, args.stop_timeout, args.owner)


if __name__ == "__main__":
    sys.exit(main())
