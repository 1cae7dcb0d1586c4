"""The stop's local fast path: the dispatcher's socket answers as its stop service, and nothing can hold it up."""
from __future__ import annotations

import json
import socket
import threading
import time
import uuid

import pytest

from heracles_ros.errors import SystemUnavailable
from heracles_ros.ros.stop_socket import (
    INLINE_READ_TIMEOUT_S,
    MAX_CLIENT_THREADS,
    READ_TIMEOUT_S,
    StopSocket,
    address,
    send_stop,
)


@pytest.fixture
def namespace() -> str:
    return f"/stop_socket_{uuid.uuid4().hex[:8]}"


def test_a_stop_and_a_hard_stop_reach_the_handler_and_come_back_with_its_answer(namespace):
    asked: list[bool] = []

    def handler(hard: bool) -> tuple[bool, str]:
        asked.append(hard)
        return (not hard, "hard-stopped" if hard else "stopped")

    server = StopSocket(namespace, 7, handler)
    try:
        assert send_stop(namespace, 7, hard=False, timeout_s=2.0) == (True, "stopped")
        assert send_stop(namespace, 7, hard=True, timeout_s=2.0) == (False, "hard-stopped")
        assert asked == [False, True]
        # Another domain or namespace is another dispatcher: nobody listens there.
        assert send_stop(namespace, 8, hard=False, timeout_s=2.0) is None
        assert send_stop(namespace + "x", 7, hard=False, timeout_s=2.0) is None
    finally:
        server.destroy()
    assert send_stop(namespace, 7, hard=False, timeout_s=2.0) is None  # closed with the node


def test_a_second_dispatcher_for_the_same_robot_cannot_take_the_address(namespace):
    server = StopSocket(namespace, 7, lambda hard: (True, "first"))
    try:
        with pytest.raises(OSError):
            StopSocket(namespace, 7, lambda hard: (True, "second"))
        assert send_stop(namespace, 7, hard=False, timeout_s=2.0) == (True, "first")
    finally:
        server.destroy()


def test_a_client_that_says_nothing_never_holds_up_the_next_stop(namespace):
    server = StopSocket(namespace, 7, lambda hard: (True, "stopped"))
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        silent.connect(address(namespace, 7))
        started = time.monotonic()
        assert send_stop(namespace, 7, hard=False, timeout_s=2.0) == (True, "stopped")
        assert time.monotonic() - started < 0.5
    finally:
        silent.close()
        server.destroy()


def test_a_flood_of_silent_clients_neither_grows_threads_without_bound_nor_holds_up_a_stop(namespace):
    server = StopSocket(namespace, 7, lambda hard: (True, "stopped"))
    before = threading.active_count()
    silent = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2 * MAX_CLIENT_THREADS)]
    try:
        for client in silent:
            client.connect(address(namespace, 7))
        started = time.monotonic()
        assert send_stop(namespace, 7, hard=False, timeout_s=5.0) == (True, "stopped")
        assert time.monotonic() - started < READ_TIMEOUT_S + 2 * MAX_CLIENT_THREADS * INLINE_READ_TIMEOUT_S
        assert threading.active_count() <= before + MAX_CLIENT_THREADS
    finally:
        for client in silent:
            client.close()
        server.destroy()
    assert send_stop(namespace, 7, hard=False, timeout_s=2.0) is None


def test_anything_else_than_stop_is_answered_with_an_error_and_moves_nothing(namespace):
    asked: list[bool] = []
    server = StopSocket(namespace, 7, lambda hard: (asked.append(hard) or True, "stopped"))
    try:
        for request in (b"resume\n", b"x" * 500 + b"\n", b"\n"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(2.0)
                client.connect(address(namespace, 7))
                client.sendall(request)
                reply = json.loads(client.makefile("rb").readline())
            assert reply["success"] is False and "unknown request" in reply["message"], reply
        assert asked == []
    finally:
        server.destroy()


def test_a_stop_taken_but_not_answered_is_reported_within_the_bound(namespace):
    release = threading.Event()
    server = StopSocket(namespace, 7, lambda hard: (release.wait(10.0), "late"))
    try:
        started = time.monotonic()
        unanswered = r"took the stop on its local socket but gave no answer within 0\.3 s"
        with pytest.raises(SystemUnavailable, match=unanswered):
            send_stop(namespace, 7, hard=False, timeout_s=0.3)
        assert time.monotonic() - started < 1.0
    finally:
        release.set()
        server.destroy()
