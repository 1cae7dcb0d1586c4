"""The read replica: it follows the primary, a crash of it leaves the primary alone, and its store follows both."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest
from support.ports import free_port

from heracles_ros.embedded.process import pid_alive
from heracles_ros.embedded.replica import ensure_read_replica
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.errors import DatabaseUnavailable
from heracles_ros.graphdb import open_store


def test_read_replica_follows_the_primary_and_a_crash_leaves_the_primary_alone(tmp_path: Path) -> None:
    from heracles_ros.embedded.process import redis_client
    from heracles_ros.embedded.replica import REPLICA_MODULE_ARGS, ReadReplica
    from heracles_ros.errors import QueryError

    server = EmbeddedServer(tmp_path)
    primary = open_store(f"embedded:{tmp_path}")
    try:
        primary.write("UNWIND range(1, 50) AS i CREATE (:Object {nodeSymbol: 'O' + toString(i)})")
        read = open_store(f"embedded:{tmp_path}", read_replica=True)
        assert read.query("MATCH (n) RETURN count(n) AS n") == [{"n": 50}]
        primary.write("CREATE (:Object {nodeSymbol: 'O51'})")  # later writes stream to the replica
        deadline = time.monotonic() + 10
        while read.query("MATCH (n) RETURN count(n) AS n") != [{"n": 51}] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert read.query("MATCH (n) RETURN count(n) AS n") == [{"n": 51}]
        with pytest.raises(QueryError, match="read only replica"):
            read.write("CREATE (:Object {nodeSymbol: 'O52'})")
        # The server enforces the limits chosen for model queries.
        replica = ReadReplica(server)
        info = replica.running()
        assert info is not None
        limits = dict(zip(REPLICA_MODULE_ARGS[::2], REPLICA_MODULE_ARGS[1::2], strict=True))
        for name, value in limits.items():
            assert redis_client(info).execute_command("GRAPH.CONFIG", "GET", name)[1] == int(value), name
        assert len(read.query("UNWIND range(1, 20000) AS x RETURN x")) == int(limits["RESULTSET_SIZE"])

        primary_pid = server.running().pid  # type: ignore[union-attr]
        os.kill(info.pid, signal.SIGKILL)  # as a query that crashes the server would
        # A trusted read finds the replica gone, restarts it and runs once more.
        assert read.query("MATCH (n) RETURN count(n) AS n") == [{"n": 51}]
        assert replica.running().pid != info.pid  # type: ignore[union-attr]
        assert server.running().pid == primary_pid  # type: ignore[union-attr]
        primary.write("CREATE (:Object {nodeSymbol: 'O52'})")
        read.close()
    finally:
        primary.close()
        server.stop()
    assert ReadReplica(server).running() is None  # stopping the primary stops its replica


def test_the_read_replica_store_follows_the_database_through_restarts_and_a_stop(tmp_path: Path) -> None:
    """The model's queries (the replica store) follow the replica's state file like the primary's store:
    a replica restarted elsewhere is used at once, a store opened while the database is stopped fails each
    request clearly, and once ``heracles db start`` ran every store works again, nothing reopened."""
    from heracles_ros.embedded.replica import ReadReplica
    from heracles_ros.embedded.server import STOPPED_FILE

    uri = f"embedded:{tmp_path}"
    server = EmbeddedServer(tmp_path)
    replica = ReadReplica(server)
    count = "MATCH (n) RETURN count(n) AS n"
    with open_store(uri, graph="g") as store:
        store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    read = open_store(uri, graph="g", read_replica=True)
    late = None
    try:
        assert read.query_capped(count, max_rows=5).rows == [{"n": 1}]
        first = replica.running()
        assert first is not None
        # Another process restarts it on another port (a start takes the port its last stop recorded).
        assert replica.stop()
        elsewhere = next(port for port in iter(free_port, None) if port != first.port)
        (replica.data_dir / STOPPED_FILE).write_text(json.dumps({"port": elsewhere}))
        second = ensure_read_replica(server)
        assert (second.pid, second.port) != (first.pid, first.port) and second.port == elsewhere
        assert read.query_capped(count, max_rows=5).rows == [{"n": 1}]  # followed before the request
        assert replica.running() == second  # and not restarted once more

        assert server.stop()  # `heracles db stop`
        late = open_store(uri, graph="g", read_replica=True)  # e.g. a language server started now
        for store in (read, late):
            for _ in range(2):
                with pytest.raises(DatabaseUnavailable, match="not running: start it with heracles db start"):
                    store.query_capped(count, max_rows=5)
                with pytest.raises(DatabaseUnavailable, match="stopped with 'heracles db stop'"):
                    store.query(count)
        assert server.running() is None and replica.running() is None  # no request started either

        server.ensure_started()  # `heracles db start`: the replica comes with the next request
        for store in (read, late):
            assert store.query_capped(count, max_rows=5).rows == [{"n": 1}]
            assert store.query(count) == [{"n": 1}]
    finally:
        read.close()
        if late is not None:
            late.close()
        server.stop()


def test_a_replica_hung_before_it_loaded_is_started_again_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FalkorDB once stopped for good at a replica's first sync ("Flushing old data"): every model query then
    waited the whole start timeout. A replica that has not loaded and uses no CPU (here stopped with SIGSTOP)
    is killed and started again; it keeps no files."""
    from heracles_ros.embedded.replica import ReadReplica

    monkeypatch.setattr(ReadReplica, "STALL_S", 1.0)
    server = EmbeddedServer(tmp_path, start_timeout_s=30.0)
    with open_store(f"embedded:{tmp_path}", graph="g") as store:
        store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    try:
        first = ensure_read_replica(server)
        os.kill(first.pid, signal.SIGSTOP)
        started = time.monotonic()
        second = ensure_read_replica(server)
        assert second.pid != first.pid and time.monotonic() - started < 15.0
        assert not pid_alive(first.pid)
        with open_store(f"embedded:{tmp_path}", graph="g", read_replica=True) as read:
            assert read.query("MATCH (n) RETURN count(n) AS n") == [{"n": 1}]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(first.pid, signal.SIGCONT)
        server.stop()
