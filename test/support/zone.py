"""Run code under a local time zone other than UTC (this machine and CI run in UTC)."""
from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

#: India, UTC+05:30, no daylight saving, in POSIX form (no tz database needed). POSIX counts west positive.
KOLKATA = "IST-05:30"


@contextlib.contextmanager
def local_zone(name: str = KOLKATA) -> Iterator[None]:
    """Set TZ for this process (``time.tzset``), restored afterwards."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        assert time.localtime(0).tm_gmtoff != 0, f"TZ={name} did not take effect"
        yield
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()
