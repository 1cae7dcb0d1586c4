"""The ``heracles`` front door itself: what every command shares."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from heracles_ros.cli import EXIT_CLOSED_PIPE
from heracles_ros.graphdb.store import GraphStore

REPO = Path(__file__).resolve().parents[2]


def test_a_closed_output_pipe_ends_the_command_quietly(small_store: GraphStore, db_uri: str, graph_name: str) -> None:
    """`heracles summary | head -1`: the reader leaves early; the command ends without a traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write fails with EPIPE, not by luck
    try:
        done = subprocess.run(
            [sys.executable, "-m", "heracles_ros.cli", "summary", "--db", db_uri, "--graph", graph_name],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    finally:
        os.close(write_end)
    assert done.returncode == EXIT_CLOSED_PIPE, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
