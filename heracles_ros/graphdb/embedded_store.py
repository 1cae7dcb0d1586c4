"""A store on the embedded FalkorDB server of a data directory, that follows it through restarts.

The server itself (started, found, stopped) is :mod:`heracles_ros.embedded`'s; this is the client side.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from heracles_ros.embedded.maintenance import compact
from heracles_ros.embedded.process import ServerInfo, accepts, pid_alive
from heracles_ros.embedded.server import NOT_RUNNING, EmbeddedServer
from heracles_ros.errors import DatabaseError, DatabaseUnavailable
from heracles_ros.graphdb.falkordb_store import FalkorStore
from heracles_ros.graphdb.store import GraphStore, Params


class EmbeddedStore(FalkorStore):
    """A store on the embedded server of a directory that follows it through stops, crashes and restarts.

    Before each request it reads which server ``server.json`` names (a small
    file); when that is another process than the one it talks to (a restart,
    perhaps on another port), or its connection was lost, it resolves the
    server again (:meth:`_resolve`) and connects to it, and while none runs
    every request fails with NOT_RUNNING. It never starts a server itself, so
    ``heracles db stop`` is not undone behind the operator's back, and it waits
    for nothing: the caller's own retry (the mirror's ``retry_period_s``) or the
    next request tries again.
    """

    def __init__(self, server: EmbeddedServer, info: ServerInfo, *, graph: str, timeout_s: float):
        super().__init__(info.host, info.port, graph=graph, timeout_s=timeout_s)
        self.server = server
        self._pid = info.pid
        self.description = f"embedded FalkorDB ({server.data_dir}) graph {graph!r}"

    def _connect(self) -> tuple[Any, Any]:
        recorded = self.server.recorded()
        if self._conn is None or recorded is None or recorded.pid != self._pid:
            self._follow()
        return super()._connect()

    def _follow(self) -> None:
        with self._conn_lock:
            recorded = self.server.recorded()
            if self._conn is not None and recorded is not None and recorded.pid == self._pid:
                return  # another thread followed it meanwhile
            info = self._resolve()
            old, self._conn = self._conn, None
            self._host, self._port, self._pid = info.host, info.port, info.pid
        if old is not None:
            with contextlib.suppress(Exception):
                old[0].connection.close()

    def _resolve(self) -> ServerInfo:
        """The server to talk to now, from the state file (no connection); DatabaseUnavailable while none runs."""
        info = self.server.current()
        if info is None:
            raise DatabaseUnavailable(self._down_message())
        return info

    def write_batches(
        self, batches: Iterable[Sequence[tuple[str, Params]]], *, timeout_s: float | None = None
    ) -> None:
        """A bulk write (a first load), then a compaction started at once: its tail would replay slowly."""
        super().write_batches(batches, timeout_s=timeout_s)
        with contextlib.suppress(Exception):  # an optimisation: the data is written
            compact(self.server)

    def _down_message(self) -> str:
        database = self.server.database
        if database.loading():
            return f"the database in {database.data_dir} is still loading its files; try again shortly"
        stopped = " (stopped with 'heracles db stop')" if database.stopped_by_operator() else ""
        return f"{NOT_RUNNING}{stopped}; {self.description}"

    def _translate(self, exc: BaseException) -> DatabaseError:
        error = super()._translate(exc)
        if isinstance(error, DatabaseUnavailable) and self._database_down():
            return DatabaseUnavailable(f"{self._down_message()} ({exc})")
        return error

    def _database_down(self) -> bool:
        """No database runs: none is recorded, or the recorded one exits or refuses connections within
        _EXIT_WAIT_S (one killed a moment ago may not have exited yet; a busy one still accepts them)."""
        info = self.server.database.current()
        if info is None:
            return True
        deadline = time.monotonic() + _EXIT_WAIT_S
        while pid_alive(info.pid) and accepts(info):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True


#: How long a store that lost its connection gives the recorded server to show it is gone (exited, or
#: refusing connections) before it reports the loss as the server's own error rather than NOT_RUNNING.
_EXIT_WAIT_S = 0.5


def open_embedded_store(data_dir: Path, *, graph: str = "heracles", timeout_s: float = 10.0) -> GraphStore:
    """A store that follows the embedded server in ``data_dir`` (started now if it is down and the
    operator did not stop it: see :mod:`heracles_ros.embedded.server`).

    After ``heracles db stop`` the store is still returned (a node starts and waits for the
    database): its requests fail with NOT_RUNNING until ``heracles db start``.
    """
    server = EmbeddedServer(data_dir)
    try:
        info = server.ensure_started(explicit=False)
    except DatabaseUnavailable:
        if not server.stopped_by_operator():
            raise
        info = NO_SERVER
    return EmbeddedStore(server, info, graph=graph, timeout_s=timeout_s)


#: What a store opened while the operator had stopped the server points at until it follows one.
NO_SERVER = ServerInfo(pid=-1, port=0)

