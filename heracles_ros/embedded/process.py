"""Where a server process is and whether it is there: its pid and port, probed without disturbing it.

Probes that send no command (:func:`accepts`) are safe at any time; :func:`answers` sends PING, so it
is only for a server whose log says it has loaded (see :mod:`heracles_ros.embedded.server`).
"""
from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from heracles_ros.embedded.data_files import AOF_DIR


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    port: int
    host: str = "127.0.0.1"


def redis_client(info: ServerInfo, timeout_s: float = 10.0, *, retries: int | None = None) -> Any:
    """A client of server ``info``; each command waits ``timeout_s``, and is tried again on a connection error or
    timeout ``retries`` times (None: redis-py's default, ten), so a caller that bounds its total wait asks for 0."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client = redis.Redis(host=info.host, port=info.port, socket_timeout=timeout_s,
                         password=os.environ.get("FALKORDB_PASSWORD"))
    if retries is not None:
        client.set_retry(Retry(NoBackoff(), retries))
    return client


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` runs. A zombie counts as gone: ours is reaped here; another process's
    (the server was started by a node that has not reaped it) stays until that process exits, and
    ``db stop`` must not wait for it."""
    if pid <= 0:
        return False  # no process (and waitpid would reap any child of ours)
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def accepts(info: ServerInfo) -> bool:
    """A TCP connection is taken (no command sent: safe at any time, loading or inside a MULTI/EXEC)."""
    try:
        with socket.create_connection((info.host, info.port), timeout=0.5):
            return True
    except OSError:
        return False


def answers(info: ServerInfo) -> bool:
    """PING; only for a server whose log says it has loaded (see the module docstring)."""
    try:
        with socket.create_connection((info.host, info.port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """No one listens on ``port`` (connections the stopped server closed may linger in TIME_WAIT: as
    redis itself, bind with SO_REUSEADDR, so that a restart keeps its port and clients find it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds process ``pid`` has used; None when it cannot be read."""
    with contextlib.suppress(OSError, psutil.Error):
        times = psutil.Process(pid).cpu_times()
        return float(times.user + times.system)
    return None


def loading_progress(pid: int) -> str:
    """``42 % of appendonly.aof.1.incr.aof (2.0 MB) read``: the position of the file a loading server reads.

    Bytes, not time: the replay of one bulk statement can take long after it was read.
    """
    with contextlib.suppress(OSError, psutil.Error):
        for file in psutil.Process(pid).open_files():
            target = Path(file.path)
            if target.parent.name == AOF_DIR or target.suffix == ".rdb":
                size = target.stat().st_size
                return f"{100 * file.position / max(size, 1):.0f} % of {target.name} ({size / 1e6:.1f} MB) read"
    return "progress unknown"
