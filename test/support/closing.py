"""Closing a mirror node while its worker is stuck in a snapshot's write gives up within the node's bound."""
from __future__ import annotations

import faulthandler
import sys
import time
from collections.abc import Callable
from typing import Any

from heracles_ros.ros.runner import CLOSE_SHARE, SHUTDOWN_TIMEOUT
from support.ros import wait_until

#: What closing takes under the default shutdown_timeout_s (3.5 s): a bound below it tells the two apart.
DEFAULT_CLOSE_S = CLOSE_SHARE * float(SHUTDOWN_TIMEOUT.default)


def assert_close_gives_up(node: Any, send_snapshot: Callable[[], None]) -> None:
    """``node`` (built with a short shutdown_timeout_s) closes with its worker still blocked in a write.

    The mirror's database lock is held here, so the snapshot sent stays inside its apply: closing must
    give up on it before the default bound would. The margin allows a loaded machine's pauses; past
    1 s every thread's stack goes to stderr, so a slow close shows where it waited.
    """
    loop = node.loop
    assert loop is not None
    assert loop.database_lock.acquire(timeout=10.0)  # the worker blocks as in a long reconcile
    try:
        received = loop.state.snapshots_received
        send_snapshot()
        wait_until(lambda: loop.state.snapshots_received > received, 10.0, "the blocked snapshot handed over")
        time.sleep(0.3)  # the worker is inside its apply, waiting for the lock
        faulthandler.dump_traceback_later(1.0, file=sys.stderr)
        started = time.monotonic()
        try:
            node.close()  # what the runner calls on SIGINT/SIGTERM
        finally:
            took = time.monotonic() - started
            faulthandler.cancel_dump_traceback_later()
        assert took < DEFAULT_CLOSE_S - 0.3, f"closing took {took:.2f} s, as long as the default bound"
    finally:
        loop.database_lock.release()
