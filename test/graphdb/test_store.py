"""Every backend's store follows its server through an outage under the same URI: clear errors while it
is gone, and the next request works once it is back, on the held store (nothing reopened)."""
from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

import pytest

from heracles_ros.errors import DatabaseUnavailable
from heracles_ros.graphdb import open_store


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
