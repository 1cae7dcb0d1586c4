"""A running goal's wait is bounded: it ends when its work does, when a check says so, or at the deadline."""
from __future__ import annotations

import threading
import time

from heracles_ros.ros.single_goal import wait_until_done


def test_the_wait_ends_with_the_work() -> None:
    done = threading.Event()
    threading.Timer(0.1, done.set).start()
    assert wait_until_done(done, poll_s=0.01)


def test_a_passed_deadline_ends_the_wait_though_the_work_never_ends() -> None:
    """The dispatcher's shutdown deadline: the executor thread a goal holds is given back."""
    never = threading.Event()
    deadline = time.monotonic() + 0.2
    started = time.monotonic()
    assert not wait_until_done(never, poll_s=0.01, deadline=lambda: deadline)
    assert 0.2 <= time.monotonic() - started < 2.0


def test_the_check_runs_between_polls_and_can_end_the_wait() -> None:
    never = threading.Event()
    looks: list[float] = []

    def check() -> bool:
        looks.append(time.monotonic())
        return len(looks) == 5

    assert not wait_until_done(never, poll_s=0.01, check=check)
    assert len(looks) == 5

