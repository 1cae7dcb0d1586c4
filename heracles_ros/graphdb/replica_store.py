"""A store on the embedded server's read replica, where the model's read-only queries run.

The replica process is :mod:`heracles_ros.embedded.replica`'s; this store follows it as
:class:`~heracles_ros.graphdb.embedded_store.EmbeddedStore` follows the primary.
"""
from __future__ import annotations

from pathlib import Path

from heracles_ros.embedded.process import ServerInfo
from heracles_ros.embedded.replica import ReadReplica, ensure_read_replica
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.errors import DatabaseUnavailable, QueryAborted, QueryTimeout
from heracles_ros.graphdb.embedded_store import NO_SERVER, EmbeddedStore
from heracles_ros.graphdb.store import CappedRows, GraphStore, Params, Row

OVERRUN_SLACK_S = 5.0


class ReadReplicaStore(EmbeddedStore):
    """A store on the read replica of the embedded database, where the model's queries run.

    It follows the replica's state file as :class:`EmbeddedStore` follows the primary's: before
    each request it reconnects when the replica is another process than the one it talks to, or
    its connection was lost; while the database is down every request fails with NOT_RUNNING; once
    the database is back the next request starts a replica for it if none runs (a replica keeps no
    files, so starting one undoes nothing the operator did) and works. A replica that crashed is
    restarted so too. A model query that overruns its limit (FalkorDB's time limit does not cover
    parsing, whose cost grows exponentially with nesting) would hold a replica thread for good: the
    replica is killed, and the caller gets the time-limit error. A replica that goes away while a
    model query runs gives :class:`QueryAborted`, an error the model can act on.
    """

    server: ReadReplica

    def __init__(self, replica: ReadReplica, info: ServerInfo, *, graph: str, timeout_s: float):
        super().__init__(replica, info, graph=graph, timeout_s=timeout_s)
        self.description = f"read replica of embedded FalkorDB ({replica.primary.data_dir}) graph {graph!r}"

    def _resolve(self) -> ServerInfo:
        """The replica, started and in sync, when the primary runs (which is never started from here)."""
        if self.server.primary.current() is None:
            raise DatabaseUnavailable(self._down_message())
        return ensure_read_replica(self.server.primary)

    def query(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        """Trusted reads (snapshot stamps): run once more on a fresh replica if it went away under them."""
        try:
            return super().query(cypher, params, timeout_s=timeout_s)
        except DatabaseUnavailable:
            if self._database_down():
                raise  # the database is down: no replica to try again on
            return super().query(cypher, params, timeout_s=timeout_s)  # _connect restarts the replica

    def query_capped(
        self, cypher: str, params: Params | None = None, *, max_rows: int, timeout_s: float | None = None
    ) -> CappedRows:
        import redis

        self._connect()  # the database down, or a replica that cannot be started: DatabaseUnavailable
        pid = self._pid
        try:
            return super().query_capped(cypher, params, max_rows=max_rows, timeout_s=timeout_s)
        except QueryTimeout as exc:
            if not isinstance(exc.__cause__, (TimeoutError, redis.exceptions.TimeoutError)):
                raise  # the server stopped it at its limit: nothing holds a thread
            self.server.kill(pid)
            raise QueryTimeout(
                f"{exc}. It overran its limit (FalkorDB's limit does not cover parsing, which grows "
                "exponentially with nesting), so the read replica was restarted to free it"
            ) from exc
        except DatabaseUnavailable as exc:
            if isinstance(exc.__cause__, (TimeoutError, redis.exceptions.TimeoutError)):
                self.server.kill(pid)  # no reply and no PING either: hung, it would never be replaced
            self._conn = None  # the next query starts a fresh replica (or says why it cannot)
            if self._database_down():
                raise  # the database itself was stopped: NOT_RUNNING says so
            raise QueryAborted(
                f"the read replica went away while running this query ({exc}): it crashed on a query, or "
                "was restarted to stop one that overran its limit. It is started again for the next query; "
                "if this query keeps failing so, simplify it"
            ) from exc

    def caught_up(self, wait_s: float) -> bool:
        return self.server.caught_up(wait_s)

    def _reply_wait_s(self, limit_s: float) -> float:
        """A reply may wait one limit behind a replicated write (itself waiting for running queries),
        then take one limit to run; past that plus the slack the query overran and holds a thread."""
        return 2 * limit_s + OVERRUN_SLACK_S


def open_read_store(data_dir: Path, *, graph: str = "heracles", timeout_s: float = 10.0) -> GraphStore:
    """A store on the read replica of the embedded database in ``data_dir`` (see :class:`ReadReplicaStore`).

    The replica (and the database, unless the operator stopped it) is started now. After
    ``heracles db stop`` the store is still returned: its requests fail with NOT_RUNNING until
    ``heracles db start``, then work.
    """
    server = EmbeddedServer(data_dir)
    try:
        info = ensure_read_replica(server)
    except DatabaseUnavailable:
        if not server.stopped_by_operator():
            raise
        info = NO_SERVER
    return ReadReplicaStore(ReadReplica(server), info, graph=graph, timeout_s=timeout_s)
