"""Whether a server process is there: a zombie is gone (``db stop`` must not wait for one), a live one is not; how
far a loading one has read."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from heracles_ros.embedded.data_files import AOF_DIR
from heracles_ros.embedded.process import loading_progress, pid_alive

#: A child that starts a grandchild, which exits at once, and never reaps it: a zombie that is not ours.
_UNREAPED = "import subprocess, sys, time\np = subprocess.Popen(['true'])\nprint(p.pid, flush=True)\ntime.sleep(60)"


def test_a_process_that_runs_is_alive_and_one_that_exited_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
    deadline = time.monotonic() + 10
    while pid_alive(child.pid) and time.monotonic() < deadline:  # our zombie: reaped by the check itself
        time.sleep(0.02)
    assert not pid_alive(child.pid)
    assert not pid_alive(-1) and not pid_alive(0)


def test_another_process_s_zombie_counts_as_gone() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _UNREAPED], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        zombie = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while pid_alive(zombie) and time.monotonic() < deadline:  # until the grandchild has exited
            time.sleep(0.02)
        assert not pid_alive(zombie)
        assert pid_alive(parent.pid)
    finally:
        parent.kill()
        parent.wait(timeout=10)


def test_loading_progress_says_how_far_the_server_has_read_its_file(tmp_path: Path) -> None:
    """What a slow start reports: the share of the append-only file the loading process has read so far
    (read from the process's open files, as for the server)."""
    aof = tmp_path / AOF_DIR
    aof.mkdir()
    (aof / "appendonly.aof.1.incr.aof").write_bytes(b"x" * 4_000_000)
    reader = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nf = open(sys.argv[1], 'rb')\nf.read(1_000_000)\n"
         "print('read', flush=True)\ntime.sleep(60)", str(aof / "appendonly.aof.1.incr.aof")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "read\n"
        progress = loading_progress(reader.pid)
        assert progress == "25 % of appendonly.aof.1.incr.aof (4.0 MB) read"
    finally:
        reader.kill()
        reader.wait(timeout=10)
    assert loading_progress(reader.pid) == "progress unknown"  # gone: no file to name
