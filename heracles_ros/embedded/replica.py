"""The read replica of an embedded server: a copy of its graphs where the model's read-only queries run.

A query that crashes or starves the replica leaves the primary, where the mirror writes, untouched;
the replica keeps no files and is started again on next use. Its store is
:class:`~heracles_ros.graphdb.replica_store.ReadReplicaStore`.
"""
from __future__ import annotations

import time

from heracles_ros.embedded.data_files import REPLICA_DIR
from heracles_ros.embedded.maintenance import COMPACT_LOCK, restore_fork_settings
from heracles_ros.embedded.process import ServerInfo, redis_client
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.errors import DatabaseUnavailable

#: FalkorDB module arguments of the read replica, where model-written queries run: each query is
#: bounded by the server itself (time, memory, rows), the queue is bounded (a flood is refused,
#: not queued), and enough threads that a trivial read is not stuck behind four expensive ones.
REPLICA_MODULE_ARGS: tuple[str, ...] = (
    # ms: a query that names no timeout gets 10 s (the tool's); one asking for more than
    # 60 s is refused by the server ("cannot exceed the TIMEOUT_MAX"), not run.
    "TIMEOUT_DEFAULT", "10000",
    "TIMEOUT_MAX", "60000",
    "QUERY_MEM_CAPACITY", str(512 * 2**20),  # bytes per query
    "RESULTSET_SIZE", "10000",  # rows; the tool shows the model far fewer
    "MAX_QUEUED_QUERIES", "32",
    "THREAD_COUNT", "8",  # docs/known-issues.md#falkordb-server-defaults
)


class ReadReplica(EmbeddedServer):
    """A read-only copy of a primary's graphs (redis replication), with the query limits of REPLICA_MODULE_ARGS.

    Started here; stopped with its primary (:meth:`EmbeddedServer.stop_replica`)."""

    def __init__(self, primary: EmbeddedServer):
        super().__init__(primary.data_dir / REPLICA_DIR, start_timeout_s=primary.start_timeout_s,
                         progress=primary.progress)
        self.primary = primary

    @property
    def database(self) -> EmbeddedServer:
        """The primary: a replica is started and stopped with it."""
        return self.primary

    def follow(self, primary: ServerInfo) -> None:
        """Replicate ``primary`` (again, if it came back on another port) and wait until in sync."""
        info = self.running()
        if info is None:
            raise DatabaseUnavailable(f"the read replica in {self.data_dir} is not running")
        client = redis_client(info)
        replication = client.info("replication")
        if replication.get("master_port") != primary.port or replication.get("master_host") != primary.host:
            client.execute_command("REPLICAOF", primary.host, primary.port)
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            replication = client.info("replication")
            if replication.get("master_link_status") == "up" and not replication.get("master_sync_in_progress"):
                return
            if time.monotonic() >= deadline:
                raise DatabaseUnavailable(
                    f"the read replica in {self.data_dir} did not sync with its primary within "
                    f"{self.start_timeout_s:g} s (link {replication.get('master_link_status')!r})"
                )
            time.sleep(0.05)

    def caught_up(self, wait_s: float) -> bool:
        """Whether the replica applies, within ``wait_s``, the primary's replication stream as it stands now
        (every write the primary took before the call); False too when either server is not running.

        A replica busy applying a large write answers nothing meanwhile: it is waited for (up to ``wait_s``),
        not taken for gone, so the servers are found from their state and logs (:meth:`current`), not a PING."""
        import redis

        deadline = time.monotonic() + wait_s
        primary, replica = self.primary.current(), self.current()
        if primary is None or replica is None:
            return False
        try:
            target = int(redis_client(primary, timeout_s=wait_s + 0.1, retries=0).info("replication")
                         ["master_repl_offset"])
            client = redis_client(replica, timeout_s=max(deadline - time.monotonic(), 0.0) + 0.1, retries=0)
            while True:
                replication = client.info("replication")
                if (replication.get("master_link_status") == "up"
                        and int(replication.get("slave_repl_offset", -1)) >= target):
                    return True
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.01)
        except (redis.RedisError, OSError, KeyError, ValueError):
            return False

    def _check_format(self) -> None:
        """Nothing to check: a replica keeps no files of its own."""

    def _role_args(self) -> tuple[str, ...]:
        primary = self.primary.running()
        if primary is None:
            raise DatabaseUnavailable(f"the database in {self.primary.data_dir} is not running; no replica without it")
        return ("--appendonly", "no", "--save", "", "--replicaof", primary.host, str(primary.port),
                "--replica-read-only", "yes")

    def _module_args(self) -> tuple[str, ...]:
        return REPLICA_MODULE_ARGS

    def _after_start(self) -> None:
        """Nothing to stamp or compact."""

    def _hung(self, pid: int, *, loaded: bool) -> bool:
        """No CPU used for STALL_S, loaded or not (docs/known-issues.md#falkordb-load-hang): a replica keeps no
        files, so it is ended and started again."""
        return self._stalled(pid)

    def kill(self, pid: int, wait_s: float = 5.0) -> None:
        """End replica ``pid`` at once, if it still runs here (it keeps no files: nothing is lost).

        Frees the threads of queries it would never finish; the next
        :func:`ensure_read_replica` starts a fresh one.
        """
        self._end(pid, wait_s)


def ensure_read_replica(primary: EmbeddedServer) -> ServerInfo:
    """The read replica of ``primary``'s graphs (started, and the primary too, if needed), in sync.

    The language layer's read-only queries go there (:func:`~heracles_ros.graphdb.replica_store.open_read_store`):
    a query that crashes or starves it leaves the primary, where the mirror
    writes, untouched; it is restarted on next use. It keeps no files.
    """
    info = primary.ensure_started(explicit=False)
    with primary.lock(COMPACT_LOCK):  # waits for a rebuild, and undoes what a killed one held off
        restore_fork_settings(redis_client(info))
    replica = ReadReplica(primary)
    replica_info = replica.ensure_started()
    replica.follow(info)
    return replica_info
