"""The latched stop, kept on disk where a restarted dispatcher finds it.

A robot an operator stopped stays stopped until someone resumes it, and a crash
or restart of its dispatcher is not someone resuming it. The stop is kept in a
small JSON file on the dispatcher's own disk, written when the stop latches and
removed at resume: no database, so a stop never waits on one, and a database
that is down when the dispatcher comes back cannot lose it. A record that cannot
be read counts as a stop (the safe reading).

One file per robot: its name is built from the dispatcher's namespace, the
robot's symbol and the database holding the robot's record, under
``$XDG_STATE_HOME/heracles_ros/stops`` (``~/.local/state`` by default).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class LatchedStop:
    """The latched stop as StopState publishes it."""

    stopped: bool = False
    hard: bool = False
    reason: str = ""
    operator: str = ""


def default_path(namespace: str, robot_symbol: str, database: str) -> Path:
    """Where the stop of the robot ``robot_symbol`` recorded in ``database`` (its description) is kept."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    words = re.sub(r"[^A-Za-z0-9_]+", "_", f"{namespace.strip('/')}-{robot_symbol}").strip("_") or "robot"
    digest = hashlib.sha256(database.encode()).hexdigest()[:12]
    return Path(state) / "heracles_ros" / "stops" / f"{words}-{digest}.json"


class StopRecord:
    """Reads, keeps and clears one robot's latched stop; OSError when the disk refuses."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> LatchedStop:
        """The kept stop; not stopped when there is none; stopped, saying why, when it cannot be read."""
        try:
            data = json.loads(self.path.read_text())
            return LatchedStop(stopped=True, hard=bool(data["hard"]), reason=str(data["reason"]))
        except (FileNotFoundError, NotADirectoryError):  # no record, or none can be where it would be
            return LatchedStop()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return LatchedStop(stopped=True, reason=f"the kept stop record {self.path} cannot be read ({exc})")

    def keep(self, stop: LatchedStop) -> None:
        """Write ``stop`` so that it survives a crash: a whole new file, synced, then renamed over the old."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        with open(partial, "w") as out:
            json.dump(asdict(stop), out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, self.path)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
