"""What a database directory holds on disk, read without its server: the layout, the format stamp, the size report.

Everything here works with the server down or loading (``heracles db status`` reports a stopped database's
files), so it touches only files, never a connection.
"""
from __future__ import annotations

import contextlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

from heracles_ros.errors import DataDirError

#: The persistence files: an append-only file whose base is a snapshot (see :mod:`heracles_ros.embedded.server`).
AOF_DIR = "appendonlydir"
#: Sub-directory where the primary's read replica keeps its state and log (no data: it keeps no files).
REPLICA_DIR = "read-replica"
#: Marks the layout of the data directory; a different ``format`` is refused, not loaded.
FORMAT_FILE = "heracles-db.json"
DATA_FORMAT = 1
#: A start is refused below this much free space: a full disk fails every write later.
MIN_FREE_BYTES = 64 * 2**20
#: What ``heracles db reset`` moves aside when the files do not load (nothing is deleted).
_PERSISTED = (AOF_DIR, "dump.rdb", FORMAT_FILE)


def check_format(data_dir: Path) -> None:
    """Refuse a data directory some other layout wrote (nothing is changed in it)."""
    path = data_dir / FORMAT_FILE
    if not path.exists():
        return  # new, or written before the marker existed (same layout): stamped after the start
    try:
        found = json.loads(path.read_text()).get("format")
    except (OSError, ValueError, AttributeError) as exc:
        raise DataDirError(f"{path} is unreadable ({exc}); the database was not started") from exc
    if found != DATA_FORMAT:
        raise DataDirError(
            f"the database directory {data_dir} holds data format {found!r}, this version reads "
            f"format {DATA_FORMAT}; the database was not started and nothing was changed. Use the "
            "heracles_ros version that wrote it, or 'heracles db reset' to set the files aside and start empty"
        )


def stamp_format(data_dir: Path) -> None:
    """Say which layout the files are in, once a start has loaded them."""
    (data_dir / FORMAT_FILE).write_text(json.dumps({"format": DATA_FORMAT, "written_by": "heracles_ros"}))


def check_disk(data_dir: Path) -> None:
    free = shutil.disk_usage(data_dir).free
    if free < MIN_FREE_BYTES:
        raise DataDirError(
            f"the disk holding {data_dir} is full ({free / 2**20:.1f} MiB free, the database needs "
            f"{MIN_FREE_BYTES // 2**20} MiB); the database was not started. Free some space and retry",
            unreadable=False,
        )


def aof_tail_bytes(data_dir: Path) -> int:
    """Bytes of writes the next start would replay on top of the snapshot."""
    return sum(p.stat().st_size for p in (data_dir / AOF_DIR).glob("*.incr.aof*"))


def files_report(data_dir: Path) -> dict[str, Any]:
    """Sizes and times of what the directory holds (``heracles db status``)."""
    aof = data_dir / AOF_DIR
    base = list(aof.glob("*.base.*"))
    persisted = [p for p in aof.iterdir() if p.is_file()] if aof.is_dir() else []
    fmt = None
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fmt = json.loads((data_dir / FORMAT_FILE).read_text()).get("format")
    return {
        "disk_bytes": sum(p.stat().st_size for p in data_dir.rglob("*") if p.is_file()),
        "snapshot_bytes": sum(p.stat().st_size for p in base),
        "tail_bytes": aof_tail_bytes(data_dir),
        "last_snapshot": _iso(max((p.stat().st_mtime for p in base), default=0.0)),
        "last_write": _iso(max((p.stat().st_mtime for p in persisted), default=0.0)),
        "format": fmt,
    }


def set_aside(data_dir: Path) -> Path | None:
    """Move the persistence files into ``set-aside-<UTC time>/``; None if there were none. The server must be
    down (its caller checks)."""
    present = [data_dir / name for name in _PERSISTED if (data_dir / name).exists()]
    if not present:
        return None
    target = data_dir / time.strftime("set-aside-%Y%m%dT%H%M%SZ", time.gmtime())
    target.mkdir()
    for path in present:
        path.rename(target / path.name)
    return target


def _iso(seconds: float) -> str | None:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds)) if seconds else None
