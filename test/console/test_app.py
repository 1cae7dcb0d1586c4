"""The console's web server as a browser and an attacker meet it: real uvicorn, real sockets, a real graph.

No robot nodes run here (the ROS side finds nothing): these tests are about
what the server serves and whom it lets in.
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
import rclpy
from geometry_msgs.msg import Point
from heracles_ros.msg import DispatchProgress
from support.cli import heracles
from support.console_server import console_server, receive_until
from support.ros import ros_session, wait_for_subscribers, wait_until
from websockets.exceptions import ConnectionClosed, InvalidStatus

from heracles_ros.console.app import STATIC_DIR
from heracles_ros.ros.qos import reliable

pytestmark = pytest.mark.backends("falkordb")

SECRET = "s3cret token/+"
PAGE = "<!doctype html><title>heracles console (test page)</title>"


@pytest.fixture
def static_dir(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "app.js").write_text("console.log('hi');")
    return tmp_path


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers


def namespace() -> str:
    return f"/console_{uuid.uuid4().hex[:8]}"


def scene_symbols(store: Any) -> dict[str, str]:
    """symbol -> layer of what the map must show, read from the graph (rooms, mesh places, objects)."""
    layers = {"Room": "room", "MeshPlace": "place", "Object": "object"}
    return {row["s"]: layer for label, layer in layers.items()
            for row in store.query(f"MATCH (n:{label}) WHERE n.x IS NOT NULL RETURN n.nodeSymbol AS s")}


def test_the_page_its_assets_and_the_whole_map_are_served_on_loopback(ros_domain_id, falkordb_uri, graph_name,
                                                                      small_store, static_dir):
    ns = namespace()
    with console_server(ns, falkordb_uri, graph_name, static_dir=static_dir) as served:
        status, body, headers = fetch(served.base + "/")
        assert (status, body) == (200, PAGE)
        policy = headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, policy
        assert f"ws://127.0.0.1:{served.config.port}" in policy and headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"] == "no-referrer"
        assert fetch(served.base + "/static/app.js")[:2] == (200, "console.log('hi');")
        health = json.loads(fetch(served.base + "/healthz")[1])
        assert re.fullmatch(rf"/heracles_console_[0-9a-f]{{6}}_{os.getpid()}", health.pop("node")), health
        assert health == {"ok": True, "tabs": 0, "commands": 0}
        with served.socket() as ws:
            hello = json.loads(ws.recv(timeout=10))
            assert hello["type"] == "hello" and hello["namespace"] == ns and hello["secured"] is False
            assert hello["history_max_s"] == 7 * 86400  # the page offers no longer history window
            # The whole map, once read: rooms and objects, then the places with their edges.
            scene = receive_until(ws, lambda m: m["type"] == "scene" and m["upsert"], 30.0)
            drawn: dict[str, str] = {}
            edges: list[list[str]] = []
            while True:
                drawn.update({item["symbol"]: item["layer"] for item in scene["upsert"]})
                drawn.update({symbol: "place" for symbol in scene["places"]["symbols"]})
                edges += scene["edges"]["add"]
                if not scene["more"]:
                    break
                scene = receive_until(ws, lambda m: m["type"] == "scene", 30.0)
            assert drawn == scene_symbols(small_store)
            assert edges, "the place graph's edges come with the whole map"


def test_every_module_and_style_the_page_loads_ships_in_the_package_and_is_served(ros_domain_id, falkordb_uri,
                                                                                    graph_name):
    """The page's own index.html, and every file it and its ES modules load (followed import by import), comes
    from the package's assets: a module left out of the package or imported under a wrong name would be a blank
    console. Module scripts run only when served as JavaScript."""
    with console_server(namespace(), falkordb_uri, graph_name) as served:
        status, page, _ = fetch(served.base + "/")
        assert status == 200 and '<script type="module" src="/static/main.js">' in page, page[:200]
        wanted = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
        assert "/static/main.js" in wanted and "/static/console.css" in wanted, wanted
        loaded: dict[str, str] = {}
        while wanted:
            path = wanted.pop()
            if path in loaded:
                continue
            status, text, headers = fetch(served.base + path)
            assert status == 200, (path, status)
            loaded[path] = text
            if path.endswith(".js"):
                assert "javascript" in headers["Content-Type"], (path, headers["Content-Type"])
                wanted += [f"/static/{name}" for name in re.findall(r'^import .* from "\./([\w.-]+)";$', text, re.M)]
    shipped = {f"/static/{path.name}" for path in STATIC_DIR.iterdir() if path.suffix in (".js", ".css")}
    assert set(loaded) == shipped, f"loaded by nothing: {sorted(shipped - set(loaded))}"
    assert {"/static/connection.js", "/static/map.js", "/static/conversation.js", "/static/panels.js"} <= set(loaded)


def test_a_secret_is_needed_for_every_request_and_the_cookie_opens_the_socket(ros_domain_id, falkordb_uri,
                                                                               graph_name, small_store, static_dir):
    with console_server(namespace(), falkordb_uri, graph_name, static_dir=static_dir, secret=SECRET) as served:
        assert fetch(served.base + "/")[0] == 401
        assert fetch(served.base + "/healthz")[0] == 401
        assert fetch(served.base + "/?token=wrong")[0] == 403
        quoted = urllib.request.quote(SECRET, safe="")
        status, body, headers = fetch(f"{served.base}/?token={quoted}")
        assert (status, body) == (200, PAGE)
        cookie = headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie
        pair = cookie.split(";", 1)[0]
        assert fetch(served.base + "/static/app.js", {"Cookie": pair})[0] == 200
        assert fetch(served.base + "/static/app.js", {"Cookie": "heracles_console=nope"})[0] == 403
        for headers_sent in ({}, {"Cookie": "heracles_console=nope"}):
            with pytest.raises(InvalidStatus) as refused:
                served.socket(headers=headers_sent)
            assert refused.value.response.status_code == 403
        with served.socket(headers={"Cookie": pair}) as ws:
            hello = json.loads(ws.recv(timeout=10))
            assert hello["type"] == "hello" and hello["secured"] is True


def test_a_socket_from_another_origin_or_a_page_under_another_host_name_is_refused(
        ros_domain_id, falkordb_uri, graph_name, small_store, static_dir):
    with console_server(namespace(), falkordb_uri, graph_name, static_dir=static_dir) as served:
        for origin in ("http://evil.example:8765", f"http://localhost:{served.config.port + 1}"):
            with pytest.raises(InvalidStatus) as refused:
                served.socket(origin=origin)
            assert refused.value.response.status_code == 403, origin
        with served.socket() as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "hello"
        # A site that points its own name at 127.0.0.1 (DNS rebinding) is same-origin with itself, not with us.
        port = served.config.port
        assert fetch(served.base + "/", {"Host": f"evil.example:{port}"})[0] == 403
        assert fetch(served.base + "/healthz", {"Host": f"localhost:{port}"})[0] == 200


def test_bad_messages_get_an_error_and_an_oversized_one_closes_the_socket(ros_domain_id, falkordb_uri, graph_name,
                                                                          small_store, static_dir):
    symbol, cls = next((r["s"], r["c"]) for r in small_store.query(
        "MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c ORDER BY s LIMIT 1"))
    with console_server(namespace(), falkordb_uri, graph_name, static_dir=static_dir) as served, \
            served.socket() as ws:
        for bad, words, about in (
            ("not json", "not a JSON message", ""),
            ('{"op": "fly"}', "unknown op 'fly'", "fly"),
            ('{"op": "command"}', "command: missing field 'text'", "command"),
            (json.dumps({"op": "command", "text": "x" * 1001}), "text is 1001 characters, at most 1000",
             "command"),
            ('{"op": "approve", "command_id": 7}', "approve: command_id must be a string", "approve"),
            ('{"op": "changes", "since_s": -5}', "changes: since_s must be seconds", "changes"),
            ('{"op": "choose", "command_id": "c", "symbol": "O3) and go home ("}',
             "choose: symbol 'O3) and go home (' is not a scene symbol", "choose"),
        ):
            ws.send(bad)
            error = receive_until(ws, lambda m: m["type"] == "error", 10.0)
            assert words in error["message"] and error["about"] == about, (bad, error)
        ws.send(json.dumps({"op": "object", "symbol": symbol}))  # still usable after all that
        details = receive_until(ws, lambda m: m["type"] == "object", 10.0)
        assert (details["symbol"], details["cls"], details["error"]) == (symbol, cls, "")
        ws.send(json.dumps({"op": "object", "symbol": "O99999"}))
        assert "no object O99999" in receive_until(ws, lambda m: m["type"] == "object", 10.0)["error"]

        for _ in range(30):
            ws.send(json.dumps({"op": "fly"}))
        errors = [receive_until(ws, lambda m: m["type"] == "error", 10.0)["message"] for _ in range(30)]
        assert any("more than 20 messages per second" in e for e in errors), errors

        ws.send(json.dumps({"op": "ask", "text": "x" * (20 * 1024), "request_id": "r"}))
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


#: Every kind of malformed message a page (or anyone who can open the socket) can send, as sent on the wire,
#: with words of the error it gets and the op that error is about.
MALFORMED: list[tuple[str | bytes, str, str]] = [
    ('{"op": "command", "text": "go to the \\ud800 kitchen"}', "command: text holds '\\ud800' at character 10",
     "command"),  # a lone surrogate: JSON carries it, UTF-8 (and so every reply and ROS message) cannot
    ('{"op": "ask", "text": "how many?", "request_id": "\\udfff"}', "ask: request_id holds '\\udfff'", "ask"),
    ('{"op": "resume", "operator": "ana", "reason": "x\\ud83d"}', "resume: reason holds '\\ud83d'", "resume"),
    ('{"op": "\\ud800stop"}', "unknown op '\\ud800stop'", ""),
    ('{"op": "command", "text": "go\\u0000 and jump"}', "command: text holds '\\x00' at character 2", "command"),
    ('{"op": "command", "text": "bell\\u0007"}', "command: text holds '\\x07'", "command"),
    ("[" * 8000 + "]" * 8000, "not a JSON message: nested too deeply", ""),
    ('{"op": "changes", "since_s": NaN}', "changes: since_s must be seconds", "changes"),
    ('{"op": "changes", "since_s": Infinity}', "changes: since_s must be seconds", "changes"),
    ('{"op": "changes", "since_s": 1e999}', "changes: since_s must be seconds", "changes"),
    ('{"op": "changes", "since_s": ' + "9" * 5000 + "}", "not a JSON message", ""),
    ('{"op": "changes", "since_s": 2592000}', "changes: since_s must be seconds in (0, 604800]", "changes"),
    ('{"op": "changes", "since_s": true}', "changes: since_s must be seconds", "changes"),
    ("null", "a message must be a JSON object", ""),
    ('["stop"]', "a message must be a JSON object", ""),
    ('"stop"', "a message must be a JSON object", ""),
    ("17", "a message must be a JSON object", ""),
    ("", "not a JSON message", ""),
    ("{}", '"op" must be a string', ""),
    ('{"op": null}', '"op" must be a string', ""),
    ('{"op": ["stop"]}', '"op" must be a string', ""),
    ('{"op": "' + "f" * 5000 + '"}', "unknown op '" + "f" * 100 + "'", "f" * 100),
    ('{"op": "command", "text": "x", "execute": "yes"}', "command: execute must be true or false", "command"),
    ('{"op": "command", "text": " \\n\\t "}', "command: text is empty", "command"),
    ('{"op": "object", "symbol": {"O1": 1}}', "object: symbol must be a string", "object"),
    ('{"op": "cancel", "command_id": null}', "cancel: command_id must be a string", "cancel"),
    ('{"op": "resume", "operator": "' + "n" * 101 + '"}', "resume: operator is 101 characters, at most 100",
     "resume"),
    (b"\xff\xfe{", "not a JSON message", ""),  # a binary frame that is not UTF-8
    (b'{"op": "fly"}', "unknown op 'fly'", "fly"),  # a binary frame is read like a text one
]


def test_every_kind_of_malformed_message_gets_its_error_and_the_tab_stays_alive(ros_domain_id, falkordb_uri,
                                                                                graph_name, small_store, static_dir):
    symbol = small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")[0]["s"]
    with console_server(namespace(), falkordb_uri, graph_name, static_dir=static_dir) as served, \
            served.socket() as ws, served.socket() as other:
        for bad, words, about in MALFORMED:
            ws.send(bad)
            error = receive_until(ws, lambda m: m["type"] == "error", 10.0)
            assert words in error["message"] and error["about"] == about, (bad[:80], error)
            time.sleep(0.06)  # under the rate limit: every one is answered, none dropped
        for tab in (ws, other):  # both tabs still answer, the one that sent all that included
            tab.send(json.dumps({"op": "object", "symbol": symbol}))
            assert receive_until(tab, lambda m: m["type"] == "object", 10.0)["symbol"] == symbol
        assert json.loads(fetch(served.base + "/healthz")[1])["tabs"] == 2


def silent_socket(served: Any) -> socket.socket:
    """A WebSocket opened by hand that never reads again after the handshake (a receive window of 4 KiB, so what
    the server sends piles up on the server's side)."""
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(10)
    raw.connect(("127.0.0.1", served.config.port))
    raw.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{served.config.port}\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
                 f"Sec-WebSocket-Version: 13\r\nOrigin: {served.origin}\r\n\r\n").encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += raw.recv(1)
    assert answer.startswith(b"HTTP/1.1 101"), answer
    return raw


def test_pages_that_do_not_read_are_dropped_the_slow_one_told_why(ros_domain_id, falkordb_uri, graph_name,
                                                                   small_store, static_dir):
    """The robot's progress floods every page (published as fast as this test can); a socket nobody reads and a
    page that stops reading fall behind past the outbox's bound and are dropped, while a page that reads keeps
    getting every kind of message. The slow page, reading again, gets the close frame with the reason."""
    ns = namespace()
    with ros_session(ros_domain_id), \
            console_server(ns, falkordb_uri, graph_name, static_dir=static_dir, send_buffer=8192) as served, \
            served.socket() as reading, served.socket(receive_buffer=4096) as slow:
        node = rclpy.create_node("progress_probe")
        publisher = node.create_publisher(DispatchProgress, f"{ns}/dispatch_progress", reliable(100))
        silent = silent_socket(served)
        robots = [0]
        stop_draining = threading.Event()

        def drain() -> None:
            while not stop_draining.is_set():
                with contextlib.suppress(TimeoutError):
                    robots[0] += json.loads(reading.recv(timeout=0.2))["type"] == "robot"

        drainer = threading.Thread(target=drain, name="reading-page", daemon=True)
        drainer.start()
        try:
            wait_for_subscribers(publisher)
            assert health(served)["tabs"] == 3
            deadline = time.monotonic() + 60.0
            while health(served)["tabs"] > 1:
                assert time.monotonic() < deadline, f"no page dropped within 60 s: {health(served)}"
                for index in range(2000):
                    publisher.publish(DispatchProgress(state="walking", robot_position=Point(x=float(index), y=1.0)))
            before = robots[0]
            publisher.publish(DispatchProgress(state="walking", robot_position=Point(x=-1.0, y=-1.0)))
            wait_until(lambda: robots[0] > before, 10.0, "the reading page to get the robot's next position")
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    slow.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013, closed.value
            assert "this page fell behind" in closed.value.rcvd.reason, closed.value.rcvd
        finally:
            stop_draining.set()
            drainer.join(5.0)
            silent.close()
            node.destroy_node()


def health(served: Any) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(fetch(served.base + "/healthz")[1])
    return answer


def test_a_console_off_loopback_refuses_to_start_without_its_secret(capsys, monkeypatch):
    monkeypatch.delenv("HERACLES_CONSOLE_SECRET", raising=False)
    with socket.socket() as taken:  # were it to try, binding would fail at once instead of serving
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        code, out, err = heracles(capsys, "console", "--host", "0.0.0.0", "--port", str(taken.getsockname()[1]))
    assert code == 1 and "set HERACLES_CONSOLE_SECRET" in err and out == "", err


def test_a_database_that_does_not_answer_is_reported_and_the_console_stays_up(ros_domain_id, static_dir):
    with console_server(namespace(), "falkordb://127.0.0.1:1", "nothing", static_dir=static_dir) as served, \
            served.socket() as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "hello"
        status = receive_until(ws, lambda m: m["type"] == "status" and not m["database"]["ok"], 30.0)
        assert status["database"]["error"], status
        ws.send(json.dumps({"op": "object", "symbol": "O1"}))
        error = receive_until(ws, lambda m: m["type"] in ("error", "object"), 30.0)
        assert error["type"] == "error" and error["about"] == "object", error
        assert fetch(served.base + "/healthz")[0] == 200
