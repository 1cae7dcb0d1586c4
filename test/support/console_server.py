"""The console's real server: under uvicorn on a free port in a thread, or as ``heracles console`` in a process."""
from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import uvicorn
from websockets.sync.client import ClientConnection, connect

from heracles_ros.console.app import ConsoleConfig, uvicorn_config
from heracles_ros.console.bridge import bridge_factory
from support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Served:
    config: ConsoleConfig
    #: The native id of the thread that runs the server's event loop.
    loop_thread_id: int = 0

    def loop_cpu_s(self) -> float:
        """CPU seconds the server's event loop thread has used so far."""
        (times,) = [t for t in psutil.Process().threads() if t.id == self.loop_thread_id]
        return float(times.user_time + times.system_time)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.config.port}"

    @property
    def origin(self) -> str:
        return self.base

    def socket(self, *, origin: str | None = None, headers: dict[str, str] | None = None, query: str = "",
               receive_buffer: int = 0) -> ClientConnection:
        """A page's WebSocket. ``receive_buffer``: a page that stops reading, with that many bytes of receive
        window and no keepalive of its own (what the server sends then piles up on the server's side)."""
        slow: dict[str, Any] = {}
        if receive_buffer:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            sock.connect(("127.0.0.1", self.config.port))
            slow = {"sock": sock, "ping_interval": None, "max_queue": 1}
        return connect(f"ws://127.0.0.1:{self.config.port}/ws{query}", origin=origin or self.origin,
                       additional_headers=headers, open_timeout=10, max_size=None, **slow)


@contextlib.contextmanager
def console_server(namespace: str, db_uri: str, graph: str, *, secret: str = "", static_dir: Any = None,
                   find_timeout_s: float = 5.0, send_buffer: int = 0) -> Iterator[Served]:
    """Started (its lifespan done: the bridge is up) within 30 s; stopped, its thread joined, after the block.

    ``send_buffer``: the kernel's send buffer of every accepted socket, in bytes (0: the kernel's own, which
    grows to megabytes), so a test fills it with a few messages rather than thousands."""
    fields: dict[str, Any] = {"static_dir": static_dir} if static_dir is not None else {}
    listening = socket.socket()
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if send_buffer:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)  # accepted sockets inherit it
    listening.bind(("127.0.0.1", 0))
    config = ConsoleConfig(port=int(listening.getsockname()[1]), namespace=namespace, db_uri=db_uri,
                           graph_name=graph, secret=secret, **fields)
    server = uvicorn.Server(uvicorn_config(config, bridge_factory(namespace, find_timeout_s=find_timeout_s)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, name="console-uvicorn",
                              daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30.0
        while not server.started:
            assert thread.is_alive(), "the console's server ended while starting"
            assert time.monotonic() < deadline, "the console's server did not start within 30 s"
            time.sleep(0.02)
        yield Served(config, thread.native_id or 0)
    finally:
        server.should_exit = True
        thread.join(15.0)
        listening.close()
        assert not thread.is_alive(), "the console's server did not end within 15 s"


@contextlib.contextmanager
def console_process(namespace: str, db_uri: str, graph: str, *extra: str) -> Iterator[tuple[subprocess.Popen[str],
                                                                                           Served]]:
    """``heracles console`` as the operator starts it, in a process of its own (its address printed once it
    listens, within 60 s); SIGINT after the block, which it must obey within 15 s."""
    config = ConsoleConfig(port=free_port(), namespace=namespace, db_uri=db_uri, graph_name=graph)
    command = [sys.executable, "-m", "heracles_ros.cli", "console", "--port", str(config.port), "--namespace",
               namespace, "--db", db_uri, "--graph", graph, *extra]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    listening = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "heracles console: open http" in line:
                listening.set()

    reader = threading.Thread(target=read, name="console-output", daemon=True)
    reader.start()
    try:
        assert listening.wait(60.0), f"heracles console did not listen within 60 s: {''.join(lines)[-2000:]}"
        yield process, Served(config, 0)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=15.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5.0)
            output = "".join(lines)[-2000:]
            raise AssertionError(f"heracles console did not end within 15 s of SIGINT: {output}") from None
        reader.join(5.0)
        assert code == 0, f"heracles console ended with {code}: {''.join(lines)[-2000:]}"


def receive_until(ws: ClientConnection, accept: Callable[[dict[str, Any]], bool], timeout_s: float,
                  seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The first message ``accept`` takes, within ``timeout_s`` (those before it appended to ``seen``)."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = json.loads(ws.recv(timeout=left))
        except TimeoutError:
            break
        if accept(message):
            return message
        if seen is not None:
            seen.append(message)
    raise AssertionError(f"no such message within {timeout_s:g} s (got {(seen or [])[-3:]})")
