"""What the server's log says about its run: whether it has loaded, what a load dropped, why a start failed.

A loading server must not be sent a command (see :mod:`heracles_ros.embedded.server`), so readiness is read
from the log, from where this run's lines start, never asked of the server.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from heracles_ros.errors import DatabaseUnavailable, DataDirError

_READY_LINE = "Ready to accept connections"
#: ``pid:role dd Mon yyyy hh:mm:ss.mmm LEVEL message``; LEVEL '#' is a warning.
_LOG_LINE = re.compile(r"^\d+:\w \d+ \w+ \d+ [\d:.]+ (?P<level>[.*#-]) (?P<text>.*)$")
#: Log warnings of a start that loaded a cut append-only file (``aof-load-truncated``).
_DROPPED = re.compile(r"short read|Truncating the AOF|loaded anyway", re.IGNORECASE)
#: Words of a warning that says the files could not be loaded.
_UNLOADABLE = ("bad file format", "short read", "unexpected eof", "manifest", "corrupt", "rdb", "aof",
               "can't handle", "loading")


def log_lines(log_path: Path, offset: int) -> list[str]:
    """The log written since ``offset`` (the whole log if it was cut shorter since)."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(offset if handle.tell() >= offset else 0)
            return handle.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def has_loaded(lines: list[str]) -> bool:
    return any(_READY_LINE in line for line in lines)


def dropped_at_load(lines: list[str]) -> list[str]:
    """What a start dropped from a cut append-only file (its warnings), or []."""
    return [m["text"].strip("! ") for line in lines
            if (m := _LOG_LINE.match(line)) and m["level"] == "#" and _DROPPED.search(m["text"])]


def start_failure(data_dir: Path, log_path: Path, lines: list[str]) -> Exception:
    """Why the server exited at start, from its log: a clear error naming the directory."""
    warnings = [m["text"] for line in lines if (m := _LOG_LINE.match(line))
                and m["level"] == "#" and "overcommit" not in m["text"]]
    detail = "; ".join(warnings[-3:]) or "no reason in its log"
    text = " ".join(warnings).lower()
    where = f"see {log_path}"
    if "no space left" in text:
        return DataDirError(f"the disk holding {data_dir} is full: {detail}; the database was not started "
                            f"and nothing was deleted. Free some space and retry ({where})", unreadable=False)
    if any(word in text for word in _UNLOADABLE):
        return DataDirError(
            f"the database files in {data_dir} are corrupt or truncated: {detail}. The server was not "
            f"started and nothing was deleted; 'heracles db reset' sets the files aside and starts empty ({where})"
        )
    return DatabaseUnavailable(f"embedded FalkorDB exited at start: {detail} ({where})")
