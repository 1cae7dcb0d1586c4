"""Every backend's store follows its server through an outage under the same URI: clear errors while it
is gone, and the next request works once it is back, on the held store (nothing reopened)."""
from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

import pytest

from heracles_ros.errors import DatabaseUnavailable, QueryRefused
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.store import GraphStore


class _Outage:
    """A loopback TCP relay to a real server on a fixed port, which can be cut (listener and every
    connection closed, as when the server goes away) and brought back on the same port."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, []
        for sock in ([listener] if listener else []) + sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            with self._lock:
                self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _target(backend: Any) -> tuple[int, str]:
    if backend.bolt is not None:
        return backend.bolt.bolt_port, "bolt://127.0.0.1:{port}/" + "heracles"
    return backend.falkordb.port, "falkordb://127.0.0.1:{port}"


def test_a_held_store_fails_clearly_while_its_server_is_gone_and_works_when_it_is_back(backend: Any) -> None:
    port, uri = _target(backend)
    outage = _Outage(port)
    outage.up()
    store = open_store(uri.format(port=outage.port), graph="outage", timeout_s=5.0)
    count = "MATCH (p:OutageProbe) RETURN count(p) AS n"
    try:
        store.write("CREATE (:OutageProbe)")
        assert store.query(count)[0]["n"] >= 1
        outage.down()
        for _ in range(2):  # every request while it is gone: a clear error, soon
            started = time.monotonic()
            with pytest.raises(DatabaseUnavailable):
                store.query(count)
            assert time.monotonic() - started < 10.0
        outage.up()
        assert store.query(count)[0]["n"] >= 1  # the first request after it is back works
        store.write("MATCH (p:OutageProbe) DELETE p")
    finally:
        store.close()
        outage.down()


_NUL = "lamp\x00\" RETURN 1 AS injected //"


@pytest.mark.parametrize(
    "params",
    [{"v": _NUL}, {"v": "a\x00b"}, {"v": ["ok", _NUL]}, {"v": {"k": _NUL}}, {"v": "x", "w\x00": 1}],
    ids=["value", "short-value", "in-list", "in-map", "in-name"],
)
def test_a_nul_in_a_parameter_never_changes_which_query_runs(store: GraphStore, params: dict[str, Any]) -> None:
    """Corrections' texts, model-supplied strings and ids reach queries as parameters: a NUL in one
    either travels intact (Bolt) or is refused before anything is sent (FalkorDB cuts the query text there)."""
    store.write("CREATE (:NulProbe {touched: false})")
    touched = "MATCH (p:NulProbe) RETURN p.touched AS t"
    runs = {
        "write": lambda: store.write("MATCH (p:NulProbe) SET p.touched = true RETURN $v AS v", params),
        "write_many": lambda: store.write_many([("MATCH (p:NulProbe) SET p.touched = size([$v]) = 1", params)]),
        "query": lambda: store.query("RETURN $v AS v", params),
        "query_capped": lambda: store.query_capped("RETURN $v AS v", params, max_rows=10).rows,
    }
    for how, run in runs.items():
        try:
            rows = run()
        except QueryRefused as exc:
            assert "NUL" in str(exc), how
            assert store.query(touched) == [{"t": False}], how  # nothing ran
            continue
        if rows is not None:
            assert rows == [{"v": params["v"]}], how  # the value arrived whole, and the query's own rows came back
        if how.startswith("write"):
            assert store.query(touched) == [{"t": True}], how
        store.write("MATCH (p:NulProbe) SET p.touched = false")
