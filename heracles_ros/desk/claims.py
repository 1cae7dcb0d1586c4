"""One ``heracles up`` per robot and per graph, found out before it touches anything.

A second ``heracles up`` for a running robot used to start its database process and
mirror its scene into the running system's graph before its dispatcher refused, and then
stop the shared database on its way out. So ``up`` first takes a lock on the graph it
would write (embedded databases: a file lock in the data directory, held for the life
of the process and released by the kernel however it ends) and looks on the ROS graph
for the nodes of a system in its namespace (started by another ``up`` or by
``ros2 launch``); either found, it refuses with who holds what, having written nothing.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import time
from pathlib import Path
from typing import IO

from heracles_ros.errors import ConfigError

#: The node programs of a running system (what ``up`` and the launch files start in a robot namespace).
SYSTEM_NODES = ("dsg_mirror", "language_server", "dispatcher")
#: How long the ROS graph is watched for a running system's nodes (discovery on one host takes well
#: under a second; a node found ends the wait at once).
LOOK_S = 2.0
_POLL_S = 0.05


class GraphLock:
    """The one ``heracles up`` writing ``graph`` in an embedded database's ``data_dir``.

    :meth:`acquire` never waits: it takes the lock or raises ConfigError naming the holder. The lock
    goes with the process (closing its file releases it), so a killed ``up`` leaves nothing stale.
    """

    def __init__(self, data_dir: Path, graph: str):
        self.path = Path(data_dir) / f".up-{re.sub(r'[^A-Za-z0-9_.-]', '_', graph)}.lock"
        self.graph = graph
        self._handle: IO[str] | None = None

    def acquire(self, holder: dict[str, object]) -> None:
        """Hold the lock, recording ``holder`` (pid, namespace) for whoever is refused next."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - held open for the life of the process
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            other = _holder_text(handle.read())
            handle.close()
            raise ConfigError(
                f"another heracles up runs on graph {self.graph!r} of this database ({other}): one system per "
                "graph; stop it first (Ctrl-C in its terminal), or give this one another --db or --graph"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(holder))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None


def _holder_text(raw: str) -> str:
    try:
        holder = json.loads(raw)
        return f"pid {holder['pid']}, namespace {holder['namespace']}"
    except (ValueError, KeyError, TypeError):
        return "its details are unreadable"


def running_nodes(namespace: str, look_s: float = LOOK_S) -> list[str]:
    """The system's nodes that run in ``namespace`` (``/spot/dispatcher``, ...), looked for during at most
    ``look_s`` on the ROS graph this process's environment reaches (domain, discovery range)."""
    from heracles_ros.ros.client_context import ClientContext

    with ClientContext(f"heracles_up_probe_{os.getpid()}", short_lease=False) as ros:
        deadline = time.monotonic() + look_s
        wanted = "/" + namespace.strip("/")
        while True:
            found = sorted(f"{ns.rstrip('/')}/{name}" for name, ns in ros.node.get_node_names_and_namespaces()
                           if ns.rstrip("/") == wanted.rstrip("/") and name in SYSTEM_NODES)
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(_POLL_S)


def refuse_if_running(namespace: str, look_s: float = LOOK_S) -> None:
    """ConfigError naming the running nodes when a system already runs for this robot."""
    found = running_nodes(namespace, look_s)
    if found:
        domain = os.environ.get("ROS_DOMAIN_ID", "0")
        raise ConfigError(
            f"a system already runs for this robot: {', '.join(found)} (ROS_DOMAIN_ID {domain}); one per robot. "
            "Stop it first, or start this one with another --namespace; nothing was started or written"
        )


def refuse_if_port_taken(port: int, host: str = "127.0.0.1") -> None:
    """ConfigError when ``port`` on ``host`` is taken (another system's console, or another program): the
    console could not start, and with it the whole system would stop."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the console's server binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"port {port} on {host} is in use ({exc.strerror}; another heracles console?): give the console "
                "another --console-port, or 0 for none; nothing was started or written"
            ) from None
