"""Times as an operator writes them for the history's questions: ``30s``, ``10m``, ``2h``, ``1d`` ago, an ISO
time, or seconds since the epoch (``heracles changes --since``, ``where --at``, ``scene --at``, ``load --time``).

A duration is counted back from this machine's clock. An ISO time without a zone is UTC, as every time the
history prints, never the machine's zone.
"""
from __future__ import annotations

import math
import re
import time
from datetime import datetime, timezone

from heracles_ros.errors import ConfigError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")


def parse_time(text: str, *, what: str, now: float | None = None) -> float:
    """``text`` -> epoch seconds; ``what`` names the option in the error (``--since``)."""
    now = time.time() if now is None else now
    ago = _AGO.match(text)
    if ago:
        return now - float(ago.group(1)) * _UNITS[ago.group(2)]
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds):
            raise ConfigError(f"{what} {text!r}: epoch seconds must be a finite number")
        return seconds
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{what} {text!r} is neither a duration (30s, 10m, 2h, 1d), an ISO time nor epoch seconds"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()
