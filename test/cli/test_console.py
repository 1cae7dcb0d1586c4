"""``heracles console`` as the launch files start it: its own process, the address it prints, SIGTERM ends it."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support.cli import heracles
from support.ports import free_port
from websockets.sync.client import connect

pytestmark = pytest.mark.backends("falkordb")

ROOT = Path(__file__).resolve().parents[2]
#: Seconds from SIGTERM to the process gone: uvicorn's graceful 2 s, the ROS clients' close.
END_S = 10.0


def test_the_console_executable_prints_its_address_takes_the_launch_namespace_and_ends_on_sigterm(
        ros_domain_id, falkordb_uri, graph_name, small_store):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HERACLES_CONSOLE_SECRET": "pass word", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; from heracles_ros.cli.console import main; sys.exit(main())",
         "--port", str(port), "--db", falkordb_uri, "--graph", graph_name, "--ros-args", "-r", "__ns:=/from_launch"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the first line, printed before it binds
        assert line.strip() == f"heracles console: open http://127.0.0.1:{port}/?token=pass%20word", line
        deadline = time.monotonic() + 60.0
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz?token=pass%20word", timeout=2) as r:
                    assert json.loads(r.read())["ok"] is True
                    break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
                time.sleep(0.2)
        with connect(f"ws://127.0.0.1:{port}/ws?token=pass%20word", origin=f"http://127.0.0.1:{port}",
                     open_timeout=10) as ws:
            hello = json.loads(ws.recv(timeout=10))
            assert (hello["namespace"], hello["secured"]) == ("/from_launch", True)
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            assert process.wait(END_S) == 0
        assert time.monotonic() - started < END_S
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_a_port_in_use_ends_the_console_at_once_saying_so(ros_domain_id, falkordb_uri, graph_name, small_store):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "heracles_ros.cli", "console", "--port", str(port), "--db", falkordb_uri,
             "--graph", graph_name, "--namespace", "/port_taken"],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "address already in use" in done.stderr, done.stderr
    assert f"error: the console did not start on 127.0.0.1:{port}" in done.stderr
    assert "heracles console: open" not in done.stdout  # nothing announced that does not answer


@pytest.mark.parametrize("value", ["-1", "nan", "3601"])
def test_a_client_lost_time_out_of_bounds_is_refused_before_starting(capsys, value):
    code, out, err = heracles(capsys, "console", "--port", str(free_port()), "--client-lost-s", value)
    assert code == 1 and f"--client-lost-s must be 0..3600 seconds, got {float(value)}" in err and out == "", err
