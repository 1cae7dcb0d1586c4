"""Whether a server process is there: a zombie is gone (``db stop`` must not wait for one), a live one is not."""
from __future__ import annotations

import subprocess
import sys
import time

from heracles_ros.embedded.process import pid_alive

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
