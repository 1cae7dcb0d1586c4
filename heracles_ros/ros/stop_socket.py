"""The stop's local fast path: an abstract Unix socket beside the dispatcher's ``stop`` service.

``heracles stop`` from a fresh shell spent most of its time before the stop was
even sent: Python and rclpy starting (0.3-0.45 s on two loaded cores), then DDS
discovery of the service (0.03-1.4 s). A stop needs neither. On the dispatcher's
own machine the CLI reaches it through a socket named by the ROS domain and the
robot namespace, with no rclpy at all, and falls back to the ROS service when no
dispatcher listens there (another machine, another domain). Only ``stop`` and
``hard_stop`` are served: stopping is never gated, while resume and plans stay
on ROS. Reachable by the processes of this machine alone, as the ROS service is
by any participant of the domain.

The exchange is one line each way: ``stop`` or ``hard_stop``, then the service's
answer as ``{"success": ..., "message": ...}``.
"""
from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable

from heracles_ros.errors import SystemUnavailable

log = logging.getLogger(__name__)

#: What a client may ask, and whether it is the hard stop.
REQUESTS = {b"stop": False, b"hard_stop": True}
#: Longest request line read; seconds a connection may take to send it.
MAX_REQUEST = 64
READ_TIMEOUT_S = 1.0
#: Clients answered at once, each by a thread of its own. One past them is answered by the accepting thread,
#: with INLINE_READ_TIMEOUT_S to ask (a stop client asks as it connects): a flood of silent connections neither
#: grows threads without bound nor ends the accepting.
MAX_CLIENT_THREADS = 32
INLINE_READ_TIMEOUT_S = 0.05
#: Connections the kernel queues before accepting; past them a client's connect fails and it takes the ROS service.
LISTEN_BACKLOG = 128

#: Stops the robot (``hard``: the e-stop); the success and the message the stop service would answer.
StopHandler = Callable[[bool], tuple[bool, str]]


def address(namespace: str, domain_id: int) -> str:
    """The abstract socket of the dispatcher in ``namespace`` on ROS domain ``domain_id``."""
    return f"\0heracles_ros/stop/{domain_id}/{namespace.strip('/')}"


class StopSocket:
    """Serves the stop on :func:`address` from a thread of its own until :meth:`destroy`; OSError when the
    address is taken (another dispatcher for this robot on this machine)."""

    def __init__(self, namespace: str, domain_id: int, handler: StopHandler):
        self._handler = handler
        self._closing = threading.Event()
        self._client_threads = threading.BoundedSemaphore(MAX_CLIENT_THREADS)
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._socket.bind(address(namespace, domain_id))
            self._socket.listen(LISTEN_BACKLOG)
        except OSError:
            self._socket.close()
            raise
        self._socket.settimeout(0.2)  # how often the accepting thread looks at closing
        self._thread = threading.Thread(target=self._accept, name="stop-socket", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            # A thread per connection: a client that connects and says nothing never holds up the next stop.
            if self._client_threads.acquire(blocking=False):
                try:
                    threading.Thread(target=self._answer_in_thread, args=(connection,), name="stop-socket-client",
                                     daemon=True).start()
                    continue
                except RuntimeError:  # the process can start no more threads
                    self._client_threads.release()
            self._answer(connection, INLINE_READ_TIMEOUT_S)

    def _answer_in_thread(self, connection: socket.socket) -> None:
        try:
            self._answer(connection, READ_TIMEOUT_S)
        finally:
            self._client_threads.release()

    def _answer(self, connection: socket.socket, read_timeout_s: float) -> None:
        with connection:
            connection.settimeout(read_timeout_s)
            try:
                request = _read_line(connection)
                if request not in REQUESTS:
                    reply = (False, f"unknown request {request[:MAX_REQUEST]!r}: stop or hard_stop")
                else:
                    reply = self._handler(REQUESTS[request])
                connection.sendall(json.dumps({"success": reply[0], "message": reply[1]}).encode() + b"\n")
            except OSError as exc:  # the client went away, or took too long to ask
                log.warning("the local stop socket dropped a client: %s", exc)

    def destroy(self) -> None:
        self._closing.set()
        self._socket.close()
        self._thread.join(1.0)


def _read_line(connection: socket.socket) -> bytes:
    data = b""
    while b"\n" not in data and len(data) <= MAX_REQUEST:
        chunk = connection.recv(MAX_REQUEST + 1)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0].strip()


def send_stop(namespace: str, domain_id: int, *, hard: bool, timeout_s: float) -> tuple[bool, str] | None:
    """The dispatcher's answer through its local socket; None when no dispatcher listens there.

    SystemUnavailable when one took the stop but gave no answer within ``timeout_s``.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(timeout_s)
        try:
            connection.connect(address(namespace, domain_id))
        except OSError:
            return None
        try:
            connection.sendall(b"hard_stop\n" if hard else b"stop\n")
            reply = json.loads(_read_answer(connection))
            return bool(reply["success"]), str(reply["message"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemUnavailable(
                f"the dispatcher in {namespace!r} took the stop on its local socket but gave no answer within "
                f"{timeout_s:g} s ({exc!r})", name=address(namespace, domain_id).lstrip("\0")) from exc


def _read_answer(connection: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk:
            break
        data += chunk
    return data
