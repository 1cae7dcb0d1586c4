"""A node program run as the robot runs it (``python -m heracles_ros.nodes.NAME``), in a process of its own.

Tests that need the entry point itself (Ctrl-C, a second instance, a crash) start it here, on their ROS
domain, importing the package from this checkout, and stop it the way an operator does: SIGINT, then a
kill if it has not ended within the grace time.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Seconds a node has after SIGINT before it is killed (its own shutdown_timeout_s is shorter).
STOP_GRACE_S = 15.0


def start_python(domain: int, *argv: str) -> subprocess.Popen[str]:
    """``python argv`` on ``domain``, importing the package from this checkout; stdout and stderr together, as text."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def start_node(name: str, domain: int, *ros_args: str) -> subprocess.Popen[str]:
    """The node ``name`` with ``--ros-args ros_args``."""
    return start_python(domain, "-m", f"heracles_ros.nodes.{name}", "--ros-args", *ros_args)


def params(*values: str) -> list[str]:
    """``-p`` before each ``name:=value``."""
    return [arg for value in values for arg in ("-p", value)]


def stop_node(process: subprocess.Popen[str]) -> str:
    """SIGINT, a kill after STOP_GRACE_S; the output it left (empty when it had already been read)."""
    if process.poll() is not None:
        return ""
    process.send_signal(signal.SIGINT)
    try:
        return process.communicate(timeout=STOP_GRACE_S)[0] or ""
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()[0] or ""


@contextlib.contextmanager
def node_program(name: str, domain: int, *ros_args: str) -> Iterator[subprocess.Popen[str]]:
    """The node running for the block, stopped after it."""
    process = start_node(name, domain, *ros_args)
    try:
        yield process
    finally:
        stop_node(process)
